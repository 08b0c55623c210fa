//go:build !amd64 || race

package runtime

import "sync/atomic"

// publish stores v into *p with release semantics (see publish_amd64.go). Elsewhere, and
// under the race detector, it is a sequentially consistent store.
func publish(p *atomic.Uint64, v uint64) { p.Store(v) }
