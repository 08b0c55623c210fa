//go:build race && !amd64 && !arm64

package tcp

import "sync/atomic"

// On race platforms without the assembly of dma_race_*.s the atomics stay visible to the
// race detector.

func dmaAdd64(p *uint64, d uint64) uint64      { return atomic.AddUint64(p, d) - d }
func dmaCas64(p *uint64, old, new uint64) bool { return atomic.CompareAndSwapUint64(p, old, new) }
func dmaLoad64(p *uint64) uint64               { return atomic.LoadUint64(p) }
