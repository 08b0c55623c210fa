package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// rmaMixedsync: rank 1 writes rank 0's window in an exclusive-lock epoch, then (after a
// Barrier) in a Fence epoch at a displacement one further, twice over, in three forms:
// Puts; Accumulate(sum) + Put then Accumulate(replace) + Put; Accumulate(replace) + Put
// + Get. Rank 0 checks the Fence epoch's data each time.
func rmaMixedsync(ctx context.Context, w *runtime.World) error {
	const n0, n1, n2 = 1000, 1, 100
	const count = n0 + n1 + n2 + 2
	const dest, source = 0, 1
	buf0 := seq(n0, func(i int) int32 { return int32(i) })
	buf1 := seq(n1, func(i int) int32 { return int32(i + n0) })
	buf2 := seq(n2, func(i int) int32 { return int32(i + n0 + n1) })
	inbuf2 := make([]int32, n2)
	win, err := window.Create(ctx, w, make([]int32, count))
	if err != nil {
		return err
	}
	sum, repl := collectives.Sum[int32](), collectives.Replace[int32]()
	type step func(disp int) error
	phases := []struct {
		name       string
		lock, fnce []step
		checked    int
	}{
		{"put", []step{
			func(d int) error { return win.Put(buf0, dest, d) },
			func(d int) error { return win.Put(buf1, dest, d+n0) },
			func(d int) error { return win.Put(buf2, dest, d+n0+n1) },
		}, nil, n0 + n1 + n2},
		{"put/acc", []step{
			func(d int) error { return win.Accumulate(buf0, dest, d, sum) },
			func(d int) error { return win.Accumulate(buf1, dest, d+n0, sum) },
			func(d int) error { return win.Put(buf2, dest, d+n0+n1) },
		}, []step{
			func(d int) error { return win.Accumulate(buf0, dest, d, repl) },
			func(d int) error { return win.Accumulate(buf1, dest, d+n0, repl) },
			func(d int) error { return win.Put(buf2, dest, d+n0+n1) },
		}, n0 + n1 + n2},
		{"put/get/acc", []step{
			func(d int) error { return win.Accumulate(buf0, dest, d, repl) },
			func(d int) error { return win.Put(buf1, dest, d+n0) },
			func(d int) error { return win.Get(inbuf2, dest, d+n0+n1) },
		}, nil, n0 + n1},
	}
	for pi, ph := range phases {
		if ph.fnce == nil {
			ph.fnce = ph.lock
		}
		for loop := 0; loop < 2; loop++ {
			if pi == 1 {
				clear(win.Local())
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if w.Rank() == source {
				if err := win.Lock(ctx, window.Exclusive, dest, 0); err != nil {
					return fmt.Errorf("%s loop %d: %w", ph.name, loop, err)
				}
				for _, s := range ph.lock {
					if err := s(0); err != nil {
						return err
					}
				}
				if err := win.Unlock(ctx, dest); err != nil {
					return err
				}
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if err := win.Fence(ctx, 0); err != nil {
				return fmt.Errorf("%s loop %d: first fence: %w", ph.name, loop, err)
			}
			if w.Rank() == source {
				for _, s := range ph.fnce {
					if err := s(1); err != nil {
						return err
					}
				}
			}
			if err := win.Fence(ctx, 0); err != nil {
				return fmt.Errorf("%s loop %d: second fence: %w", ph.name, loop, err)
			}
			if w.Rank() == dest {
				got := win.Local()[1 : 1+ph.checked]
				if err := same(fmt.Sprintf("%s loop %d: window", ph.name, loop), got, seq(ph.checked, func(i int) int32 { return int32(i) })); err != nil {
					return err
				}
			}
		}
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	return win.Free(ctx)
}

// rmaFetchandadd: the non-scalable fetch-and-add counter of Using MPI-2: rank 0 holds
// one slot per rank. Every other rank, 20 times, under an exclusive lock adds 1 to its
// own slot and Gets every other slot (two Gets around its own: MPICH uses one indexed
// type), so the counter is the sum plus its own count. Gathered at rank 0 and sorted,
// the values run up by exactly 1.
func rmaFetchandadd(ctx context.Context, w *runtime.World) error {
	const ntimes = 20
	rank, n := w.Rank(), w.Size()
	var win *window.Win[int32]
	var err error
	vals := make([]int32, ntimes)
	if rank == 0 {
		win, err = window.Create(ctx, w, make([]int32, n))
	} else {
		win, err = window.Create[int32](ctx, w, nil)
	}
	if err != nil {
		return err
	}
	if rank != 0 {
		one := []int32{1}
		va := make([]int32, n)
		for i := 0; i < ntimes; i++ {
			err := first(win.Lock(ctx, window.Exclusive, 0, 0),
				win.Accumulate(one, 0, rank, collectives.Sum[int32]()),
				win.Get(va[:rank], 0, 0),
				win.Get(va[rank+1:], 0, rank+1),
				win.Unlock(ctx, 0))
			if err != nil {
				return err
			}
			va[rank] = int32(i)
			var v int32
			for _, x := range va {
				v += x
			}
			vals[i] = v
		}
	}
	if err := win.Free(ctx); err != nil {
		return err
	}
	var all []int32
	if rank == 0 {
		all = fill(ntimes*n, int32(-1))
	}
	if err := collectives.Gather(ctx, w, vals, all, 0); err != nil {
		return err
	}
	if rank != 0 {
		return nil
	}
	got := all[ntimes:]
	slices.Sort(got)
	for i := 1; i < len(got); i++ {
		if got[i] != got[i-1]+1 {
			return fmt.Errorf("counter values, sorted: [%d] is %d after %d, want consecutive values", i, got[i], got[i-1])
		}
	}
	return nil
}

// rmaAccfence2: every rank Accumulates (sum) count elements into rank 0 in a Fence
// epoch, for count 1, 2, 4 ... 32768 (while the sum fits an int).
func rmaAccfence2(ctx context.Context, w *runtime.World) error {
	const maxInt = 0x7fffffff
	rank, size := w.Rank(), w.Size()
	for count := 1; count < 65000; count *= 2 {
		if count*count > maxInt/size-(size-1)/2 {
			break
		}
		sbuf := seq(count, func(i int) int32 { return int32(rank + i*count) })
		win, err := window.Create(ctx, w, make([]int32, count))
		if err != nil {
			return err
		}
		err = first(win.Fence(ctx, 0), win.Accumulate(sbuf, 0, 0, collectives.Sum[int32]()), win.Fence(ctx, 0))
		if err != nil {
			return err
		}
		if rank == 0 {
			want := seq(count, func(i int) int32 { return int32(i*count*size + size*(size-1)/2) })
			if err := same(fmt.Sprintf("count %d: window", count), win.Local(), want); err != nil {
				return err
			}
		}
		if err := win.Free(ctx); err != nil {
			return err
		}
	}
	return nil
}

// rmaLockcontention: ranks 0 and 2 contend for exclusive locks on rank 1, one element
// per lock: rank 0 Puts the first 100 elements, rank 2 Gets the next 100.
func rmaLockcontention(ctx context.Context, w *runtime.World) error {
	const size1, size2, target = 100, 200, 1
	return inFirst(ctx, w, 3, func(c *runtime.World) error {
		var a, b []int32
		switch c.Rank() {
		case 0:
			a = seq(size2, func(i int) int32 { return int32(i) })
			b = slices.Clone(a)
		case 1:
			b = seq(size2, func(i int) int32 { return int32(-4 * i) })
		case 2:
			a, b = fill(size2, int32(-1)), fill(size2, int32(-1))
		}
		win, err := window.Create(ctx, c, b)
		if err != nil {
			return err
		}
		for i := 0; i < size1 && c.Rank() != target; i++ {
			op := func() error { return win.Put(a[i:i+1], target, i) }
			if c.Rank() == 2 {
				op = func() error { return win.Get(a[i:i+1], target, size1+i) }
			}
			if err := first(win.Lock(ctx, window.Exclusive, target, 0), op(), win.Unlock(ctx, target)); err != nil {
				return err
			}
		}
		if err := win.Free(ctx); err != nil {
			return err
		}
		switch c.Rank() {
		case 1:
			return same("Put", b[:size1], seq(size1, func(i int) int32 { return int32(i) }))
		case 2:
			return same("Get", a[:size1], seq(size1, func(i int) int32 { return int32(-4 * (i + size1)) }))
		}
		return nil
	})
}
