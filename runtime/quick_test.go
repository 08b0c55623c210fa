package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
)

// TestQuickReport: a send that left at once and a receive that matched are marked quick,
// and Wait and WaitAll report them (statuses, values) without the lock. A typed receive,
// whose report unpacks, and a persistent send, whose report makes it inactive, are never
// quick, and report as before.
func TestQuickReport(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			peer := 1 - w.Rank()
			if w.Rank() == 0 {
				var r runtime.Request
				if err := runtime.IsendWith(&r, w, []int64{7}, peer, 1); err != nil {
					return err
				}
				for !runtime.Quick(&r) { // an eager send completes at once, or once its slot is free
					if _, _, err := r.Test(); err != nil {
						return err
					}
				}
				if st, err := r.Wait(ctx); err != nil || st != (runtime.Status{}) {
					return fmt.Errorf("quick Wait of a send: %+v, %v", st, err)
				}
				p, err := runtime.SendInit(w, []int64{8}, peer, 2)
				if err != nil {
					return err
				}
				for range 3 {
					if err := runtime.Start(p); err != nil {
						return err
					}
					if _, err := p.Wait(ctx); err != nil {
						return err
					}
					if runtime.Quick(p) {
						return fmt.Errorf("a persistent send is quick")
					}
				}
				return p.Free()
			}
			var a runtime.Request
			va, vb := make([]int64, 1), make([]int64, 2)
			if err := runtime.IrecvWith(&a, w, va, peer, 1); err != nil {
				return err
			}
			typ := datatype.Of[int64]()
			rb, err := runtime.IrecvType(w, vb, 1, typ, peer, 2)
			if err != nil {
				return err
			}
			if _, err := a.Wait(ctx); err != nil {
				return err
			}
			if !runtime.Quick(&a) || va[0] != 7 {
				return fmt.Errorf("a received message: quick %v, value %d", runtime.Quick(&a), va[0])
			}
			sts := make([]runtime.Status, 1)
			if err := runtime.WaitAll(ctx, []*runtime.Request{&a}, sts); err != nil || sts[0].Source != peer || sts[0].Bytes != 8 {
				return fmt.Errorf("WaitAll of a quick receive: %+v, %v", sts, err)
			}
			st, err := rb.Wait(ctx)
			if err != nil || runtime.Quick(rb) || st.Count != 1 || !slices.Equal(vb, []int64{8, 0}) {
				return fmt.Errorf("a typed receive: %+v, %v, quick %v, values %v", st, err, runtime.Quick(rb), vb)
			}
			for range 2 {
				if _, err := runtime.Recv(ctx, w, vb[:1], peer, 2); err != nil {
					return err
				}
			}
			return nil
		})
	})
}
