package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

func init() {
	register("coll-allred5", "coll/allred5.c", 5, collAllred5)
	register("pt2pt-send_tests", "pt2pt/send_tests.c", 3, ptSendTests)
	register("rma-adlb_mimic1", "rma/adlb_mimic1.c", 3, rmaAdlbMimic1)
}

// collAllred5: Allreduce (sum) of twice as many ints as ranks, element i being i, over
// each communicator (a World of one included).
func collAllred5(ctx context.Context, w *runtime.World) error {
	return eachComm(ctx, w, 1, func(c *runtime.World, name string) error {
		size := c.Size()
		count := 2 * size
		out := fill(count, int32(-1))
		if err := collectives.Allreduce(ctx, c, seq(count, func(i int) int32 { return int32(i) }), out, collectives.Sum[int32]()); err != nil {
			return err
		}
		return same(name, out, seq(count, func(i int) int32 { return int32(i * size) }))
	})
}

// ptSendTests: rank 0 Isends 1 and 10000 ints to rank 1, then to rank 2, in every
// combination of: the receive posted before the send or after it (unexpected), from any
// source or from 0, with any tag or the tag. The receiver's status names rank 0 and the
// tag. (send_tests.c also runs each case with Issend, which gorma lacks.)
func ptSendTests(ctx context.Context, w *runtime.World) error {
	const tag, unexp, anySrc, anyTag = 1234, 1, 2, 4
	const src = 0
	rank := w.Rank()
	buf := make([]int32, 10000)
	for _, dst := range []int{1, 2} {
		for _, count := range []int{1, 10000} {
			for flag := 0; flag < 8; flag++ {
				what := fmt.Sprintf("to rank %d, %d ints, flags %03b", dst, count, flag)
				switch rank {
				case src:
					if flag&unexp == 0 {
						if err := runtime.Barrier(ctx, w); err != nil {
							return err
						}
					}
					req, err := runtime.Isend(w, buf[:count], dst, tag)
					if err != nil {
						return fmt.Errorf("%s: %w", what, err)
					}
					if flag&unexp != 0 {
						if err := runtime.Barrier(ctx, w); err != nil {
							return err
						}
					}
					if _, err := req.Wait(ctx); err != nil {
						return fmt.Errorf("%s: %w", what, err)
					}
				case dst:
					if flag&unexp != 0 {
						if err := runtime.Barrier(ctx, w); err != nil {
							return err
						}
					}
					s, t := src, tag
					if flag&anySrc != 0 {
						s = runtime.AnySource
					}
					if flag&anyTag != 0 {
						t = runtime.AnyTag
					}
					req, err := runtime.Irecv(w, buf[:count], s, t)
					if err != nil {
						return fmt.Errorf("%s: %w", what, err)
					}
					if flag&unexp == 0 {
						if err := runtime.Barrier(ctx, w); err != nil {
							return err
						}
					}
					st, err := req.Wait(ctx)
					if err != nil {
						return fmt.Errorf("%s: %w", what, err)
					}
					if st.Source != src || st.Tag != tag {
						return fmt.Errorf("%s: status names rank %d, tag %d; want %d, %d", what, st.Source, st.Tag, src, tag)
					}
				default:
					if err := runtime.Barrier(ctx, w); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// rmaAdlbMimic1: rank 0's window holds 1 MiB per rank. 500 times, each rank from 2 on
// Puts 1 MiB of ones into its slot under a shared lock, tells rank 1 (the server), which
// tells rank 0 who it was. Rank 0 Gets the slot's last byte under a shared lock on
// itself (it must be 1), clears the slot by plain stores, and lets that rank go on.
func rmaAdlbMimic1(ctx context.Context, w *runtime.World) error {
	const times, putSize = 500, 1 << 20
	rank, size := w.Rank(), w.Size()
	if size <= 2 {
		return fmt.Errorf("adlb_mimic1 needs at least 3 ranks, not %d", size)
	}
	win, err := window.Create(ctx, w, make([]int8, size*putSize))
	if err != nil {
		return err
	}
	local := fill(putSize, int8(1))
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	byRank := []int32{0}
	switch rank {
	case 0:
		for i := 0; i < times*(size-2); i++ {
			if _, err := runtime.Recv(ctx, w, byRank, 1, 0); err != nil {
				return err
			}
			by := int(byRank[0])
			check := []int8{0}
			if err := first(win.Lock(ctx, window.Shared, 0, 0), win.Get(check, 0, (by+1)*putSize-1), win.Unlock(ctx, 0)); err != nil {
				return err
			}
			if check[0] != 1 {
				return fmt.Errorf("round %d: the last byte of rank %d's slot is %d, want 1", i, by, check[0])
			}
			clear(win.Local()[by*putSize : (by+1)*putSize])
			if err := runtime.Send[int32](ctx, w, nil, by, 0); err != nil {
				return err
			}
		}
	case 1:
		for i := 0; i < times*(size-2); i++ {
			st, err := runtime.Recv[int32](ctx, w, nil, runtime.AnySource, 0)
			if err != nil {
				return err
			}
			byRank[0] = int32(st.Source)
			if err := runtime.Send(ctx, w, byRank, 0, 0); err != nil {
				return err
			}
		}
	default:
		for i := 0; i < times; i++ {
			if err := first(win.Lock(ctx, window.Shared, 0, 0), win.Put(local, 0, rank*putSize), win.Unlock(ctx, 0)); err != nil {
				return err
			}
			if err := runtime.Send[int32](ctx, w, nil, 1, 0); err != nil {
				return err
			}
			if _, err := runtime.Recv[int32](ctx, w, nil, 0, 0); err != nil {
				return err
			}
		}
	}
	return win.Free(ctx)
}
