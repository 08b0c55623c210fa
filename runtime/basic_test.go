package runtime_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

func TestSmokeRing(t *testing.T) {
	for _, tr := range []string{"shm", "tcp"} {
		for _, n := range []int{2, 3, 4} {
			t.Run(fmt.Sprintf("%s/%d", tr, n), func(t *testing.T) {
				runtimetest.Run(t, n, runtimetest.Options{Transport: tr}, func(w *runtime.World) error {
					ctx := context.Background()
					buf := []int64{int64(w.Rank())}
					next, prev := (w.Rank()+1)%n, (w.Rank()+n-1)%n
					if err := runtime.Send(ctx, w, buf, next, 5); err != nil {
						return err
					}
					got := make([]int64, 1)
					st, err := runtime.Recv(ctx, w, got, prev, 5)
					if err != nil {
						return err
					}
					if got[0] != int64(prev) || st.Source != prev || st.Count != 1 || st.Bytes != 8 {
						return fmt.Errorf("got %v status %+v", got, st)
					}
					return runtime.Barrier(ctx, w)
				})
			})
		}
	}
}
