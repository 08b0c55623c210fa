//go:build !race

package tcp

import "sync/atomic"

// The dma functions are how the provider touches memory on behalf of the peer: it plays
// the NIC, whose DMA the race detector cannot see either. In race builds (dma_race.go)
// they are not instrumented, so a passive target's application code that reads memory a
// peer wrote (after a protocol message the detector cannot see, like a socket or pipe)
// is not reported. In other builds they are plain copies and CPU atomics.

// dmaCopy copies src into dst like copy.
func dmaCopy(dst, src []byte) int { return copy(dst, src) }

// dmaAdd64 atomically adds d to *p and returns the old value.
func dmaAdd64(p *uint64, d uint64) uint64 { return atomic.AddUint64(p, d) - d }

// dmaCas64 is atomic.CompareAndSwapUint64.
func dmaCas64(p *uint64, old, new uint64) bool { return atomic.CompareAndSwapUint64(p, old, new) }

// dmaLoad64 is atomic.LoadUint64.
func dmaLoad64(p *uint64) uint64 { return atomic.LoadUint64(p) }
