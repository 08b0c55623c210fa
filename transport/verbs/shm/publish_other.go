//go:build !amd64 || race

package shm

import "sync/atomic"

// publish stores v into *p with release semantics (see publish_amd64.go). Elsewhere, and
// under the race detector, it is a sequentially consistent store, which orders it before
// later loads too.
func publish(p *atomic.Uint64, v uint64) { p.Store(v) }

// publish32 is publish for a 32-bit word.
func publish32(p *atomic.Int32, v int32) { p.Store(v) }

// fence orders earlier publishes before later loads; the sequentially consistent Store
// of publish already does.
func fence() {}
