//go:build amd64 && !race

package window

// release stores v into word i of w with release ordering: no earlier load or store of
// this goroutine is seen after it. It ends a critical section (the accumulate word) or
// publishes a count. On amd64 (x86-TSO) every store has release ordering, so a plain
// store suffices: unlike atomic.StoreUint64 (an XCHG, a full fence) it does not stall
// the core until the line is owned. The compiler keeps stores in program order around
// it. The words are shared mappings, outside the race detector's view; race builds use
// an atomic store (store_other.go).
func release(w []uint64, i int, v uint64) { w[i] = v }
