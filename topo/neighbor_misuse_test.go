package topo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/topo"
)

// TestNeighborMisuse: bad arguments fail at every rank that passes them with
// runtime.ErrInvalid naming the rank and what is wrong, before anything is sent, and the
// ranks stay in step for the next call; misused Requests; a freed topology.
func TestNeighborMisuse(t *testing.T) {
	forEachHood(t, []int{2}, func(ctx context.Context, w *runtime.World) error {
		c, err := topo.NewCart(ctx, w, []int{2}, []bool{true}, false)
		if err != nil {
			return err
		}
		me := c.World().Rank()
		rank := fmt.Sprintf("rank %d: ", me)
		var none *topo.Cart
		var noCtx context.Context
		buf := make([]byte, 16)
		cases := []struct {
			name string
			err  error
			text string
		}{
			{"nil topology", topo.NeighborAllgather[int64](ctx, nil, nil, nil), "nil topology"},
			{"nil Cart", topo.NeighborAllgather[int64](ctx, none, nil, nil), "a nil topology"},
			{"nil ctx", topo.NeighborAllgather(noCtx, c, []int64{1}, make([]int64, 2)), "nil context"},
			{"allgather recv", topo.NeighborAllgather(ctx, c, []int64{1}, make([]int64, 3)), rank + "len(recv) is 3, for 2 in-neighbour slots of len(send) 1"},
			{"allgather overlap", func() error { b := make([]int64, 3); return topo.NeighborAllgather(ctx, c, b[1:2], b[:2]) }(), rank + "send and recv overlap"},
			{"allgatherv counts", topo.NeighborAllgatherv(ctx, c, []int64{1}, make([]int64, 2), []int{1}, nil), rank + "1 recv counts for 2 neighbour slots"},
			{"allgatherv overlapping blocks", topo.NeighborAllgatherv(ctx, c, []int64{1}, make([]int64, 2), []int{1, 1}, []int{1, 1}), rank + "blocks 0 and 1 of recv overlap"},
			{"allgatherv outside", topo.NeighborAllgatherv(ctx, c, []int64{1}, make([]int64, 2), []int{1, 1}, []int{0, 2}), rank + "block 1 of recv, [2, 3), is outside len(recv) 2"},
			{"allgatherv sum", topo.NeighborAllgatherv(ctx, c, []int64{1}, make([]int64, 3), []int{1, 1}, nil), rank + "len(recv) is 3, but its counts add up to 2"},
			{"alltoall lengths", topo.NeighborAlltoall(ctx, c, make([]int64, 3), make([]int64, 2)), rank + "len(send) 3 and len(recv) 2 are not 2 and 2 blocks of one length"},
			{"alltoallv negative", topo.NeighborAlltoallv(ctx, c, make([]int64, 2), []int{-1, 3}, nil, make([]int64, 2), []int{1, 1}, nil), rank + "send count -1 (block 0) is negative"},
			{"alltoallw sizes", topo.NeighborAlltoallw(ctx, c, buf[:8], topo.ByteBlocks{Counts: []int{1, 1}, Displs: []int{0, 4}, Sizes: []int{4, 0}}, buf[8:], topo.ByteBlocks{Counts: []int{4, 4}, Displs: []int{0, 4}}), rank + "sendBlocks.Sizes[1] = 0 is not positive"},
			{"alltoallw displs", topo.NeighborAlltoallw(ctx, c, buf[:8], topo.ByteBlocks{Counts: []int{4, 4}}, buf[8:], topo.ByteBlocks{Counts: []int{4, 4}, Displs: []int{0, 4}}), rank + "len(sendBlocks.Displs) is 0 for 2 neighbour slots"},
			{"alltoallw overlap", topo.NeighborAlltoallw(ctx, c, buf[:8], topo.ByteBlocks{Counts: []int{4, 4}, Displs: []int{0, 4}}, buf[4:12], topo.ByteBlocks{Counts: []int{4, 4}, Displs: []int{0, 4}}), rank + "send and recv overlap"},
		}
		for _, tc := range cases {
			if !errors.Is(tc.err, runtime.ErrInvalid) || !strings.Contains(fmt.Sprint(tc.err), tc.text) {
				return fmt.Errorf("%s: got %v, want ErrInvalid with %q", tc.name, tc.err, tc.text)
			}
		}
		// The failed calls sent nothing and the ranks are still in step.
		if err := runAll(ctx, cartCase(c)); err != nil {
			return err
		}

		nb, err := topo.IneighborAllgather(c, []int64{1}, make([]int64, 2))
		if err != nil {
			return err
		}
		if err := nb.Start(); !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "not a persistent Request") {
			return fmt.Errorf("Start of a nonblocking Request: %v", err)
		}
		if err := nb.Wait(ctx); err != nil {
			return err
		}
		p, err := topo.NeighborAllgatherInit(c, []int64{1}, make([]int64, 2))
		if err != nil {
			return err
		}
		if err := p.Wait(ctx); err != nil {
			return fmt.Errorf("Wait on a persistent Request never started: %v", err)
		}
		if err := p.Start(); err != nil {
			return err
		}
		for _, e := range []error{p.Start(), p.Free()} {
			if !errors.Is(e, runtime.ErrInvalid) || !strings.Contains(e.Error(), "the Request is active") {
				return fmt.Errorf("Start or Free of an active Request: %v", e)
			}
		}
		if err := p.Wait(ctx); err != nil {
			return err
		}
		if err := p.Free(); err != nil {
			return err
		}
		for _, e := range []error{p.Start(), p.Free(), p.Wait(ctx)} {
			if !errors.Is(e, runtime.ErrInvalid) || !strings.Contains(e.Error(), "the Request was freed") {
				return fmt.Errorf("a freed Request: %v", e)
			}
		}

		// A Wait whose ctx ends leaves the Request active, to be waited for again: rank 1
		// starts its call only after rank 0's Wait has given up.
		var late *topo.Request
		if me == 0 {
			if late, err = topo.IneighborAllgather(c, []int64{1}, make([]int64, 2)); err != nil {
				return err
			}
			done, cancel := context.WithCancel(ctx)
			cancel()
			if err := late.Wait(done); !errors.Is(err, context.Canceled) {
				return fmt.Errorf("Wait with an ended ctx: %v", err)
			}
		}
		if err := runtime.Barrier(ctx, c.World()); err != nil {
			return err
		}
		if me == 1 {
			if late, err = topo.IneighborAllgather(c, []int64{1}, make([]int64, 2)); err != nil {
				return err
			}
		}
		if err := late.Wait(ctx); err != nil {
			return err
		}

		if err := c.World().Free(); err != nil {
			return err
		}
		err = topo.NeighborAllgather(ctx, c, []int64{1}, make([]int64, 2))
		if !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "the topology's World was freed") {
			return fmt.Errorf("after Free: %v", err)
		}
		return nil
	})
}
