package window_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/window"
)

// TestSplitWorldWindows: windows on Worlds made by runtime's Split (every other job rank,
// in reverse order) address their ranks in the group's numbering, in fence and
// passive-target epochs, over shm, tcp and two pretend hosts (mapped and cached access
// alike), alongside a window on the job's World.
func TestSplitWorldWindows(t *testing.T) {
	for _, hosts := range [][]string{
		{"a", "a", "a", "a", "a", "a"},
		{"a", "a", "a", "b", "b", "b"},
		{"a", "b", "c", "d", "e", "f"},
	} {
		t.Run(strings.Join(hosts, ""), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(40*time.Second))
			defer cancel()
			runtimetest.Run(t, len(hosts), runtimetest.Options{Hosts: hosts}, func(w *runtime.World) error {
				g, err := w.Split(ctx, w.Rank()%2, -w.Rank())
				if err != nil {
					return err
				}
				const n = 600
				gwin, err := window.Allocate[int64](ctx, g, n)
				if err != nil {
					return err
				}
				jwin, err := window.Allocate[int64](ctx, w, n)
				if err != nil {
					return err
				}
				me, size := g.Rank(), g.Size()
				if gwin.Rank() != me || gwin.Size() != size {
					return fmt.Errorf("window rank %d of %d on group rank %d of %d", gwin.Rank(), gwin.Size(), me, size)
				}
				next, prev := (me+1)%size, (me+size-1)%size
				src := make([]int64, n)
				for i := range src {
					src[i] = int64(me*1_000_000 + i)
				}
				jsrc := make([]int64, n)
				for i := range jsrc {
					jsrc[i] = int64(-w.Rank()*1_000_000 - i)
				}
				if err := gwin.Fence(ctx, 0); err != nil {
					return err
				}
				if err := jwin.Fence(ctx, 0); err != nil {
					return err
				}
				if err := gwin.Put(src, next, 0); err != nil {
					return err
				}
				if err := jwin.Put(jsrc, (w.Rank()+1)%w.Size(), 0); err != nil {
					return err
				}
				if err := gwin.Fence(ctx, window.NoSucceed); err != nil {
					return err
				}
				if err := jwin.Fence(ctx, window.NoSucceed); err != nil {
					return err
				}
				for i, v := range gwin.Local() {
					if v != int64(prev*1_000_000+i) {
						return fmt.Errorf("group window: local[%d] = %d, want group rank %d's", i, v, prev)
					}
				}
				jprev := (w.Rank() + w.Size() - 1) % w.Size()
				for i, v := range jwin.Local() {
					if v != int64(-jprev*1_000_000-i) {
						return fmt.Errorf("job window: local[%d] = %d, want job rank %d's", i, v, jprev)
					}
				}
				// Passive target: every member adds its group rank + 1 to group rank 0's
				// first word (once group rank 0 has checked it), then reads it back once
				// all have.
				if err := collectives.Barrier(ctx, g); err != nil {
					return err
				}
				if err := gwin.Lock(ctx, window.Shared, 0, 0); err != nil {
					return err
				}
				if err := gwin.Accumulate([]int64{int64(me + 1)}, 0, 0, collectives.Sum[int64]()); err != nil {
					return err
				}
				if err := gwin.Unlock(ctx, 0); err != nil {
					return err
				}
				if err := collectives.Barrier(ctx, g); err != nil {
					return err
				}
				got := []int64{0}
				if err := gwin.Lock(ctx, window.Shared, 0, 0); err != nil {
					return err
				}
				if err := gwin.Get(got, 0, 0); err != nil {
					return err
				}
				if err := gwin.Unlock(ctx, 0); err != nil {
					return err
				}
				if want := int64((size-1)*1_000_000) + int64(size*(size+1)/2); got[0] != want {
					return fmt.Errorf("group rank 0's word is %d, want %d", got[0], want)
				}
				if err := gwin.Free(ctx); err != nil {
					return err
				}
				return jwin.Free(ctx)
			})
		})
	}
}
