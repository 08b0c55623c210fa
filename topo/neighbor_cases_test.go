package topo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/topo"
)

// TestNeighborCart: the five neighbourhood collectives, blocking, nonblocking and
// persistent, on grids with edges (NoNeighbor slots left untouched), with periodic
// dimensions of size 1 and 2 (both neighbours one rank, the block sent towards a rank
// landing in the slot facing it), with a dimension of size 1 that is not periodic, and
// on Subs of them, including one of no dimensions.
func TestNeighborCart(t *testing.T) {
	grids := []struct {
		dims    []int
		periods []bool
	}{
		{[]int{4}, []bool{false}},
		{[]int{4}, []bool{true}},
		{[]int{2, 2}, []bool{true, true}},
		{[]int{1, 2, 2}, []bool{true, true, false}},
		{[]int{4, 1}, []bool{false, false}},
	}
	forEachHood(t, []int{4}, func(ctx context.Context, w *runtime.World) error {
		for _, g := range grids {
			c, err := topo.NewCart(ctx, w, g.dims, g.periods, false)
			if err != nil {
				return err
			}
			if err := runAll(ctx, cartCase(c)); err != nil {
				return fmt.Errorf("grid %v periods %v: %w", g.dims, g.periods, err)
			}
			remain := make([]bool, len(g.dims))
			remain[len(remain)-1] = true
			for _, keep := range [][]bool{remain, make([]bool, len(g.dims))} {
				s, err := c.Sub(ctx, keep)
				if err != nil {
					return err
				}
				if err := runAll(ctx, cartCase(s)); err != nil {
					return fmt.Errorf("grid %v, Sub %v: %w", g.dims, keep, err)
				}
				if err := s.World().Free(); err != nil {
					return err
				}
			}
			if err := c.World().Free(); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestNeighborGraph: Graphs whose nodes list a neighbour several times and themselves
// (the k-th block between two nodes going with their k-th edge), a ring with a chord over
// some of the World's ranks, and a graph whose edges are not symmetric, which every
// rank refuses.
func TestNeighborGraph(t *testing.T) {
	graphs := []struct {
		index, edges []int
	}{
		{[]int{4, 7, 8, 10}, []int{1, 0, 1, 2, 0, 0, 3, 0, 1, 3}},
		{[]int{3, 5, 8}, []int{1, 2, 2, 0, 2, 1, 0, 0}},
	}
	forEachHood(t, []int{4}, func(ctx context.Context, w *runtime.World) error {
		for _, gr := range graphs {
			g, err := topo.NewGraph(ctx, w, gr.index, gr.edges, false)
			if err != nil {
				return err
			}
			if g == nil {
				continue
			}
			me := g.World().Rank()
			in, _ := g.Neighbors(me)
			outOf := func(p int) []int { nb, _ := g.Neighbors(p); return nb }
			if err := runAll(ctx, graphCase(g, me, in, len(in), outOf)); err != nil {
				return fmt.Errorf("graph %v %v: %w", gr.index, gr.edges, err)
			}
			if err := g.World().Free(); err != nil {
				return err
			}
		}
		// 0 lists 1 twice, 1 lists 0 once.
		g, err := topo.NewGraph(ctx, w, []int{2, 3}, []int{1, 1, 0}, false)
		if err != nil || g == nil {
			return err
		}
		defer g.World().Free()
		err = topo.NeighborAllgather(ctx, g, []int64{1}, make([]int64, 2))
		if !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "node 0 lists node 1 as a neighbour 2 times and node 1 lists node 0 1 times") {
			return fmt.Errorf("asymmetric graph: %v", err)
		}
		return nil
	})
}

// TestNeighborDistGraph: directed DistGraphs: a ring with a repeated edge and a
// self-loop made by NewDistGraphAdjacent, and a star that rank 0 describes alone through
// NewDistGraph, with a rank of no edges at all.
func TestNeighborDistGraph(t *testing.T) {
	forEachHood(t, []int{4}, func(ctx context.Context, w *runtime.World) error {
		n, me := w.Size(), w.Rank()
		outOf := func(p int) []int { return []int{ring(p, 1, n), ring(p, 1, n), p} }
		g, err := topo.NewDistGraphAdjacent(ctx, w, []int{ring(me, -1, n), me, ring(me, -1, n)}, outOf(me), false)
		if err != nil {
			return err
		}
		if err := runAll(ctx, graphCase(g, me, g.Sources(), len(g.Destinations()), outOf)); err != nil {
			return fmt.Errorf("ring: %w", err)
		}
		if err := g.World().Free(); err != nil {
			return err
		}
		// 0 -> 1, 0 -> 2, 1 -> 0, 2 -> 0, 2 -> 0 (twice); 3 alone.
		var src, deg, dst []int
		if me == 0 {
			src, deg, dst = []int{0, 1, 2}, []int{2, 1, 2}, []int{1, 2, 0, 0, 0}
		}
		star := map[int][]int{0: {1, 2}, 1: {0}, 2: {0, 0}}
		if g, err = topo.NewDistGraph(ctx, w, src, deg, dst, false); err != nil {
			return err
		}
		if in, out := g.NeighborsCount(); me == 3 && (in != 0 || out != 0) {
			return fmt.Errorf("rank 3 has %d in- and %d out-neighbours", in, out)
		}
		if err := runAll(ctx, graphCase(g, me, g.Sources(), len(g.Destinations()), func(p int) []int { return star[p] })); err != nil {
			return fmt.Errorf("star: %w", err)
		}
		return g.World().Free()
	})
}

// TestNeighborInFlight: several nonblocking calls in flight on one Cart whose two
// neighbours are one rank, waited for in reverse order; calls started in turn by several
// goroutines and waited for by them at once; and a receive of the user's on the Cart's
// World, for any source and tag, that none of their messages matches.
func TestNeighborInFlight(t *testing.T) {
	forEachHood(t, []int{2}, func(ctx context.Context, w *runtime.World) error {
		c, err := topo.NewCart(ctx, w, []int{2}, []bool{true}, false)
		if err != nil {
			return err
		}
		defer c.World().Free()
		me, peer := c.World().Rank(), 1-c.World().Rank()
		user := []int64{0}
		ur, err := runtime.Irecv(c.World(), user, runtime.AnySource, runtime.AnyTag)
		if err != nil {
			return err
		}
		const calls = 5
		send, recv := make([][]int64, calls), make([][]int64, calls)
		reqs := make([]*topo.Request, calls)
		for i := range calls {
			send[i], recv[i] = []int64{enc(i, me, 0, 0), enc(i, me, 1, 0)}, []int64{-1, -1}
			if reqs[i], err = topo.IneighborAlltoall(c, send[i], recv[i]); err != nil {
				return err
			}
		}
		for i := calls - 1; i >= 0; i-- {
			if err := reqs[i].Wait(ctx); err != nil {
				return err
			}
			// Slot 0 (the -1 neighbour) holds the peer's block 1, slot 1 its block 0.
			if want := []int64{enc(i, peer, 1, 0), enc(i, peer, 0, 0)}; recv[i][0] != want[0] || recv[i][1] != want[1] {
				return fmt.Errorf("call %d: got %v, want %v", i, recv[i], want)
			}
		}
		// Goroutine i starts its call once goroutine i-1 has started its own, so every
		// rank starts them in one order; they wait at once.
		var wg sync.WaitGroup
		errs := make([]error, calls)
		turn := make([]chan struct{}, calls+1)
		for i := range turn {
			turn[i] = make(chan struct{})
		}
		close(turn[0])
		for i := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got := make([]int64, 2)
				<-turn[i]
				r, err := topo.IneighborAllgather(c, []int64{enc(i, me, 0, 0)}, got)
				close(turn[i+1])
				if err == nil {
					err = r.Wait(ctx)
				}
				if err == nil && (got[0] != enc(i, peer, 0, 0) || got[1] != enc(i, peer, 0, 0)) {
					err = fmt.Errorf("goroutine %d got %v", i, got)
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if done, _, err := ur.Test(); done || err != nil {
			return fmt.Errorf("the user's receive took a message of the neighbourhood collectives (%v)", err)
		}
		if err := runtime.Send(ctx, c.World(), []int64{42}, me, 7); err != nil {
			return err
		}
		if st, err := ur.Wait(ctx); err != nil || user[0] != 42 || st.Tag != 7 {
			return fmt.Errorf("the user's receive: %v, %v, %v", st, user, err)
		}
		return nil
	})
}

// TestNeighborMismatch: on a ring, rank 0 sends two elements where rank 1 expects one
// (runtime.ErrTruncated at rank 1) and none where rank 3 expects one (ErrMismatch at
// rank 3); the other ranks succeed, and each error names the block and the neighbour.
func TestNeighborMismatch(t *testing.T) {
	forEachHood(t, []int{4}, func(ctx context.Context, w *runtime.World) error {
		c, err := topo.NewCart(ctx, w, []int{4}, []bool{true}, false)
		if err != nil {
			return err
		}
		defer c.World().Free()
		me := c.World().Rank()
		sc := []int{1, 1}
		if me == 0 {
			sc = []int{0, 2}
		}
		send := make([]int64, sc[0]+sc[1])
		err = topo.NeighborAlltoallv(ctx, c, send, sc, nil, make([]int64, 2), []int{1, 1}, nil)
		switch me {
		case 1:
			if !errors.Is(err, runtime.ErrTruncated) || !strings.Contains(err.Error(), "rank 1 receiving block 0 (1 elements) from rank 0") {
				return fmt.Errorf("want truncation, got %v", err)
			}
		case 3:
			if !errors.Is(err, runtime.ErrMismatch) || !strings.Contains(err.Error(), "rank 3 received 0 elements from rank 0 into block 1, expected 1") {
				return fmt.Errorf("want a mismatch, got %v", err)
			}
		default:
			if err != nil {
				return err
			}
		}
		// The ranks stay in step: the next call works everywhere.
		return runAll(ctx, cartCase(c))
	})
}

// TestNeighborPersistentAllocs: a persistent neighbourhood collective's Start and Wait
// allocate nothing in steady state (its runtime Requests are reused), on one rank whose
// two neighbours are itself and on two ranks over shm.
func TestNeighborPersistentAllocs(t *testing.T) {
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("shm/n=%d", n), func(t *testing.T) {
			runtimetest.Run(t, n, runtimetest.Options{Transport: "shm"}, func(w *runtime.World) error {
				ctx := context.Background()
				c, err := topo.NewCart(ctx, w, []int{n}, []bool{true}, false)
				if err != nil {
					return err
				}
				defer c.World().Free()
				send, recv := []float64{1, 2}, make([]float64, 2)
				req, err := topo.NeighborAlltoallInit(c, send, recv)
				if err != nil {
					return err
				}
				var runErr error
				allocs := testing.AllocsPerRun(100, func() {
					if err := req.Start(); err != nil {
						runErr = err
					} else if err := req.Wait(ctx); err != nil {
						runErr = err
					}
				})
				switch {
				case runErr != nil:
					return runErr
				case allocs != 0:
					return fmt.Errorf("Start and Wait allocate %v times", allocs)
				case recv[0] != 2 || recv[1] != 1:
					return fmt.Errorf("got %v, want [2 1]", recv)
				}
				return req.Free()
			})
		})
	}
}
