//go:build amd64 && !race

package collectives

// releaseBusy ends a call's hold on its state (open takes it by CAS) with a release
// store. On amd64 (x86-TSO) a plain store is one, and unlike atomic.StoreUint32 (an
// XCHG, a full fence) it does not stall the rank until the step it published last has
// left the core: a line transfer at every call's end. The next CAS sees it. The race
// detector's build uses busy_other.go's atomic store.
func releaseBusy(b *uint32) { *b = 0 }
