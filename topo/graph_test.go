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

// TestGraph: a ring with one chord over 4 of 5 ranks: neighbours as given, a message to
// each neighbour and from each, the rank left out, and argument errors.
func TestGraph(t *testing.T) {
	forEach(t, []int{5}, func(ctx context.Context, w *runtime.World) error {
		// 0-1-2-3-0 and the chord 0-2.
		index := []int{3, 5, 8, 10}
		edges := []int{1, 3, 2, 0, 2, 1, 3, 0, 2, 0}
		want := [][]int{{1, 3, 2}, {0, 2}, {1, 3, 0}, {2, 0}}
		g, err := topo.NewGraph(ctx, w, index, edges, false)
		if err != nil {
			return err
		}
		if w.Rank() == 4 {
			if g != nil {
				return errors.New("rank 4 of a 4-node graph got a Graph")
			}
			return nil
		}
		defer g.World().Free()
		if g.World().Size() != 4 || !slices.Equal(g.Index(), index) || !slices.Equal(g.Edges(), edges) {
			return fmt.Errorf("graph of %d ranks, index %v edges %v", g.World().Size(), g.Index(), g.Edges())
		}
		for r, nb := range want {
			got, err := g.Neighbors(r)
			cnt, err2 := g.NeighborsCount(r)
			if err != nil || err2 != nil || !slices.Equal(got, nb) || cnt != len(nb) {
				return fmt.Errorf("rank %d: neighbours %v (%d), %v, %v; want %v", r, got, cnt, err, err2, nb)
			}
		}
		me := g.World().Rank()
		nb, _ := g.Neighbors(me)
		for _, x := range nb {
			got := []int64{-1}
			if _, err := runtime.Sendrecv(ctx, g.World(), []int64{int64(me)}, x, 5, got, x, 5); err != nil {
				return err
			}
			if got[0] != int64(x) {
				return fmt.Errorf("from neighbour %d got %d", x, got[0])
			}
		}
		bad := []struct {
			err   error
			names string
		}{
			{second(g.Neighbors(4)), "rank 4 out of range [0, 4)"},
			{second(g.NeighborsCount(-1)), "rank -1 out of range"},
			{second(topo.NewGraph(ctx, w, []int{2, 1}, []int{1, 0}, false)), "index[1] = 1 is below"},
			{second(topo.NewGraph(ctx, w, []int{1, 3}, []int{1, 0}, false)), "the last index entry is 3, for 2 edges"},
			{second(topo.NewGraph(ctx, w, []int{1, 2}, []int{1, 2}, false)), "edges[1] = 2 is not a node"},
			{second(topo.NewGraph(ctx, w, make([]int, 6), nil, false)), "6 nodes for a World of 5"},
		}
		for _, b := range bad {
			if !errors.Is(b.err, runtime.ErrInvalid) || !strings.Contains(b.err.Error(), b.names) {
				return fmt.Errorf("error %v, want ErrInvalid naming %q", b.err, b.names)
			}
		}
		return nil
	})
}
