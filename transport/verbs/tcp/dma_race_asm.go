//go:build race && (amd64 || arm64)

package tcp

// CPU atomics in assembly, invisible to the race detector (see dma.go).

// dmaAdd64 atomically adds d to *p and returns the old value.
//
//go:noescape
func dmaAdd64(p *uint64, d uint64) uint64

// dmaCas64 atomically replaces *p by new if it holds old.
//
//go:noescape
func dmaCas64(p *uint64, old, new uint64) bool

// dmaLoad64 atomically loads *p.
//
//go:noescape
func dmaLoad64(p *uint64) uint64
