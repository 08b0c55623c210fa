package substrate

import (
	"time"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
)

// Sibling returns a World with the same ranks as w and a communication context of its own
// that w's determines: messages on one never match receives on the other. Unlike Dup's,
// the context does not depend on the order of calls, so ranks may ask for it at different
// points, from concurrent goroutines. Every call returns a World on the same context. A
// sibling has no sibling (ErrInvalid); Dup it instead. Package collectives makes its
// calls on a World's sibling.
//
// Receives on a sibling fail, as Barrier's do, once a rank of w has failed (under
// GORMA_FT; without it, any peer), not only when their source has: a collective call
// cannot complete without every rank.
func Sibling(w *runtime.World) (*runtime.World, error) {
	s, err := of(w).Sibling()
	if err != nil {
		return nil, err
	}
	return s.(*runtime.World), nil
}

// FreedErr returns the ErrInvalid error of a call on w after w (or, for a sibling, its
// World) was freed, else nil: one atomic load. A library whose calls do not all go
// through the runtime's messages checks it first, so that every call on a freed World
// fails alike.
func FreedErr(w *runtime.World) error { return of(w).FreedErr() }

// Broken returns the error a collective call on w fails with now, or nil: w revoked, or
// a rank of w failed (under GORMA_FT; without it, any peer). A layer that waits outside
// the runtime's messages (on shared memory) checks it while it waits, so that no rank
// waits for a live rank that left the call with an error.
func Broken(w *runtime.World) error { return of(w).Broken() }

// OnFree registers f to run when w is freed, before Free returns: f frees the Worlds a
// library derived from w (package window's Dup of it). Every rank registers the same
// functions in the same order. f runs with no lock held and may call Free on other
// Worlds, not on w. It fails after Finalize, and with ErrInvalid on a freed World. On
// Init's World (never freed) it does nothing.
func OnFree(w *runtime.World, f func()) error { return of(w).OnFree(f) }

// MarkInternal marks w as a layer's own World (the window package's Dup, say): hang
// reports leave out the calls on it while a call on another World is under way, and the
// profile does not count its point-to-point messages and calls: the layer counts its own.
func MarkInternal(w *runtime.World) { of(w).MarkInternal() }

// ServePeers makes this rank's transports serve peers' requests while the caller waits
// outside the runtime (on a word that a peer changes by a remote atomic, say). Over tcp, a
// completion wait reads the connection itself and hands the reading back to the
// connection's goroutine only lazily; ServePeers hands it back now. Call it before such
// a wait. It costs a system call per connection to hand back, and a lock per tcp device.
func ServePeers(w *runtime.World) { of(w).ServePeers() }

// PollPeers serves, on the calling goroutine and without waiting, the requests that peers
// have already sent over connections that nobody reads at the moment (see ServePeers),
// and reports whether it served any. A goroutine that spins outside the runtime on a
// condition a peer's request sets calls it in its spin, and ServePeers before it sleeps.
// It costs a lock per tcp device and a system call per idle connection.
func PollPeers(w *runtime.World) bool { return of(w).PollPeers() }

// ReachOf returns how this rank reaches rank r of w, or 0 if r is out of range.
func ReachOf(w *runtime.World, r int) Reach { return of(w).ReachOf(r) }

// ReachBetween returns how rank a of w reaches rank b: what ReachOf(b) returns at rank a,
// or 0 if either is out of range. Every rank computes the same answer, so that a layer can
// agree on a layout without messages.
func ReachBetween(w *runtime.World, a, b int) Reach { return of(w).ReachBetween(a, b) }

// ReadsUser reports whether this rank's Remote.Read reaches rank r's user memory
// (RegisterRegion). On shm such a read is a cross-memory attach (process_vm_readv). The
// kernel may refuse it: Yama's ptrace_scope, or a seccomp filter. The runtime tries one
// read of r's memory when it connects to r, and ReadsUser says false where that failed.
// It connects to r on first contact, as Attach does, and fails where that fails. A
// layer asks it before it publishes a RegisterRegion buffer for peers to read: a read
// the kernel refuses fails the connection to r (package doc).
func ReadsUser(w *runtime.World, r int) (bool, error) { return subcore.ReadsUser(w, r) }

// TransportBetween returns the provider rank a of w uses to reach rank b: what
// w.Transport(b) returns at rank a ("shm" or "tcp", "self" when a == b, "" out of range).
// Every rank computes the same answer, from the cards exchanged at Init or the node map.
func TransportBetween(w *runtime.World, a, b int) string { return of(w).TransportBetween(a, b) }

// Connections returns how many ranks of the job this rank holds a connection to. A
// connection is made on first contact (a send, a receive naming the rank, an Attach).
func Connections(w *runtime.World) int { return of(w).Connections() }

// Observe returns this rank's observer (nil when GORMA_PROFILE, GORMA_SUMMARY and
// GORMA_TRACE are all off) and the job ranks of w's ranks (nil for Init's World), which
// the observer's peer arguments take. A layer calls it once per call or keeps it: it
// never changes.
func Observe(w *runtime.World) (*Obs, []int) { return of(w).Observe() }

// WaitRule returns the rank's waiting rule, which a layer that waits on shared memory
// follows (runtime/design.md, "The waiting rule"). Every World of a rank returns the same
// rule. A wait:
//   - polls for Budget, giving the processor away at each miss when Oversub, and
//     yielding to the Go scheduler only when Yields;
//   - reads WaitClock every few microseconds of polls and stops when Spun says so;
//   - then sleeps, and tells the rule how it went (Done).
func WaitRule(w *runtime.World) *Waiting { return of(w).Waiting() }

// SharesProcess reports whether other ranks' Worlds are open in this process, as in an
// in-process test job (runtimetest). Such ranks share the process's Go processors: a
// rank that waits for another must give its processor to the Go scheduler too, not only
// to the kernel.
func SharesProcess() bool { return subcore.SharedProcess() }

// WaitClock returns the monotonic clock reading that Waiting.Spun takes.
func WaitClock() time.Duration { return subcore.Clock() }

// NameCalls sets the names by which this process's hang reports show its calls: name
// returns the name the program called for the runtime's call ("MPI_Recv" for "Recv"),
// or the call itself to keep it. A library that serves the runtime through another API
// (abi/mpich, MPICH's C functions) sets it once, before Init. The diagnosis still
// compares the runtime's calls, so ranks that name their calls differently (a job of Go
// and C programs) agree on them.
func NameCalls(name func(call string) string) { subcore.CallNames.Store(&name) }
