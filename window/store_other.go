//go:build !amd64 || race

package window

import "sync/atomic"

// release stores v into word i of w with (at least) release ordering (store_amd64.go).
func release(w []uint64, i int, v uint64) { atomic.StoreUint64(&w[i], v) }
