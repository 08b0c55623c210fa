package collectives

import "slices"

// The layouts of blocks in a buffer, and the argument checks that the v-collectives and
// Alltoallw share: counts, displacements, and blocks that must not overlap.

// ByteBlocks places one block per rank in a byte buffer, as MPI_Alltoallw's counts,
// displacements and datatypes do: block i is Counts[i] elements of Sizes[i] bytes each,
// starting Displs[i] bytes into the buffer. Counts and Displs hold one entry per rank,
// none negative; Sizes is nil (every element one byte: Counts are bytes) or holds one
// positive size per rank. Each block is contiguous: MPI's datatypes with holes have no
// counterpart here.
type ByteBlocks struct {
	Counts, Displs, Sizes []int
}

// bytes returns block i's length in bytes.
func (b ByteBlocks) bytes(i int) int {
	if b.Sizes == nil {
		return b.Counts[i]
	}
	return b.Counts[i] * b.Sizes[i]
}

// of returns block i of buf.
func (b ByteBlocks) of(buf []byte, i int) []byte {
	return buf[b.Displs[i] : b.Displs[i]+b.bytes(i)]
}

// check checks b over a buffer of n bytes (what names it) for p ranks; with disjoint set,
// no two non-empty blocks may share a byte.
func (b ByteBlocks) check(what string, n, p int, disjoint bool) error {
	if len(b.Counts) != p {
		return invalid("len(%sBlocks.Counts) %d != %d ranks", what, len(b.Counts), p)
	}
	for i, c := range b.Counts {
		if c < 0 {
			return invalid("%sBlocks.Counts[%d] = %d is negative", what, i, c)
		}
	}
	if len(b.Displs) != p {
		return invalid("len(%sBlocks.Displs) %d != %d ranks", what, len(b.Displs), p)
	}
	if b.Sizes != nil {
		if len(b.Sizes) != p {
			return invalid("len(%sBlocks.Sizes) %d != %d ranks", what, len(b.Sizes), p)
		}
		for i, s := range b.Sizes {
			if s <= 0 {
				return invalid("%sBlocks.Sizes[%d] = %d is not positive", what, i, s)
			}
			if b.Counts[i] > n/s {
				return invalid("block %d of %s: %d elements of %d bytes exceed len(%s) %d", i, what, b.Counts[i], s, what, n)
			}
		}
	}
	lens := b.Counts
	if b.Sizes != nil {
		lens = make([]int, p)
		for i := range lens {
			lens[i] = b.bytes(i)
		}
	}
	return checkLayout(what, lens, b.Displs, n, p, disjoint)
}

// displ returns the displacement of block i: displs[i], or with displs nil the sum of
// the counts before it (O(i): loops over every block keep a running sum instead).
func displ(counts, displs []int, i int) int {
	if displs == nil {
		return offset(counts, i)
	}
	return displs[i]
}

// checkLayout checks a v-collective's blocks over a buffer of n elements (what names it):
// p counts, none negative, and displs nil or p displacements placing every block inside
// the buffer. With disjoint set, no two non-empty blocks may share an element (blocks
// that are written; blocks that are only read may overlap).
func checkLayout(what string, counts, displs []int, n, p int, disjoint bool) error {
	total, err := checkCounts("counts", counts, p)
	if err != nil {
		return err
	}
	if displs == nil {
		if total > n {
			return invalid("len(%s) %d < sum(counts) %d", what, n, total)
		}
		return nil
	}
	if len(displs) != p {
		return invalid("len(displs) %d != %d ranks", len(displs), p)
	}
	sorted, end := true, 0
	for i, d := range displs {
		if d < 0 || d > n-counts[i] {
			return invalid("block %d, [%d, %d) at displs[%d], is outside len(%s) %d", i, d, d+counts[i], i, what, n)
		}
		if counts[i] > 0 {
			sorted = sorted && d >= end
			end = d + counts[i]
		}
	}
	if !disjoint || sorted {
		return nil
	}
	return checkDisjoint(counts, displs)
}

// checkDisjoint reports two non-empty blocks that share an element, for a layout whose
// blocks are not in rank order: pair by pair up to disjointPairsMax ranks (no
// allocation, for the zero-allocation steady state), sorted by displacement beyond.
func checkDisjoint(counts, displs []int) error {
	overlapping := func(a, b int) error {
		if displs[b] < displs[a] {
			a, b = b, a
		}
		if counts[a] == 0 || counts[b] == 0 || displs[a]+counts[a] <= displs[b] {
			return nil
		}
		return invalid("blocks %d [%d, %d) and %d [%d, %d) overlap", a, displs[a], displs[a]+counts[a], b, displs[b], displs[b]+counts[b])
	}
	if len(counts) <= disjointPairsMax {
		for a := range counts {
			for b := a + 1; b < len(counts); b++ {
				if err := overlapping(a, b); err != nil {
					return err
				}
			}
		}
		return nil
	}
	var idx []int
	for i, n := range counts {
		if n > 0 {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(a, b int) int { return displs[a] - displs[b] })
	for k := 1; k < len(idx); k++ {
		if err := overlapping(idx[k-1], idx[k]); err != nil {
			return err
		}
	}
	return nil
}

// disjointPairsMax is the most ranks whose blocks checkDisjoint compares pair by pair.
const disjointPairsMax = 64

// checkCounts checks a count per rank (what names the argument in the error): p of
// them, none negative. It returns their sum.
func checkCounts(what string, counts []int, p int) (int, error) {
	if len(counts) != p {
		return 0, invalid("len(%s) %d != %d ranks", what, len(counts), p)
	}
	total := 0
	for i, n := range counts {
		if n < 0 {
			return 0, invalid("%s[%d] = %d is negative", what, i, n)
		}
		total += n
	}
	return total, nil
}

// offset returns the displacement of block i: the sum of the counts before it.
func offset(counts []int, i int) int {
	off := 0
	for _, n := range counts[:i] {
		off += n
	}
	return off
}
