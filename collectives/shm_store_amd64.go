package collectives

// storeRelease stores v at *p with release ordering: no earlier store is seen after it.
// On amd64 (x86-TSO) every store has release ordering, so a plain store suffices, and
// unlike atomic.StoreUint64 (an XCHG, a full fence) it does not stall the core until the
// cache line is owned: the member goes on to poll its peers meanwhile. The compiler
// keeps stores in program order; *p is in a shared mapping, outside the race detector's
// view.
func storeRelease(p *uint64, v uint64) { *p = v }
