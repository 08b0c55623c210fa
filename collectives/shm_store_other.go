//go:build !amd64

package collectives

import "sync/atomic"

// storeRelease stores v at *p with (at least) release ordering: no earlier store is seen
// after it.
func storeRelease(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
