package main

import (
	"context"
	"fmt"
	"math"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("coll-allgatherv4", "coll/allgatherv4.c", 4, collAllgatherv4)
}

// allgathervPatterns are allgatherv4.c's count patterns for a message size m on n ranks.
var allgathervPatterns = []struct {
	name  string
	count func(i, n, m int) int
}{
	{"regular", func(i, n, m int) int { return m }},
	{"bcast", func(i, n, m int) int { return m * b2i(i == 0) }},
	{"spike", func(i, n, m int) int {
		if i == 0 {
			return m / 2
		}
		return m / (2 * (n - 1))
	}},
	{"half full", func(i, n, m int) int { return 2 * m * b2i(i < n/2) }},
	{"linear decrease", func(i, n, m int) int { return 2 * m * (n - 1 - i) / (n - 1) }},
	{"bell curve", func(i, n, m int) int {
		// The share of a normal distribution over [-3, 3] that falls in rank i's slice.
		dx := 6.0 / float64(n)
		x := ((float64(i)+0.5)/float64(n) - 0.5) * 6.0
		return int(float64(m*n) * (1 / math.Sqrt(6.28)) * math.Exp(-x*x/2) * dx)
	}},
}

// collAllgatherv4: Allgatherv of bytes with six count patterns, for m from 1 to 256 Ki,
// 10 times each. The patterns are every rank m; only rank 0; half at rank 0 and the rest
// spread; twice m on the first half; linearly decreasing; a bell curve. It runs on the
// World, on all but the last rank, and on the World in a shuffled order (MPICH shuffles
// with rand(); a fixed permutation here). MPICH only checks completion; the blocks'
// contents are checked here too.
func collAllgatherv4(ctx context.Context, w *runtime.World) error {
	const largeBuf, loops = 256 * 1024, 10
	rank, size := w.Rank(), w.Size()
	if size < 3 {
		return fmt.Errorf("allgatherv4 needs at least 3 ranks, not %d", size)
	}
	run := func(c *runtime.World, name string) error {
		n, r := c.Size(), c.Rank()
		for m := 1; m <= largeBuf; m *= 2 {
			for _, p := range allgathervPatterns {
				counts := seq(n, func(i int) int { return p.count(i, n, m) })
				total := 0
				for _, k := range counts {
					total += k
				}
				send := fill(counts[r], byte(r+1))
				recv := make([]byte, total)
				for l := 0; l < loops; l++ {
					if err := collectives.Allgatherv(ctx, c, send, recv, counts); err != nil {
						return fmt.Errorf("%s, %s, m %d: %w", name, p.name, m, err)
					}
				}
				off := 0
				for i, k := range counts {
					if err := same(fmt.Sprintf("%s, %s, m %d, block of rank %d", name, p.name, m, i), recv[off:off+k], fill(k, byte(i+1))); err != nil {
						return err
					}
					off += k
				}
			}
		}
		return nil
	}
	if err := run(w, "world"); err != nil {
		return err
	}
	color := 1
	if rank == size-1 {
		color = 0
	}
	c, err := w.Split(ctx, color, 0)
	if err != nil {
		return err
	}
	if rank < size-1 {
		err = run(c, "all but the last")
	}
	if err := first(err, c.Free()); err != nil {
		return err
	}
	shuffled, err := w.Split(ctx, 0, (rank*7+3)%size)
	if err != nil {
		return err
	}
	return first(run(shuffled, "shuffled"), shuffled.Free())
}
