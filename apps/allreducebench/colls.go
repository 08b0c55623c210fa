package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// collBench is one of the collectives measured as osu_bcast, osu_reduce, osu_allgather,
// osu_alltoall, osu_gather and osu_scatter do: float64 vectors, root 0 for the rooted
// ones.
type collBench struct {
	name  string
	title string // the table's heading
	// lens are the send and receive lengths, in elements, for blocks of n elements on p
	// ranks.
	lens func(n, p int) (send, recv int)
	// input is the value of element i of block d of rank r's send (of its buffer at the
	// root for bcast).
	input func(i, r, d, p int) float64
	// want is the value of element i of block b of rank r's result, and who says which
	// ranks have one.
	want func(i, b, r, p int) float64
	who  func(r int) bool
	call func(ctx context.Context, w *runtime.World, send, recv []float64) error
	// perRank says that the bandwidths count p blocks: the receive buffer of allgather,
	// alltoall and gather (at root), the send buffer of scatter (at root), as nccl-tests
	// does.
	perRank bool
}

// collBenches are the tests beside allreduce and barrier, by name.
var collBenches = map[string]collBench{
	"bcast": {
		name: "bcast", title: "bcast: float64 from root 0; bytes: the vector",
		lens:  func(n, p int) (int, int) { return 0, n },
		input: func(i, r, d, p int) float64 { return float64(i%251 + 1) },
		want:  func(i, b, r, p int) float64 { return float64(i%251 + 1) },
		who:   func(r int) bool { return r != 0 },
		call: func(ctx context.Context, w *runtime.World, _, buf []float64) error {
			return collectives.Bcast(ctx, w, buf, 0)
		},
	},
	"reduce": {
		name: "reduce", title: "reduce: float64 sum to root 0; bytes: the vector",
		lens:  func(n, p int) (int, int) { return n, n },
		input: func(i, r, d, p int) float64 { return float64(i%251 + r + 1) },
		want:  func(i, b, r, p int) float64 { return float64(p*(i%251+1) + p*(p-1)/2) },
		who:   func(r int) bool { return r == 0 },
		call: func(ctx context.Context, w *runtime.World, send, recv []float64) error {
			return collectives.Reduce(ctx, w, send, recv, collectives.Sum[float64](), 0)
		},
	},
	"allgather": {
		name: "allgather", title: "allgather: float64; bytes: each rank's block (the result holds p blocks)",
		lens:  func(n, p int) (int, int) { return n, p * n },
		input: func(i, r, d, p int) float64 { return float64(i%251 + r + 1) },
		want:  func(i, b, r, p int) float64 { return float64(i%251 + b + 1) },
		who:   func(int) bool { return true },
		call: func(ctx context.Context, w *runtime.World, send, recv []float64) error {
			return collectives.Allgather(ctx, w, send, recv)
		},
		perRank: true,
	},
	"alltoall": {
		name: "alltoall", title: "alltoall: float64; bytes: each block (p blocks sent and p received per rank)",
		lens:  func(n, p int) (int, int) { return p * n, p * n },
		input: func(i, r, d, p int) float64 { return alltoallValue(i, r, d, p) },
		want:  func(i, b, r, p int) float64 { return alltoallValue(i, b, r, p) },
		who:   func(int) bool { return true },
		call: func(ctx context.Context, w *runtime.World, send, recv []float64) error {
			return collectives.Alltoall(ctx, w, send, recv)
		},
		perRank: true,
	},
	"gather": {
		name: "gather", title: "gather: float64 to root 0; bytes: each rank's block (root receives p blocks, the bandwidths count them)",
		lens:  func(n, p int) (int, int) { return n, p * n },
		input: func(i, r, d, p int) float64 { return float64(i%251 + r + 1) },
		want:  func(i, b, r, p int) float64 { return float64(i%251 + b + 1) },
		who:   func(r int) bool { return r == 0 },
		call: func(ctx context.Context, w *runtime.World, send, recv []float64) error {
			return collectives.Gather(ctx, w, send, recv, 0)
		},
		perRank: true,
	},
	"scatter": {
		name: "scatter", title: "scatter: float64 from root 0; bytes: each rank's block (root sends p blocks, the bandwidths count them)",
		lens:  func(n, p int) (int, int) { return p * n, n },
		input: func(i, r, d, p int) float64 { return alltoallValue(i, r, d, p) },
		want:  func(i, b, r, p int) float64 { return alltoallValue(i, 0, r, p) },
		who:   func(int) bool { return true },
		call: func(ctx context.Context, w *runtime.World, send, recv []float64) error {
			return collectives.Scatter(ctx, w, send, recv, 0)
		},
		perRank: true,
	},
}

// alltoallValue is element i of the block that rank s sends to rank d: distinct for
// every pair, so a block delivered to the wrong place shows. Scatter's root sends the
// same values as an Alltoall's rank 0.
func alltoallValue(i, s, d, p int) float64 { return float64(i%251 + 1 + 256*(s*p+d)) }

