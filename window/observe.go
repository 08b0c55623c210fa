package window

import (
	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/internal/trace"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Observation of the window's calls (design.md, "Profile and timeline"). When the rank
// observes (substrate.Observe), each RMA call counts at the origin the data it sends to
// its target and the data it brings back, as Open MPI's osc monitoring does, and one call
// of its kind; each synchronization call counts one call of its kind. The timeline gets
// an RMA event per operation, an Epoch event per synchronization call, and an Epoch event
// spanning each epoch. Win.ob is nil when the rank does not observe: every hook is then
// one nil check.

// Each synchronization call's body is its unexported namesake (Fence's is fence, LockAll's
// lockEvery): the exported method runs it under observation when the rank observes. The
// bodies note where an epoch begins and ends (begins, ends, lockBegins, lockEnds).

// winObs is what a window keeps for the rank's observer. o, members and labels never
// change. The epochs' starts are changed by synchronization calls only, which never run
// concurrently with each other.
type winObs struct {
	o       *substrate.Obs
	members []int // the job ranks of the window's ranks (nil: Init's World)
	labels  [nLabels]uint16
	at      [nEpochs]int64 // when the open epoch of each kind began (0: the timeline is off)
	lockAt  []int64        // per target: when this rank's Lock epoch on it began
}

// The epochs the timeline spans, other than a Lock's (winObs.lockAt).
// job returns the job rank of the window's rank r, for the Peer of a timeline event.
func (ob *winObs) job(r int) int {
	if ob.members == nil {
		return r
	}
	return ob.members[r]
}

type epochKind int

const (
	epFence    epochKind = iota // Fence to the Fence (or Lock, LockAll, Post, Start) that ends it
	epLockAll                   // LockAll to UnlockAll
	epAccess                    // Start to Complete
	epExposure                  // Post to the Wait or Test that ends it
	nEpochs
)

// The timeline's labels of the window's calls and epochs. A call of its own kind (Put,
// Fence) takes the kind's name.
const (
	lEpochFence = iota // the epochs first, in epochKind order
	lEpochLockAll
	lEpochAccess
	lEpochExposure
	lEpochLock
	lRput
	lRget
	lRaccumulate
	lRgetAccumulate
	lLockAll
	lUnlockAll
	lFlushAll
	lTest
	nLabels
)

var labelNames = [nLabels]string{"epoch fence", "epoch lock_all", "epoch access", "epoch exposure", "epoch lock",
	"Rput", "Rget", "Raccumulate", "RgetAccumulate", "LockAll", "UnlockAll", "FlushAll", "Test"}

// newWinObs returns the observation of a window of size ranks on rw, nil when the rank
// does not observe.
func newWinObs(rw *runtime.World, size int) *winObs {
	o, members := substrate.Observe(rw)
	if o == nil {
		return nil
	}
	ob := &winObs{o: o, members: members, lockAt: make([]int64, size)}
	for i, name := range labelNames {
		ob.labels[i] = o.Label(name)
	}
	return ob
}

// begin starts observing a call of kind k.
func (ob *winObs) begin(k prof.CallKind) substrate.ObsCall { return ob.o.Begin(k) }

// rma ends c, an RMA operation on target rank that sends put bytes to it and brings get
// bytes back (-1: nothing in that direction; a Get sends an empty request, 0). An operation that was issued (err nil) counts
// its data, one message in each direction it has; a failed one counts as a call only.
// label 0 names the event by its kind.
func (ob *winObs) rma(c substrate.ObsCall, rank, put, get int, label int, err error) {
	peer := trace.NoPeer
	if err == nil {
		peer = ob.job(rank)
		if put >= 0 {
			ob.o.PutTo(ob.members, rank, put)
		}
		if get >= 0 {
			ob.o.GetFrom(ob.members, rank, get)
		}
	}
	l := uint16(0)
	if label >= 0 {
		l = ob.labels[label]
	}
	c.End(trace.RMA, max(put, 0)+max(get, 0), peer, -1, l)
}

// sync runs do, a synchronization call of kind k naming rank (-1 for none), and counts
// it. label (-1: the kind's name) names its event.
func (ob *winObs) sync(k prof.CallKind, label, rank int, do func() error) error {
	c := ob.o.Begin(k)
	err := do()
	ob.synced(c, label, rank)
	return err
}

// synced ends c, a synchronization call naming rank (-1 for none).
func (ob *winObs) synced(c substrate.ObsCall, label, rank int) {
	peer := trace.NoPeer
	if uint(rank) < uint(len(ob.lockAt)) {
		peer = ob.job(rank)
	}
	l := uint16(0)
	if label >= 0 {
		l = ob.labels[label]
	}
	c.End(trace.Epoch, 0, peer, -1, l)
}

// now reads the observer's clock when the timeline is on, else 0.
func (ob *winObs) now() int64 {
	if ob.o.Rec == nil {
		return 0
	}
	return ob.o.Stamp()
}

// begins notes that an epoch of kind k begins now. On a nil winObs it does nothing.
func (ob *winObs) begins(k epochKind) {
	if ob != nil {
		ob.at[k] = ob.now()
	}
}

// ends records the epoch of kind k, which ends now. On a nil winObs it does nothing.
func (ob *winObs) ends(k epochKind) {
	if ob != nil {
		ob.o.Event(trace.Epoch, ob.at[k], 0, trace.NoPeer, ob.labels[lEpochFence+int(k)])
	}
}

// lockBegins notes that this rank's Lock epoch on rank begins now.
func (ob *winObs) lockBegins(rank int) {
	if ob != nil {
		ob.lockAt[rank] = ob.now()
	}
}

// lockEnds records this rank's Lock epoch on rank, which ends now.
func (ob *winObs) lockEnds(rank int) {
	if ob != nil {
		ob.o.Event(trace.Epoch, ob.lockAt[rank], 0, ob.job(rank), ob.labels[lEpochLock])
	}
}
