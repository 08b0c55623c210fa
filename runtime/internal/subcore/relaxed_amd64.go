//go:build amd64 && !race

package subcore

// storeWord stores v at *p with release ordering: no earlier store is seen after it. On
// amd64 (x86-TSO) every store has release ordering and the compiler keeps stores in
// program order, so a plain store suffices. Unlike atomic.StoreUint64 (an XCHG, a full
// fence) it does not wait for an earlier store to shared memory to leave the core.
// Readers in other goroutines load with loadWord; a word is never torn. The race
// detector's build uses relaxed_other.go's atomics instead.
func storeWord(p *uint64, v uint64) { *p = v }

// loadWord loads *p, written by storeWord.
func loadWord(p *uint64) uint64 { return *p }

// storeSig stores v at *p as storeWord does (with the garbage collector's write
// barrier, as every pointer store).
func storeSig(p **CallSig, v *CallSig) { *p = v }

// loadSig loads *p, written by storeSig.
func loadSig(p **CallSig) *CallSig { return *p }
