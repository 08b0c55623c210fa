//go:build !amd64 || race

package runtime

import "sync/atomic"

// publish stores v into *p with release semantics (see publish_amd64.go). Elsewhere, and
// under the race detector, it is a sequentially consistent store.
func publish(p *atomic.Uint64, v uint64) { p.Store(v) }

// unlockStore stores 0 into *p (engineLock.Unlock), sequentially consistent here.
func unlockStore(p *atomic.Int32) { p.Store(0) }
