// Package matching holds the two queues of MPI message matching and the rule that pairs
// them, with no I/O and no locking.
//
// A receive asks for an Envelope (context, source or AnySource, tag or AnyTag); a message
// carries one (context, source, tag). Receives that found nothing wait in a Posted queue,
// in the order they were posted; messages that arrived before a receive that takes them
// wait in an Unexpected queue, in the order they arrived. An arriving message goes to the
// first posted receive that takes it (Posted.Take), a new receive takes the first waiting
// message it matches (Unexpected.Take); whatever finds no partner is pushed. When every
// sender's messages arrive in the order they were sent, two messages of one sender that
// both match a receive are received in that order: MPI's non-overtaking rule.
//
// The queues are intrusive: an item embeds a Link per queue it can wait in, so pushing
// and taking allocate nothing. The queues own no memory of their items and copy each
// item's Envelope at Push.
//
// Concurrency: a Queue has a single owner. Nothing here locks; the owner serializes every
// call (package runtime holds its engine's mu).
package matching
