//go:build !amd64 || race

package main

import "sync/atomic"

// storeRelease stores v into *p with (at least) release semantics; see store_amd64.go.
// Elsewhere, and under the race detector, it is an atomic store.
func storeRelease(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
