package topo_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/internal/trace"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/runtime/substrate"
	"github.com/gorma-hpc/gorma/topo"
)

// TestObserveNeighbor: under the profile, a neighbourhood collective on a periodic ring
// counts one call of its kind and each block it sends as collective data for its
// neighbour; its messages on the topology's own World count as no point-to-point
// traffic and no Isend or Irecv call. The blocking, nonblocking and persistent forms
// count alike, and each call is a Collective event named by its kind.
func TestObserveNeighbor(t *testing.T) {
	opt := runtimetest.Options{Transport: "shm", Env: runtimetest.ObserveBoth(t.TempDir())}
	runtimetest.Run(t, 4, opt, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
		defer cancel()
		o, _ := substrate.Observe(w)
		if o == nil || o.Prof == nil || o.Rec == nil {
			return fmt.Errorf("observer %v: want the profile and the timeline on", o)
		}
		c, err := topo.NewCart(ctx, w, []int{4}, []bool{true}, false)
		if err != nil {
			return err
		}
		me, p := w.Rank(), w.Size()
		left, right := (me+p-1)%p, (me+1)%p
		steps := []struct {
			kind prof.CallKind
			each uint64 // bytes to each neighbour
			run  func() error
		}{
			{prof.CallNeighborAlltoall, 16, func() error {
				return topo.NeighborAlltoall(ctx, c, make([]int64, 4), make([]int64, 4))
			}},
			{prof.CallNeighborAllgather, 12, func() error {
				r, err := topo.IneighborAllgather(c, make([]int32, 3), make([]int32, 6))
				if err != nil {
					return err
				}
				return r.Wait(ctx)
			}},
			{prof.CallNeighborAllgatherv, 12, func() error { // its own kind, not NeighborAllgather's
				return topo.NeighborAllgatherv(ctx, c, make([]int32, 3), make([]int32, 6), []int{3, 3}, []int{0, 3})
			}},
			{prof.CallNeighborAlltoall, 8, func() error {
				r, err := topo.NeighborAlltoallInit(c, make([]byte, 16), make([]byte, 16))
				if err != nil {
					return err
				}
				defer r.Free()
				if err := r.Start(); err != nil {
					return err
				}
				return r.Wait(ctx)
			}},
		}
		for i, st := range steps {
			before := o.Profile()
			if err := st.run(); err != nil {
				return fmt.Errorf("step %d (%v): %w", i, st.kind, err)
			}
			after := o.Profile()
			for _, k := range []prof.CallKind{st.kind, prof.CallSend, prof.CallRecv} {
				want := uint64(0)
				if k == st.kind {
					want = 1
				}
				if d := after.Call(k).Calls - before.Call(k).Calls; d != want {
					return fmt.Errorf("step %d: %d %v calls counted, want %d", i, d, k, want)
				}
			}
			for q := range p {
				want := uint64(0)
				if q == left || q == right {
					want = st.each
				}
				if db := after.Coll.Bytes[q] - before.Coll.Bytes[q]; db != want {
					return fmt.Errorf("step %d (%v): %d collective bytes to rank %d, want %d", i, st.kind, db, q, want)
				}
				if dp := after.P2P.Bytes[q] - before.P2P.Bytes[q]; dp != 0 {
					return fmt.Errorf("step %d (%v): %d point-to-point bytes to rank %d, want 0", i, st.kind, dp, q)
				}
			}
		}
		d := o.Timeline()
		var got []string
		for _, ev := range d.Events {
			if ev.Kind == trace.Collective {
				got = append(got, d.Labels[ev.Label])
			}
		}
		if want := []string{"NeighborAlltoall", "NeighborAllgather", "NeighborAllgatherv", "NeighborAlltoall"}; !slices.Equal(got, want) {
			return fmt.Errorf("Collective events %q, want %q", got, want)
		}
		return nil
	})
}
