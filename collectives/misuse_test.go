package collectives_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// misuse runs f with a bound and turns a panic into an error.
func misuse(name string, f func() error) error {
	c := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				c <- fmt.Errorf("%s panicked: %v", name, p)
			}
		}()
		c <- f()
	}()
	budget := testbudget.Scale(4 * time.Second)
	select {
	case err := <-c:
		return err
	case <-time.After(budget):
		return fmt.Errorf("%s still blocked after %v", name, budget)
	}
}

// collectiveCalls returns every collective on w with the given buffers, root and op.
func collectiveCalls(ctx context.Context, w *runtime.World, send, recv []int64, root int, op collectives.Op[int64]) map[string]func() error {
	return map[string]func() error{
		"Allreduce":     func() error { return collectives.Allreduce(ctx, w, send, recv, op) },
		"Reduce":        func() error { return collectives.Reduce(ctx, w, send, recv, op, root) },
		"Bcast":         func() error { return collectives.Bcast(ctx, w, recv, root) },
		"Allgather":     func() error { return collectives.Allgather(ctx, w, send, recv) },
		"ReduceScatter": func() error { return collectives.ReduceScatter(ctx, w, send, recv, op) },
		"Alltoall":      func() error { return collectives.Alltoall(ctx, w, send, recv) },
		"Barrier":       func() error { return collectives.Barrier(ctx, w) },
	}
}

// TestMisuseCollectivesNilWorld: every collective with a nil World fails with
// runtime.ErrInvalid naming the call, never a panic.
func TestMisuseCollectivesNilWorld(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(5*time.Second))
	defer cancel()
	for name, f := range collectiveCalls(ctx, nil, make([]int64, 2), make([]int64, 2), 0, collectives.Sum[int64]()) {
		err := misuse(name, f)
		if !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "nil World") ||
			!strings.Contains(strings.ReplaceAll(err.Error(), "_", ""), strings.ToLower(name)) {
			t.Errorf("%s(nil World): %v, want runtime.ErrInvalid naming the call and the nil World", name, err)
		}
	}
}

// TestMisuseCollectivesArgs passes bad arguments that every rank passes alike (so that no
// rank waits for another): roots out of range, zero and nil-function operators, wrong
// recv lengths and overlapping buffers. Each call fails at once with runtime.ErrInvalid
// and a text naming the problem, and a correct call works afterwards.
func TestMisuseCollectivesArgs(t *testing.T) {
	runtimetest.Run(t, 2, runtimetest.Options{Transport: "shm"}, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
		defer cancel()
		sum := collectives.Sum[int64]()
		two, four := make([]int64, 2), make([]int64, 4)
		cases := []struct {
			name string
			f    func() error
			want string
		}{
			{"Reduce root -1", func() error { return collectives.Reduce(ctx, w, two, make([]int64, 2), sum, -1) }, "root"},
			{"Reduce root Size", func() error { return collectives.Reduce(ctx, w, two, make([]int64, 2), sum, 2) }, "root"},
			{"Bcast root -1", func() error { return collectives.Bcast(ctx, w, two, -1) }, "root"},
			{"Bcast root Size", func() error { return collectives.Bcast(ctx, w, two, 2) }, "root"},
			{"Allreduce zero Op", func() error { return collectives.Allreduce(ctx, w, two, make([]int64, 2), collectives.Op[int64]{}) }, "op"},
			{"Allreduce nil user fn", func() error {
				return collectives.Allreduce(ctx, w, two, make([]int64, 2), collectives.NewOp[int64]("mine", nil, true))
			}, "op"},
			{"Reduce zero Op", func() error { return collectives.Reduce(ctx, w, two, make([]int64, 2), collectives.Op[int64]{}, 0) }, "op"},
			{"ReduceScatter zero Op", func() error { return collectives.ReduceScatter(ctx, w, four, two, collectives.Op[int64]{}) }, "op"},
			{"Allreduce recv shorter", func() error { return collectives.Allreduce(ctx, w, four, make([]int64, 3), sum) }, "4"},
			{"Allgather recv not Size*len(send)", func() error { return collectives.Allgather(ctx, w, two, make([]int64, 3)) }, "3"},
			{"Allgather recv nil", func() error { return collectives.Allgather(ctx, w, two, nil) }, "0"},
			{"ReduceScatter send not Size*len(recv)", func() error { return collectives.ReduceScatter(ctx, w, make([]int64, 5), two, sum) }, "5"},
			{"Alltoall recv length", func() error { return collectives.Alltoall(ctx, w, four, make([]int64, 3)) }, "3"},
			{"Alltoall send not a multiple of Size", func() error { return collectives.Alltoall(ctx, w, make([]int64, 3), make([]int64, 3)) }, "3"},
			{"Allreduce same slice", func() error { return collectives.Allreduce(ctx, w, four, four, sum) }, "overlap"},
			{"Allreduce overlapping", func() error { return collectives.Allreduce(ctx, w, four[:3], four[1:], sum) }, "overlap"},
		}
		for _, c := range cases {
			err := misuse(c.name, c.f)
			if !errors.Is(err, runtime.ErrInvalid) && !errors.Is(err, collectives.ErrMismatch) {
				return fmt.Errorf("%s: %v, want runtime.ErrInvalid", c.name, err)
			}
			if !strings.Contains(strings.ToLower(err.Error()), c.want) {
				return fmt.Errorf("%s: error %q does not name %q", c.name, err, c.want)
			}
		}
		// The World's collectives still work.
		recv := make([]int64, 2)
		if err := collectives.Allreduce(ctx, w, []int64{1, int64(w.Rank())}, recv, sum); err != nil {
			return err
		}
		if recv[0] != 2 || recv[1] != 1 {
			return fmt.Errorf("Allreduce after misuse: %v, want [2 1]", recv)
		}
		return nil
	})
}

