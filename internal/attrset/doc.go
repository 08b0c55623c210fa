// Package attrset holds the name and attributes that package runtime keeps on a World
// and package window on a Win (MPI_Comm_set_attr, MPI_Win_set_attr and their names):
// the untyped part that both share. A Set maps keys to values in the order the keys
// were first set. A Key is the freed state of one kind of attribute, which each package
// embeds in its own key type beside the copy and delete functions it runs.
//
// A Set never calls a function of its caller while it holds its lock, so the typed
// wrappers run copy and delete functions on what Put, Take, TakeAll and CopyTo return,
// with no lock held. The zero Set is empty and ready to use.
//
// Concurrency: every method of Set and Key is safe for concurrent use. A Set's
// methods are each atomic; CopyTo reads its source and writes its destination in two
// separate steps.
package attrset
