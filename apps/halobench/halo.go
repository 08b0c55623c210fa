package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
)

// Tags of the two directions: a column travelling to the right neighbour, to the left one.
const (
	tagRight = 1
	tagLeft  = 2
)

// halo is one rank's matrix and its exchange with its ring neighbours. It is used by
// one goroutine.
type halo struct {
	w           *runtime.World
	n, ld       int           // N, and the row length N+2
	a           []float64     // N rows of ld: ghost column 0, owned columns 1..N, ghost column N+1
	col         datatype.Type // a column: N elements, one every ld
	left, right int
	manual      bool
	sbuf, rbuf  []float64 // --manual: one packed column each
}

func newHalo(w *runtime.World, n int, manual bool) (*halo, error) {
	if n < 2 || n > maxN {
		return nil, fmt.Errorf("matrix size %d: want 2 to %d", n, maxN)
	}
	h := &halo{w: w, n: n, ld: n + 2, a: make([]float64, n*(n+2)), manual: manual,
		left: (w.Rank() + w.Size() - 1) % w.Size(), right: (w.Rank() + 1) % w.Size()}
	var err error
	if h.col, err = datatype.Vector[float64](n, 1, h.ld); err != nil {
		return nil, err
	}
	if manual {
		h.sbuf, h.rbuf = make([]float64, n), make([]float64, n)
	}
	return h, nil
}

// exchange sends the last owned column to the right neighbour while receiving the left
// ghost column from the left one, then the first owned column to the left while
// receiving the right ghost from the right.
func (h *halo) exchange(ctx context.Context) error {
	if h.manual {
		return h.exchangeManual(ctx)
	}
	_, err := runtime.SendrecvType(ctx, h.w, h.a[h.n:], 1, h.col, h.right, tagRight, h.a, 1, h.col, h.left, tagRight)
	if err != nil {
		return err
	}
	_, err = runtime.SendrecvType(ctx, h.w, h.a[1:], 1, h.col, h.left, tagLeft, h.a[h.n+1:], 1, h.col, h.right, tagLeft)
	return err
}

// exchangeManual is exchange with the columns packed and unpacked by hand.
func (h *halo) exchangeManual(ctx context.Context) error {
	a, ld, n := h.a, h.ld, h.n
	for i := range n {
		h.sbuf[i] = a[i*ld+n]
	}
	if _, err := runtime.Sendrecv(ctx, h.w, h.sbuf, h.right, tagRight, h.rbuf, h.left, tagRight); err != nil {
		return err
	}
	for i := range n {
		a[i*ld] = h.rbuf[i]
		h.sbuf[i] = a[i*ld+1]
	}
	if _, err := runtime.Sendrecv(ctx, h.w, h.sbuf, h.left, tagLeft, h.rbuf, h.right, tagLeft); err != nil {
		return err
	}
	for i := range n {
		a[i*ld+n+1] = h.rbuf[i]
	}
	return nil
}

// Sides of a boundary column in valueOf.
const (
	sideFirst = 0 // owned column 1, sent to the left
	sideLast  = 1 // owned column N, sent to the right
)

// valueOf is the value of row row of rank rank's boundary column side in phase phase:
// distinct for every argument (phase < 4, rank < 2^20, row < 2^17) and exact in a
// float64. bench/mpi/halobench.c computes the same.
func valueOf(phase, rank, row, side int) float64 {
	return float64(((int64(phase)<<20|int64(rank))<<17|int64(row))<<1 | int64(side))
}

// stamp gives the boundary columns the values of phase and clears the ghost columns.
func (h *halo) stamp(phase int) {
	a, ld, n, r := h.a, h.ld, h.n, h.w.Rank()
	for i := range n {
		a[i*ld], a[i*ld+n+1] = -1, -1
		a[i*ld+1] = valueOf(phase, r, i, sideFirst)
		a[i*ld+n] = valueOf(phase, r, i, sideLast)
	}
}

// check says whether the ghost columns hold the neighbours' boundary columns of phase.
func (h *halo) check(phase int) error {
	a, ld, n := h.a, h.ld, h.n
	for i := range n {
		if got, want := a[i*ld], valueOf(phase, h.left, i, sideLast); got != want {
			return fmt.Errorf("left ghost column, row %d: holds %v, want %v (rank %d's last column)", i, got, want, h.left)
		}
		if got, want := a[i*ld+n+1], valueOf(phase, h.right, i, sideFirst); got != want {
			return fmt.Errorf("right ghost column, row %d: holds %v, want %v (rank %d's first column)", i, got, want, h.right)
		}
	}
	return nil
}

// jobWarmup is how long the ranks exchange, untimed, before the first size. A job's first
// milliseconds (tens of them) are slower than the rest, whichever runtime, and a short
// run would carry that into its figure (apps/pingpong's warmJob says more). The C twin
// warms up the same way.
const jobWarmup = 50 * time.Millisecond

// warmJob exchanges the columns of a 64 x 64 matrix until rank 0 has spent jobWarmup;
// rank 0's decision travels in a Bcast after each exchange, so every rank stops after
// the same one.
func warmJob(ctx context.Context, w *runtime.World, manual bool) error {
	h, err := newHalo(w, 64, manual)
	if err != nil {
		return err
	}
	more := []int32{1}
	start := time.Now()
	for more[0] != 0 {
		if err := h.exchange(ctx); err != nil {
			return err
		}
		if w.Rank() == 0 && time.Since(start) >= jobWarmup {
			more[0] = 0
		}
		if err := collectives.Bcast(ctx, w, more, 0); err != nil {
			return err
		}
	}
	return nil
}

// measureSize times o.iters exchanges of an N x N matrix after o.warmup untimed ones,
// checking the ghosts after the first exchange and after the last.
func measureSize(ctx context.Context, w *runtime.World, n int, o options) (row, error) {
	h, err := newHalo(w, n, o.manual)
	if err != nil {
		return row{}, err
	}
	h.stamp(1)
	if err := runtime.Barrier(ctx, w); err != nil {
		return row{}, err
	}
	for i := range o.warmup {
		if err := h.exchange(ctx); err != nil {
			return row{}, err
		}
		if i == 0 {
			if err := h.check(1); err != nil {
				return row{}, fmt.Errorf("after the first exchange: %w", err)
			}
		}
	}
	h.stamp(2)
	if err := runtime.Barrier(ctx, w); err != nil {
		return row{}, err
	}
	start := time.Now()
	for range o.iters {
		if err := h.exchange(ctx); err != nil {
			return row{}, err
		}
	}
	elapsed := time.Since(start)
	if err := h.check(2); err != nil {
		return row{}, fmt.Errorf("after the last exchange: %w", err)
	}
	us := benchkit.Round3(float64(elapsed.Nanoseconds()) / 1e3 / float64(o.iters))
	return row{N: n, ColumnBytes: 8 * n, Iterations: o.iters, ExchangeUS: us}, nil
}
