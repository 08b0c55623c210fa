package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// syncMode is one way to close an iteration's epoch.
type syncMode struct {
	name, title string
}

// modes are the --sync modes, in the order they run.
var modes = []syncMode{
	{"fence", "Fence; Put left and right; Fence"},
	{"pscw", "Post(neighbours); Start(neighbours); Put x2; Complete; Wait"},
	{"lock", "per neighbour Lock(Exclusive) + Put + Unlock; Barrier"},
	{"lock_all", "LockAll once; Put x2 + FlushAll; Barrier"},
}

// halo is one rank's array in a window and its exchange with its ring neighbours. The
// window holds 4n float64: the left ghost, the left boundary, the right boundary and the
// right ghost, n each. It is used by one goroutine.
type halo struct {
	w           *runtime.World
	win         *window.Win[float64]
	mode        string
	n           int   // halo elements
	left, right int   // the ring neighbours
	nbrs        []int // the distinct neighbours: one rank when there are 2
	iter        int   // iterations done since stamp
}

// Offsets of the four regions, in units of n.
const (
	leftGhost = iota
	leftBoundary
	rightBoundary
	rightGhost
)

func newHalo(ctx context.Context, w *runtime.World, mode string, n int) (*halo, error) {
	win, err := window.Allocate[float64](ctx, w, 4*n)
	if err != nil {
		return nil, err
	}
	h := &halo{w: w, win: win, mode: mode, n: n,
		left: (w.Rank() + w.Size() - 1) % w.Size(), right: (w.Rank() + 1) % w.Size()}
	h.nbrs = []int{h.left}
	if h.right != h.left {
		h.nbrs = append(h.nbrs, h.right)
	}
	return h, nil
}

// region is the k-th region of the local array.
func (h *halo) region(k int) []float64 { return h.win.Local()[k*h.n : (k+1)*h.n] }

// open starts what spans every iteration of a size: the LockAll epoch of lock_all.
func (h *halo) open(ctx context.Context) error {
	if h.mode == "lock_all" {
		return h.win.LockAll(ctx, 0)
	}
	return nil
}

// close ends what open started.
func (h *halo) close(ctx context.Context) error {
	if h.mode == "lock_all" {
		return h.win.UnlockAll(ctx)
	}
	return nil
}

// iterate runs one iteration: both boundaries go into the neighbours' ghosts, the epoch
// closes, and the boundary cells change.
func (h *halo) iterate(ctx context.Context) error {
	var err error
	switch h.mode {
	case "fence":
		err = h.fence(ctx)
	case "pscw":
		err = h.pscw(ctx)
	case "lock":
		err = h.lock(ctx)
	case "lock_all":
		err = h.lockAll(ctx)
	default:
		err = fmt.Errorf("no sync mode %q", h.mode)
	}
	if err != nil {
		return err
	}
	b := h.win.Local()[leftBoundary*h.n : (rightBoundary+1)*h.n]
	for i := range b {
		b[i]++
	}
	h.iter++
	return nil
}

// putTo Puts the boundaries that go to rank: the left one if rank is the left
// neighbour, the right one if it is the right neighbour.
func (h *halo) putTo(rank int) error {
	if rank == h.left {
		if err := h.win.Put(h.region(leftBoundary), rank, rightGhost*h.n); err != nil {
			return err
		}
	}
	if rank == h.right {
		return h.win.Put(h.region(rightBoundary), rank, leftGhost*h.n)
	}
	return nil
}

// puts Puts both boundaries.
func (h *halo) puts() error {
	for _, r := range h.nbrs {
		if err := h.putTo(r); err != nil {
			return err
		}
	}
	return nil
}

func (h *halo) fence(ctx context.Context) error {
	if err := h.win.Fence(ctx, 0); err != nil {
		return err
	}
	if err := h.puts(); err != nil {
		return err
	}
	return h.win.Fence(ctx, 0)
}

func (h *halo) pscw(ctx context.Context) error {
	if err := h.win.Post(ctx, h.nbrs, 0); err != nil {
		return err
	}
	if err := h.win.Start(ctx, h.nbrs, 0); err != nil {
		return err
	}
	if err := h.puts(); err != nil {
		return err
	}
	if err := h.win.Complete(ctx); err != nil {
		return err
	}
	return h.win.Wait(ctx)
}

func (h *halo) lock(ctx context.Context) error {
	for _, r := range h.nbrs {
		if err := h.win.Lock(ctx, window.Exclusive, r, 0); err != nil {
			return err
		}
		if err := h.putTo(r); err != nil {
			return err
		}
		if err := h.win.Unlock(ctx, r); err != nil {
			return err
		}
	}
	return collectives.Barrier(ctx, h.w)
}

func (h *halo) lockAll(ctx context.Context) error {
	if err := h.puts(); err != nil {
		return err
	}
	if err := h.win.FlushAll(ctx); err != nil {
		return err
	}
	return collectives.Barrier(ctx, h.w)
}

// Sides of a boundary in valueOf.
const (
	sideLeft  = 0
	sideRight = 1
)

// Limits of valueOf's arguments: ranks, halo elements and iterations of one size.
const (
	maxRanks = 1 << 11
	maxElems = 1 << 21
	maxIters = 1 << 20
)

// valueOf is element i of rank rank's boundary side before its first iteration: distinct
// for every argument below the limits, and exact in a float64 after up to maxIters
// increments. bench/mpi/rmahalo.c computes the same.
func valueOf(rank, side, i int) float64 {
	return float64((int64(rank)<<1|int64(side))<<41 | int64(i)<<20)
}

// stamp gives the boundaries their first values, clears the ghosts and restarts the
// iteration count.
func (h *halo) stamp() {
	r := h.w.Rank()
	lg, lb, rb, rg := h.region(leftGhost), h.region(leftBoundary), h.region(rightBoundary), h.region(rightGhost)
	for i := range h.n {
		lg[i], rg[i] = -1, -1
		lb[i], rb[i] = valueOf(r, sideLeft, i), valueOf(r, sideRight, i)
	}
	h.iter = 0
}

// check says whether the ghosts hold the neighbours' boundaries of the last iteration.
func (h *halo) check() error {
	k := float64(h.iter - 1)
	lg, rg := h.region(leftGhost), h.region(rightGhost)
	for i := range h.n {
		if got, want := lg[i], valueOf(h.left, sideRight, i)+k; got != want {
			return fmt.Errorf("left ghost element %d holds %v, want %v (rank %d's right boundary)", i, got, want, h.left)
		}
		if got, want := rg[i], valueOf(h.right, sideLeft, i)+k; got != want {
			return fmt.Errorf("right ghost element %d holds %v, want %v (rank %d's left boundary)", i, got, want, h.right)
		}
	}
	return nil
}
