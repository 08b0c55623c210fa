// Package hostgroup is the one-host engine of package collectives: a group of ranks
// that map each other's arena scratch and move data through it, step by step.
//
// It owns the group (Group), its setup (Prepare, Adopt), the step protocol (Step,
// StepLast, SetMeta, CleanFail, Fail), the flags, scratch slots and big buffers
// (SmallSlot, Big, VSlot, VWord, ScratchIn, ScratchOut), the one loop that moves long
// vectors in chunks (Chunks), waiting, the planning of teams over cache domains
// (PlanTeams), and the size classes of every one-host algorithm (tune.go). The algorithms
// stay in collectives. A call reaches the group through Call, which collectives' call
// satisfies; this package imports nothing of collectives.
//
// A member calls Prepare at the start of each call on the group, then takes steps:
// between two steps it writes only its own scratch, and it reads a member's scratch of
// step v only after that member has published v. design.md states the protocol's
// invariants.
//
// Concurrency: a Group is one rank's view, used by one call at a time (the caller's
// state is busy meanwhile). Its shared words are read and written only through
// sync/atomic or release stores; each member writes only its own region.
package hostgroup
