package topo_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/topo"
)

// distTraffic sends this rank's rank to each out-neighbour and checks that one message
// arrives from each in-neighbour.
func distTraffic(ctx context.Context, g *topo.DistGraph) error {
	w, me := g.World(), g.World().Rank()
	var reqs []*runtime.Request
	for _, d := range g.Destinations() {
		r, err := runtime.Isend(w, []int64{int64(me)}, d, 9)
		if err != nil {
			return err
		}
		reqs = append(reqs, r)
	}
	var got []int
	for range g.Sources() {
		v := []int64{-1}
		if _, err := runtime.Recv(ctx, w, v, runtime.AnySource, 9); err != nil {
			return err
		}
		got = append(got, int(v[0]))
	}
	for _, r := range reqs {
		if _, err := r.Wait(ctx); err != nil {
			return err
		}
	}
	if want := slices.Sorted(slices.Values(g.Sources())); !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		return fmt.Errorf("messages from %v, in-neighbours %v", got, want)
	}
	return nil
}

// TestDistGraphAdjacent: a ring with a self-loop at rank 0, its traffic, and an edge one
// end does not list or a rank out of range failing at every rank.
func TestDistGraphAdjacent(t *testing.T) {
	forEach(t, []int{4}, func(ctx context.Context, w *runtime.World) error {
		n, me := w.Size(), w.Rank()
		src, dst := []int{(me + n - 1) % n}, []int{(me + 1) % n}
		if me == 0 {
			src, dst = append(src, 0), append(dst, 0)
		}
		g, err := topo.NewDistGraphAdjacent(ctx, w, src, dst, false)
		if err != nil {
			return err
		}
		in, out := g.NeighborsCount()
		if in != len(src) || out != len(dst) || !slices.Equal(g.Sources(), src) || !slices.Equal(g.Destinations(), dst) {
			return fmt.Errorf("neighbours %v -> %v (%d, %d)", g.Sources(), g.Destinations(), in, out)
		}
		if err := distTraffic(ctx, g); err != nil {
			return err
		}
		if err := g.World().Free(); err != nil {
			return err
		}

		// Rank 2 forgets its in-neighbour.
		src2 := src
		if me == 2 {
			src2 = nil
		}
		_, err = topo.NewDistGraphAdjacent(ctx, w, src2, dst, false)
		names := "rank 2 passed bad arguments"
		if me == 2 {
			names = "rank 2 lists sources [], but the ranks whose destinations name it are [1]"
		}
		if !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), names) {
			return fmt.Errorf("a missing source: %v, want ErrInvalid naming %q", err, names)
		}
		// Rank 1 names a rank beyond the World.
		dst3 := dst
		if me == 1 {
			dst3 = []int{n}
		}
		_, err = topo.NewDistGraphAdjacent(ctx, w, src, dst3, false)
		names = "rank 1 passed bad arguments"
		if me == 1 {
			names = fmt.Sprintf("destinations[0] = %d is not a rank", n)
		}
		if !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), names) {
			return fmt.Errorf("a rank out of range: %v, want ErrInvalid naming %q", err, names)
		}
		return nil
	})
}

// TestDistGraph: rank 0 gives every edge of a ring and a chord, the others none; then
// each gives its own; then bad degrees at one rank fail at every rank.
func TestDistGraph(t *testing.T) {
	forEach(t, []int{5}, func(ctx context.Context, w *runtime.World) error {
		n, me := w.Size(), w.Rank()
		var sources, degrees, dests []int
		if me == 0 {
			for r := range n {
				sources, degrees, dests = append(sources, r), append(degrees, 1), append(dests, (r+1)%n)
			}
			sources, degrees, dests = append(sources, 0), append(degrees, 1), append(dests, 2)
		}
		g, err := topo.NewDistGraph(ctx, w, sources, degrees, dests, true)
		if err != nil {
			return err
		}
		wantSrc, wantDst := []int{(me + n - 1) % n}, []int{(me + 1) % n}
		switch me {
		case 0:
			wantDst = append(wantDst, 2)
		case 2:
			wantSrc = append(wantSrc, 0)
		}
		if !slices.Equal(g.Sources(), wantSrc) || !slices.Equal(g.Destinations(), wantDst) {
			return fmt.Errorf("neighbours %v -> %v, want %v -> %v", g.Sources(), g.Destinations(), wantSrc, wantDst)
		}
		if err := distTraffic(ctx, g); err != nil {
			return err
		}
		if err := g.World().Free(); err != nil {
			return err
		}

		// Each rank gives its edges to the two ranks after it, in one list.
		g, err = topo.NewDistGraph(ctx, w, []int{me}, []int{2}, []int{(me + 1) % n, (me + 2) % n}, false)
		if err != nil {
			return err
		}
		if in, out := g.NeighborsCount(); in != 2 || out != 2 || !slices.Equal(g.Sources(), []int{(me + n - 2) % n, (me + n - 1) % n}) && !slices.Equal(g.Sources(), []int{(me + n - 1) % n, (me + n - 2) % n}) {
			return fmt.Errorf("neighbours %v -> %v", g.Sources(), g.Destinations())
		}
		if err := distTraffic(ctx, g); err != nil {
			return err
		}
		if err := g.World().Free(); err != nil {
			return err
		}

		degrees = []int{1}
		if me == 3 {
			degrees = []int{2}
		}
		_, err = topo.NewDistGraph(ctx, w, []int{me}, degrees, []int{me}, false)
		names := "rank 3 passed bad arguments"
		if me == 3 {
			names = "the degrees add up to 2, for 1 destinations"
		}
		if !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), names) {
			return fmt.Errorf("bad degrees: %v, want ErrInvalid naming %q", err, names)
		}
		return nil
	})
}
