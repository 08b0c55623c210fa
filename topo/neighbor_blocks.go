package topo

import (
	"slices"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
)

// ByteBlocks places one block per neighbour slot in a byte buffer, as
// MPI_Neighbor_alltoallw's counts, displacements and datatypes do (collectives.ByteBlocks'
// shape, with a block per neighbour slot rather than per rank): block k is Counts[k]
// elements of Sizes[k] bytes each, starting Displs[k] bytes into the buffer. Counts and
// Displs hold one entry per slot, none negative; Sizes is nil (every element one byte:
// Counts are bytes) or holds one positive size per slot. Each block is contiguous.
type ByteBlocks struct {
	Counts, Displs, Sizes []int
}

// lens returns b's block lengths in bytes, checking b for nb slots of a buffer called
// what at rank me.
func (b ByteBlocks) lens(op, what string, me, nb int) ([]int, error) {
	switch {
	case len(b.Counts) != nb:
		return nil, invalidf(op, "rank %d: len(%sBlocks.Counts) is %d for %d neighbour slots", me, what, len(b.Counts), nb)
	case len(b.Displs) != nb:
		return nil, invalidf(op, "rank %d: len(%sBlocks.Displs) is %d for %d neighbour slots", me, what, len(b.Displs), nb)
	case b.Sizes == nil:
		return b.Counts, nil
	case len(b.Sizes) != nb:
		return nil, invalidf(op, "rank %d: len(%sBlocks.Sizes) is %d for %d neighbour slots (nil for sizes of one byte)", me, what, len(b.Sizes), nb)
	}
	lens := make([]int, nb)
	for k, s := range b.Sizes {
		c := b.Counts[k]
		switch {
		case s <= 0:
			return nil, invalidf(op, "rank %d: %sBlocks.Sizes[%d] = %d is not positive", me, what, k, s)
		case c < 0:
			return nil, invalidf(op, "rank %d: %sBlocks.Counts[%d] = %d is negative", me, what, k, c)
		case c > (1<<62)/s:
			return nil, invalidf(op, "rank %d: block %d of %s, %d elements of %d bytes, is too large", me, k, what, c, s)
		}
		lens[k] = c * s
	}
	return lens, nil
}

// blocksOf returns the blocks of buf (called what) that counts and displs place, one per
// neighbour slot (nb of them), at rank me: block k is buf[displs[k]:displs[k]+counts[k]],
// or, with displs nil, the blocks lie one after another from the start and fill buf. Every
// block must lie inside buf and, with disjoint set, no two non-empty blocks may share an
// element.
func blocksOf[T runtime.Elem](op, what string, me int, buf []T, counts, displs []int, nb int, disjoint bool) ([][]T, error) {
	if len(counts) != nb {
		return nil, invalidf(op, "rank %d: %d %s counts for %d neighbour slots", me, len(counts), what, nb)
	}
	total := 0
	for k, c := range counts {
		if c < 0 {
			return nil, invalidf(op, "rank %d: %s count %d (block %d) is negative", me, what, c, k)
		}
		total += c
	}
	out := make([][]T, nb)
	if displs == nil {
		if total != len(buf) {
			return nil, invalidf(op, "rank %d: len(%s) is %d, but its counts add up to %d (pass displacements to leave gaps)", me, what, len(buf), total)
		}
		at := 0
		for k, c := range counts {
			out[k] = buf[at : at+c : at+c]
			at += c
		}
		return out, nil
	}
	if len(displs) != nb {
		return nil, invalidf(op, "rank %d: %d %s displacements for %d neighbour slots", me, len(displs), what, nb)
	}
	for k, d := range displs {
		if d < 0 || d > len(buf)-counts[k] {
			return nil, invalidf(op, "rank %d: block %d of %s, [%d, %d), is outside len(%s) %d", me, k, what, d, d+counts[k], what, len(buf))
		}
		out[k] = buf[d : d+counts[k] : d+counts[k]]
	}
	if disjoint {
		order := make([]int, 0, nb)
		for k, c := range counts {
			if c > 0 {
				order = append(order, k)
			}
		}
		slices.SortFunc(order, func(a, b int) int { return displs[a] - displs[b] })
		for i := 1; i < len(order); i++ {
			a, b := order[i-1], order[i]
			if displs[a]+counts[a] > displs[b] {
				return nil, invalidf(op, "rank %d: blocks %d and %d of %s overlap (each element of %s is written at most once)", me, a, b, what, what)
			}
		}
	}
	return out, nil
}

// overlap reports whether a and b share memory.
func overlap[T runtime.Elem](a, b []T) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	es := unsafe.Sizeof(a[0])
	pa, pb := uintptr(unsafe.Pointer(unsafe.SliceData(a))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa < pb+uintptr(len(b))*es && pb < pa+uintptr(len(a))*es
}