// bandwidth is the row's algbw and busbw (GB/s) for size bytes in avgUS on p ranks, as
// nccl-tests counts them: bcast and reduce move the vector (busbw = algbw). Allgather,
// alltoall and gather fill p blocks, and scatter's root sends p blocks (algbw =
// p*size/time); p-1 of them cross between ranks (busbw = algbw*(p-1)/p).
func (c collBench) bandwidth(size, p int, avgUS float64) (algbw, busbw float64) {
	if avgUS <= 0 {
		return 0, 0
	}
	if !c.perRank {
		algbw = float64(size) / avgUS / 1e3
		return algbw, algbw
	}
	algbw = float64(p*size) / avgUS / 1e3
	return algbw, algbw * float64(p-1) / float64(p)
}

// collBufs are a collBench's vectors at one size: cut from a pair allocated once for the
// largest size, or new for every call with --fresh.
type collBufs struct {
	c          collBench
	rank, size int
	fresh      bool
	n          int // elements per block
	full       [2][]float64
	send, recv []float64
}

func newCollBufs(w *runtime.World, o options, c collBench) *collBufs {
	b := &collBufs{c: c, rank: w.Rank(), size: w.Size(), fresh: o.fresh}
	if !o.fresh {
		s, r := c.lens(o.maxSize/8, b.size)
		b.full = [2][]float64{make([]float64, s), make([]float64, r)}
		fill(b.full[1], b.rank+100)
	}
	return b
}

// setSize cuts (or allocates) the vectors for size bytes and writes the input.
func (b *collBufs) setSize(size int) {
	b.n = size / 8
	s, r := b.c.lens(b.n, b.size)
	if b.fresh {
		b.send, b.recv = make([]float64, s), make([]float64, r)
	} else {
		b.send, b.recv = b.full[0][:s], b.full[1][:r]
	}
	in := b.send
	if b.c.name == "bcast" {
		if b.rank != 0 {
			return
		}
		in = b.recv
	}
	for d := range len(in) / b.n {
		for i := range b.n {
			in[d*b.n+i] = b.c.input(i, b.rank, d, b.size)
		}
	}
}

// call makes one call, timed on this rank's clock, and a Barrier after it.
func (b *collBufs) call(ctx context.Context, w *runtime.World) (time.Duration, error) {
	if b.fresh {
		b.setSize(b.n * 8)
	}
	t0 := mono()
	err := b.c.call(ctx, w, b.send, b.recv)
	d := mono() - t0
	if err == nil {
		err = collectives.Barrier(ctx, w)
	}
	return d, err
}

// verify overwrites the result with a wrong pattern, makes one more call, untimed, and
// checks its result.
func (b *collBufs) verify(ctx context.Context, w *runtime.World) error {
	if !b.c.who(b.rank) {
		return b.c.call(ctx, w, b.send, b.recv)
	}
	fill(b.recv, b.rank+100)
	if err := b.c.call(ctx, w, b.send, b.recv); err != nil {
		return err
	}
	for k, x := range b.recv {
		if want := b.c.want(k%b.n, k/b.n, b.rank, b.size); x != want {
			return fmt.Errorf("wrong result: element %d of block %d is %v, want %v", k%b.n, k/b.n, x, want)
		}
	}
	return nil
}

// collTest runs one collBench: the job's warm-up at the first size, then every size.
// The warm-up's calls are followed by a Barrier each, as the measured calls are: without
// it the root of a Bcast (the other ranks of a Reduce) would run ahead of the others by
// thousands of unexpected messages.
func collTest(ctx context.Context, w *runtime.World, o options, c collBench, text io.Writer) ([]row, error) {
	fmt.Fprintf(text, "\n# %s\n%s\n", c.title, header)
	b := newCollBufs(w, o, c)
	if len(o.sizes) > 0 {
		b.setSize(o.sizes[0])
		err := warmFor(ctx, w, 64, func() error {
			if err := c.call(ctx, w, b.send, b.recv); err != nil {
				return err
			}
			return collectives.Barrier(ctx, w)
		})
		if err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	var rows []row
	for _, size := range o.sizes {
		r, err := collSize(ctx, w, o, b, size)
		if err != nil {
			return rows, fmt.Errorf("at %d bytes: %w", size, err)
		}
		rows = append(rows, r)
		fmt.Fprintln(text, formatRow(r))
	}
	return rows, nil
}

// collSize measures one size as allreduceSize does, then checks a call's result (verify).
func collSize(ctx context.Context, w *runtime.World, o options, b *collBufs, size int) (row, error) {
	b.setSize(size)
	total, iters, cs, err := timeCalls(ctx, w, o, scaled(o.iters, o.minIters, size), func() (time.Duration, error) { return b.call(ctx, w) })
	if err != nil {
		return row{}, err
	}
	if err := b.verify(ctx, w); err != nil {
		return row{}, err
	}
	r, err := reduceRow(ctx, w, total, iters, cs)
	r.Bytes = size
	r.AlgBW, r.BusBW = b.c.bandwidth(size, b.size, r.AvgUS)
	return r, err
}
