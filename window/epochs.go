package window

import (
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// epochs is the part that opens and closes access and exposure epochs: Fence (fence.go),
// Lock, Unlock and Flush (lock.go), and PSCW (pscw.go). Its state changes only in
// synchronization calls, which never run concurrently with each other or with the RMA
// calls they order. It completes operations through the data path (dataPath.flush).
type epochs[T runtime.Elem] struct {
	*house[T]
	dp *dataPath[T]

	// fenceSig is Fence's signature (Track.BeginSig, Check), naming the window "winK",
	// K the number of the World's collective call that made it.
	fenceSig *substrate.CallSig
	fenceSeq uint64 // Fences entered (the fence words' value)
	fenceOn  bool   // a Fence opened an epoch that no Fence with NoSucceed closed
	locks    int    // targets locked by this rank (passive epoch)
	lockAll  bool
	pscw     pscwState
	flags    bool // every rank maps every other rank's metadata: fences by flags
}

// pscwState is the state of general active-target synchronization. Changed by the PSCW
// calls only (synchronization calls: never concurrent with each other or with RMA calls).
type pscwState struct {
	accessOn   bool  // Start opened an access epoch that Complete has not closed
	exposureOn bool  // Post opened an exposure epoch that Wait or Test has not closed
	access     []int // the group of the access epoch (reused storage)
	exposure   []int // the group of the exposure epoch (reused storage)

	started []uint64 // per target: Posts consumed by Start
	waited  []uint64 // per origin: Completes consumed by Wait and Test
	seen    []bool   // scratch for group validation
}

// active reports whether an access or exposure epoch is open.
func (s *pscwState) active() bool { return s.accessOn || s.exposureOn }
