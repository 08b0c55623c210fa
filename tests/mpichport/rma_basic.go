package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

func init() {
	register("rma-test1", "rma/test1.c", 2, rmaTest1)
	register("rma-test2", "rma/test2.c", 2, rmaTest2(false, false))
	register("rma-test2_shm", "rma/test2.c", 2, rmaTest2(true, false))
	register("rma-wintest", "rma/wintest.c", 2, rmaTest2(false, true))
	register("rma-wintest_shm", "rma/wintest.c", 2, rmaTest2(true, true))
	register("rma-test3", "rma/test3.c", 2, rmaTest3(false))
	register("rma-test3_shm", "rma/test3.c", 2, rmaTest3(true))
	register("rma-test4", "rma/test4.c", 2, rmaTest4)
	register("rma-test5", "rma/test5.c", 2, rmaTest5)
	register("rma-mixedsync", "rma/mixedsync.c", 4, rmaMixedsync)
	register("rma-fetchandadd", "rma/fetchandadd.c", 7, rmaFetchandadd)
	register("rma-accfence2", "rma/accfence2.c", 4, rmaAccfence2)
	register("rma-lockcontention", "rma/lockcontention.c", 3, rmaLockcontention)
}

// inFirst runs f on the World of ranks 0 to n-1 (the others get no World), as the
// MPICH tests that split a small communicator off MPI_COMM_WORLD do.
func inFirst(ctx context.Context, w *runtime.World, n int, f func(c *runtime.World) error) error {
	color := runtime.NoColor
	if w.Rank() < n {
		color = 0
	}
	c, err := split(ctx, w, color)
	if err != nil || c == nil {
		return err
	}
	if err := f(c); err != nil {
		return err
	}
	return c.Free()
}

// rmaTest1: a Fence epoch in which rank 0 Puts element by element into rank 1 while
// rank 1 Gets element by element from rank 0 and Accumulates (sum) its last element.
func rmaTest1(ctx context.Context, w *runtime.World) error {
	const size = 100
	return inFirst(ctx, w, 2, func(c *runtime.World) error {
		var a, b []int32
		if c.Rank() == 0 {
			a = seq(size, func(i int) int32 { return int32(i) })
			b = slices.Clone(a)
		} else {
			a = seq(size, func(i int) int32 { return int32(-3 * i) })
			b = seq(size, func(i int) int32 { return int32(-4 * i) })
		}
		win, err := window.Create(ctx, c, b)
		if err != nil {
			return err
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		for i := 0; i < size-1; i++ {
			if c.Rank() == 0 {
				err = win.Put(a[i:i+1], 1, i)
			} else {
				err = win.Get(a[i:i+1], 0, i)
			}
			if err != nil {
				return err
			}
		}
		if c.Rank() == 1 {
			if err := win.Accumulate(a[size-1:], 0, size-1, collectives.Sum[int32]()); err != nil {
				return err
			}
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		local := win.Local()
		if c.Rank() == 1 {
			err = same("Put/Get: A against B", a[:size-1], local[:size-1])
		} else if got, want := local[size-1], int32(size-1-3*(size-1)); got != want {
			err = fmt.Errorf("accumulate: B[%d] is %d, want %d", size-1, got, want)
		}
		return first(err, win.Free(ctx))
	})
}

// newWin makes a window of n elements over fresh memory: Allocate if alloc (the _shm
// variants, built with -DUSE_WIN_ALLOCATE), else Create (an empty one for n == 0).
func newWin[T runtime.Elem](ctx context.Context, c *runtime.World, n int, alloc bool) (*window.Win[T], error) {
	if alloc {
		return window.Allocate[T](ctx, c, n)
	}
	var buf []T
	if n > 0 {
		buf = make([]T, n)
	}
	return window.Create(ctx, c, buf)
}

// rmaTest2: PSCW with an empty window at the origin: rank 0 Puts the first 100 elements
// of rank 1 and Gets the next 100 in one access epoch. Rank 1 stores its window under a
// lock on itself before it Posts. alloc: the window is Allocated (test2_shm); poll: the
// target ends its exposure epoch by polling Test instead of Wait (wintest).
func rmaTest2(alloc, poll bool) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		return pscwPutGet(ctx, w, alloc, poll)
	}
}

func pscwPutGet(ctx context.Context, w *runtime.World, alloc, poll bool) error {
	const size1, size2 = 100, 200
	return inFirst(ctx, w, 2, func(c *runtime.World) error {
		if c.Rank() == 0 {
			a := seq(size2, func(i int) int32 { return int32(i) })
			b := slices.Clone(a)
			win, err := newWin[int32](ctx, c, 0, alloc)
			if err != nil {
				return err
			}
			if err := win.Start(ctx, []int{1}, 0); err != nil {
				return err
			}
			for i := 0; i < size1; i++ {
				if err := win.Put(a[i:i+1], 1, i); err != nil {
					return err
				}
			}
			for i := 0; i < size1; i++ {
				if err := win.Get(b[i:i+1], 1, size1+i); err != nil {
					return err
				}
			}
			if err := win.Complete(ctx); err != nil {
				return err
			}
			want := seq(size1, func(i int) int32 { return int32(-4 * (i + size1)) })
			return first(same("Get", b[:size1], want), win.Free(ctx))
		}
		win, err := newWin[int32](ctx, c, size2, alloc)
		if err != nil {
			return err
		}
		if err := win.Lock(ctx, window.Shared, c.Rank(), 0); err != nil {
			return err
		}
		b := win.Local()
		for i := range b {
			b[i] = int32(-4 * i)
		}
		if err := win.Unlock(ctx, c.Rank()); err != nil {
			return err
		}
		if err := win.Post(ctx, []int{0}, 0); err != nil {
			return err
		}
		for done := false; !done; {
			if !poll {
				done, err = true, win.Wait(ctx)
			} else {
				done, err = win.Test()
			}
			if err != nil {
				return err
			}
		}
		want := seq(size1, func(i int) int32 { return int32(i) })
		return first(same("Put", b[:size1], want), win.Free(ctx))
	})
}

