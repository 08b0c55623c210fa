//go:build amd64 && !race

package runtime

import (
	"sync/atomic"
	"unsafe"
)

// publish stores v into *p with release semantics: every store before it becomes visible
// to other cores no later than v. On amd64 (TSO) a plain MOV is a release store, whereas
// p.Store compiles to XCHG, a locked instruction that stalls while the peer polls the line
// (as in the shm provider's ring). The compiler keeps stores in program order, and a plain
// store of an aligned word is atomic. It is not ordered before later loads: the fast box
// sender's NotifyPeer may read the peer's sleeper count before the store is seen (the
// shm provider's ringUnfenced says why that is safe).
func publish(p *atomic.Uint64, v uint64) {
	*(*uint64)(unsafe.Pointer(p)) = v
}

// unlockStore stores 0 into *p with release semantics (engineLock.Unlock).
func unlockStore(p *atomic.Int32) {
	*(*int32)(unsafe.Pointer(p)) = 0
}
