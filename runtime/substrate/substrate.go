package substrate

import (
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

type (
	// Region is registered memory of this rank. Its methods are safe for concurrent use.
	Region = subcore.Region
	// Remote is a peer's region as seen from this rank. Its methods are safe for
	// concurrent use; requests that goroutines post are ordered as they took the
	// engine's lock.
	Remote = subcore.Remote
	// Counter counts one-sided work requests until they complete. The local buffer of a
	// request belongs to the runtime until the Wait that follows its posting returned.
	Counter = subcore.Counter
	// A Track names the calls of a layer above the runtime in this rank's hang reports.
	// One goroutine at a time runs a Track's calls; reports read it from another.
	Track = subcore.Track
	// CallSig describes a collective call: what every rank of the World must agree on.
	CallSig = runtime.CallSig
	// Reach says what the transport from one rank to another offers. Layers above the
	// runtime choose by it, never by the provider's name (World.Transport).
	Reach = subcore.Reach
	// Obs is what a rank observes of its calls: the profile's counters and the
	// timeline's recorder. A nil *Obs observes nothing.
	Obs = subcore.Obs
	// ObsCall is one call under observation, from Obs.Begin to End.
	ObsCall = subcore.ObsCall
	// Waiting is the rank's waiting rule: how long a wait polls before it sleeps, and
	// how it shares the processor meanwhile. Its methods are safe from any goroutine.
	Waiting = subcore.Waiting
)

// SpinForever is a Waiting budget that never sleeps (GORMA_PROGRESS=spin).
const SpinForever = subcore.SpinForever

// Reach flags. A rank reaches itself with ReachSelf|ReachMap|ReachZeroCopy.
const (
	// ReachSelf: the peer is this rank.
	ReachSelf = subcore.ReachSelf
	// ReachMap: the peer's arena regions are mapped here (Remote.Mapped). Ranks that
	// reach each other so share memory (SplitShared, window.AllocateShared).
	ReachMap = subcore.ReachMap
	// ReachZeroCopy: a read or write of the peer's regions is one copy by this rank; the
	// peer's processor does nothing.
	ReachZeroCopy = subcore.ReachZeroCopy
)

func of(w *runtime.World) subcore.World { return subcore.Of(w) }

// AllocRegion returns n bytes of pre-registered arena memory (zeroed on first use; it may
// hold old data on reuse), accessible to every peer. In a world of one it is plain memory.
func AllocRegion(w *runtime.World, n int) (*Region, error) { return of(w).AllocRegion(n) }

// AllocHostRegion is AllocRegion for memory that only the ranks on this host use (they
// map it). It comes from the shared-memory device's arena and is registered with that
// device alone, so a peer over tcp cannot attach it. A rank's tcp device then holds no
// memory that peers may write, and golaunch's idle-role watcher stays slow for the rank
// (docs/launcher.md). It fails with runtime.ErrTransport on a rank without a
// shared-memory device; in a world of one it is plain memory.
func AllocHostRegion(w *runtime.World, n int) (*Region, error) { return of(w).AllocHostRegion(n) }

// RegisterRegion registers buf (ordinary memory, kept alive until Free) with every device.
// Peers reach it through work requests only (never Mapped); on shm through cross-memory
// attach, which the kernel may forbid (Yama ptrace scope): the error then says so.
func RegisterRegion(w *runtime.World, buf []byte) (*Region, error) {
	return of(w).RegisterRegion(buf)
}

// Attach opens rank's region described by desc (from its AppendDesc, delivered by the
// caller). On a shm peer an arena region is mapped as well (Mapped), which validates the
// key at once: a stale or forged description fails with an error wrapping verbs.ErrAccess.
func Attach(w *runtime.World, rank int, desc []byte) (*Remote, error) {
	return of(w).Attach(rank, desc)
}

// CPUsOf returns the processors rank r of w may run on (its affinity), ascending, or
// nil when r is out of range or its card cannot be read. It is what r's card said at
// Init, so every rank computes the same answer.
func CPUsOf(w *runtime.World, r int) []int { return of(w).CPUsOf(r) }

// NewCounter returns a counter for w's one-sided requests. Close releases it.
func NewCounter(w *runtime.World) *Counter { return of(w).NewCounter() }

// NewTrack returns a Track for calls on w, reported until Close. An intercommunicator's
// calls are reported on its local group's World.
func NewTrack(w *runtime.World) *Track { return of(w).NewTrack() }

// CallCheck reports whether GORMA_CHECK=1 is in force, under which Track.Check compares
// every collective call across the ranks.
func CallCheck() bool { return arena.Checking() }

// MemCheck reports whether GORMA_CHECK=1 (runtime.EnvCheck) is in force in this process.
func MemCheck() bool { return arena.Checking() }