// rmaTest3: one large Put (1 Mi ints) in a PSCW epoch while the target, between Post
// and Wait, receives a message of the same size from the origin. alloc: the window is
// Allocated (test3_shm).
func rmaTest3(alloc bool) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		return pscwPutSend(ctx, w, alloc)
	}
}

func pscwPutSend(ctx context.Context, w *runtime.World, alloc bool) error {
	const size = 1 << 20
	return inFirst(ctx, w, 2, func(c *runtime.World) error {
		if c.Rank() == 0 {
			a := seq(size, func(i int) int32 { return int32(i) })
			b := seq(size, func(i int) int32 { return int32(size + i) })
			win, err := newWin[int32](ctx, c, 0, alloc)
			if err != nil {
				return err
			}
			if err := win.Start(ctx, []int{1}, 0); err != nil {
				return err
			}
			if err := win.Put(a, 1, 0); err != nil {
				return err
			}
			if err := win.Complete(ctx); err != nil {
				return err
			}
			if err := runtime.Send(ctx, c, b, 1, 100); err != nil {
				return err
			}
			return win.Free(ctx)
		}
		a := make([]int32, size)
		win, err := newWin[int32](ctx, c, size, alloc)
		if err != nil {
			return err
		}
		if err := win.Lock(ctx, window.Shared, c.Rank(), 0); err != nil {
			return err
		}
		b := win.Local()
		for i := range b {
			b[i] = int32(-4 * i)
			a[i] = b[i]
		}
		if err := win.Unlock(ctx, c.Rank()); err != nil {
			return err
		}
		if err := win.Post(ctx, []int{0}, 0); err != nil {
			return err
		}
		if _, err := runtime.Recv(ctx, c, a, 0, 100); err != nil {
			return err
		}
		if err := win.Wait(ctx); err != nil {
			return err
		}
		return first(same("Put", b, seq(size, func(i int) int32 { return int32(i) })),
			same("Send/Recv", a, seq(size, func(i int) int32 { return int32(size + i) })),
			win.Free(ctx))
	})
}

// rmaTest4: passive target, one shared lock per element: rank 0 Puts 100 elements and
// Gets the next 100 from rank 1, twice, the second time with NoCheck; rank 1 only
// creates and frees its window.
func rmaTest4(ctx context.Context, w *runtime.World) error {
	const size1, size2 = 100, 200
	return inFirst(ctx, w, 2, func(c *runtime.World) error {
		if c.Rank() == 0 {
			a := seq(size2, func(i int) int32 { return int32(i) })
			b := slices.Clone(a)
			win, err := window.Create[int32](ctx, c, nil)
			if err != nil {
				return err
			}
			for j := 0; j < 2; j++ {
				assert := window.Assert(0)
				if j == 1 {
					assert = window.NoCheck
				}
				for i := 0; i < size1; i++ {
					if err := first(win.Lock(ctx, window.Shared, 1, assert), win.Put(a[i:i+1], 1, i), win.Unlock(ctx, 1)); err != nil {
						return err
					}
				}
				for i := 0; i < size1; i++ {
					if err := first(win.Lock(ctx, window.Shared, 1, assert), win.Get(b[i:i+1], 1, size1+i), win.Unlock(ctx, 1)); err != nil {
						return err
					}
				}
			}
			if err := win.Free(ctx); err != nil {
				return err
			}
			return same("Get", b[:size1], seq(size1, func(i int) int32 { return int32(-4 * (i + size1)) }))
		}
		b := seq(size2, func(i int) int32 { return int32(-4 * i) })
		win, err := window.Create(ctx, c, b)
		if err != nil {
			return err
		}
		if err := win.Free(ctx); err != nil {
			return err
		}
		return same("Put", b[:size1], seq(size1, func(i int) int32 { return int32(i) }))
	})
}

// rmaTest5: both ranks Get element by element from each other in one Fence epoch,
// into elements they had set to other values first.
func rmaTest5(ctx context.Context, w *runtime.World) error {
	const size = 2000
	return inFirst(ctx, w, 2, func(c *runtime.World) error {
		me, peer := c.Rank(), 1-c.Rank()
		mine := seq(size, func(i int) int32 { return int32([]int{500, 1000}[me] + i) })
		win, err := window.Create(ctx, c, mine)
		if err != nil {
			return err
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		got := make([]int32, size)
		for i := range got {
			got[i] = int32([]int{100, 200}[me] + i)
			if err := win.Get(got[i:i+1], peer, i); err != nil {
				return err
			}
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		want := seq(size, func(i int) int32 { return int32([]int{500, 1000}[peer] + i) })
		return first(same(fmt.Sprintf("Get from rank %d", peer), got, want), win.Free(ctx))
	})
}
