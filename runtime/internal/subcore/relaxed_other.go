//go:build !amd64 || race

package subcore

import (
	"sync/atomic"
	"unsafe"
)

// storeWord stores v at *p with (at least) release ordering: no earlier store is seen
// after it.
func storeWord(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

// loadWord loads *p, written by storeWord.
func loadWord(p *uint64) uint64 { return atomic.LoadUint64(p) }

// storeSig stores v at *p as storeWord does.
func storeSig(p **CallSig, v *CallSig) {
	atomic.StorePointer((*unsafe.Pointer)(unsafe.Pointer(p)), unsafe.Pointer(v))
}

// loadSig loads *p, written by storeSig.
func loadSig(p **CallSig) *CallSig {
	return (*CallSig)(atomic.LoadPointer((*unsafe.Pointer)(unsafe.Pointer(p))))
}
