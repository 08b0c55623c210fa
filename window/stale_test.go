package window

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/runtime/substrate"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// TestStaleKeyAfterFree is the registration-cache bug of libfabric-cray #1000/#1350 made
// impossible: a window is freed and a new one allocated; an origin that kept the old
// window's key cannot reach the new window's memory. The arena's quarantine keeps the new
// window off the freed bytes while it has other space; that keys of reused bytes never
// match again is the arena's TestStressKeyGenerations.
func TestStaleKeyAfterFree(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	runtimetest.Run(t, 2, runtimetest.Options{Transport: "shm"}, func(w *runtime.World) error {
		old, err := Allocate[int64](ctx, w, 1024)
		if err != nil {
			return err
		}
		desc := make([]byte, 64)
		if w.Rank() == 0 {
			d := old.data.AppendDesc(nil)
			copy(desc, d)
			desc = desc[:len(d)]
			if err := runtime.Send(ctx, w, desc, 1, 5); err != nil {
				return err
			}
		} else {
			st, err := runtime.Recv(ctx, w, desc, 0, 5)
			if err != nil {
				return err
			}
			desc = desc[:st.Bytes]
		}
		oldBytes := old.Local()
		if err := old.Free(ctx); err != nil {
			return err
		}
		win, err := Allocate[int64](ctx, w, 1024)
		if err != nil {
			return err
		}
		if w.Rank() == 0 {
			if &win.Local()[0] == &oldBytes[0] {
				return fmt.Errorf("the new window reuses the freed window's bytes while the arena has other space")
			}
			if bytes.Equal(win.data.AppendDesc(nil), desc) {
				return fmt.Errorf("the new window has the old window's key")
			}
			for i := range win.Local() {
				win.Local()[i] = 7
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if w.Rank() == 1 {
			r, err := substrate.Attach(win.comm, 0, desc)
			if err == nil {
				r.Close()
				return fmt.Errorf("attach with the freed window's key succeeded")
			}
			if !errors.Is(err, verbs.ErrAccess) {
				return fmt.Errorf("attach with the freed window's key: %v, want verbs.ErrAccess", err)
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if w.Rank() == 0 {
			for i, v := range win.Local() {
				if v != 7 {
					return fmt.Errorf("new window [%d] = %d, want 7", i, v)
				}
			}
		}
		return win.Free(ctx)
	})
}
