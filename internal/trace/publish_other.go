//go:build !amd64 || race

package trace

import "sync/atomic"

// publish stores v into *p with release semantics (see publish_amd64.go).
func publish(p *atomic.Uint64, v uint64) { p.Store(v) }