// TestMisuseCollectivesAfterFinalize: every collective after Finalize fails at once
// with runtime.ErrFinalized, whether or not the World made a collective call before. A
// warm World has its shared-memory scratch mapped, which Finalize unmaps: each call is the
// first after Finalize in a job of its own, so that none is spared by another's failure.
func TestMisuseCollectivesAfterFinalize(t *testing.T) {
	names := []string{"Barrier", "Allreduce", "Reduce", "Bcast", "Allgather", "ReduceScatter", "Alltoall"}
	for _, warm := range []bool{false, true} {
		for _, name := range names {
			t.Run(fmt.Sprintf("warm=%v/%s", warm, name), func(t *testing.T) {
				j, err := runtimetest.Start(context.Background(), 2, runtimetest.Options{Transport: "shm"})
				if err != nil {
					t.Fatal(err)
				}
				defer j.Close()
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
				defer cancel()
				if warm {
					errs := make(chan error, 2)
					for _, w := range j.Worlds {
						go func() {
							errs <- collectives.Allreduce(ctx, w, make([]int64, 4096), make([]int64, 4096), collectives.Sum[int64]())
						}()
					}
					for range 2 {
						if err := <-errs; err != nil {
							t.Fatal(err)
						}
					}
				}
				if err := j.Finalize(ctx); err != nil {
					t.Fatal(err)
				}
				send, recv := []int64{1, 2}, make([]int64, 2)
				switch name {
				case "Allgather":
					recv = make([]int64, 4)
				case "ReduceScatter":
					send = []int64{1, 2, 3, 4}
				}
				f := collectiveCalls(ctx, j.Worlds[0], send, recv, 0, collectives.Sum[int64]())[name]
				if err := misuse(name, f); !errors.Is(err, runtime.ErrFinalized) {
					t.Errorf("%s after Finalize: %v, want runtime.ErrFinalized", name, err)
				}
			})
		}
	}
}

// TestMisuseCollectivesFreedWorld: after World.Free every collective on the World fails
// with runtime.ErrInvalid at once, the shared-memory paths included (they send no
// runtime message that would fail by itself).
func TestMisuseCollectivesFreedWorld(t *testing.T) {
	runtimetest.Run(t, 2, runtimetest.Options{Transport: "shm"}, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
		defer cancel()
		d, err := w.Dup()
		if err != nil {
			return err
		}
		send, recv := make([]int64, 2), make([]int64, 4)
		if err := collectives.Allreduce(ctx, d, send, recv[:2], collectives.Sum[int64]()); err != nil {
			return err // the World's state (shm scratch) exists before the Free
		}
		if err := collectives.Barrier(ctx, d); err != nil {
			return err
		}
		if err := d.Free(); err != nil {
			return err
		}
		for name, f := range collectiveCalls(ctx, d, send, recv, 0, collectives.Sum[int64]()) {
			if err := misuse(name, f); !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "freed") {
				return fmt.Errorf("%s on a freed World: %v, want runtime.ErrInvalid naming the Free", name, err)
			}
		}
		return nil
	})
}
