package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

func init() {
	register("rma-transpose1", "rma/transpose1.c", 2, rmaTranspose(1000, "put", "fence", false))
	register("rma-transpose2", "rma/transpose2.c", 2, rmaTranspose(100, "put resized", "fence", false))
	register("rma-transpose3", "rma/transpose3.c", 2, rmaTranspose(100, "put", "pscw", false))
	register("rma-transpose3_shm", "rma/transpose3.c", 2, rmaTranspose(100, "put", "pscw", true))
	register("rma-transpose4", "rma/transpose4.c", 2, rmaTranspose(100, "put", "lock", false))
	register("rma-transpose5", "rma/transpose5.c", 2, rmaTranspose(1000, "acc", "fence", false))
	register("rma-transpose6", "rma/transpose6.c", 1, rmaTranspose6)
	register("rma-transpose7", "rma/transpose7.c", 2, rmaTranspose(1000, "get", "fence", false))
	register("rma-putfidx", "rma/putfidx.c", 4, rmaPutfidx)
}

// xposeType is MPI Example 3.32's transpose of an n x n int32 matrix: an hvector of n
// columns, one int32 apart, each a vector of n blocks of 1, n apart.
func xposeType(n int) (datatype.Type, error) {
	col, err := datatype.Vector[int32](n, 1, n)
	if err != nil {
		return datatype.Type{}, err
	}
	return col.Hvector(n, 1, 4)
}

// rmaTranspose: on the first two ranks, rank 0 moves its n x n int32 matrix (i*n + j)
// into rank 1's window transposed, the target described by the transpose type. It does so
// by Put ("put"; with a column resized to one int32, n copies of it: "put resized",
// transpose2's Example 3.33). Or it does so by Accumulate with Sum ("acc"; rank 1 holding
// i*n + j too). Or rank 0 Gets rank 1's matrix through the transpose type ("get"). The
// epoch is a Fence pair, PSCW (rank 1's window stored under a lock on itself first), or a
// shared lock that rank 0 takes (rank 1 then reads after freeing the window); alloc: rank
// 1's window is Allocated (transpose3_shm). The receiving side holds the transpose.
func rmaTranspose(n int, op, sync string, alloc bool) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		return inFirst(ctx, w, 2, func(c *runtime.World) error {
			rank := c.Rank()
			a := seq(n*n, func(k int) int32 { return int32(k) })
			xpose, err := xposeType(n)
			if err != nil {
				return err
			}
			resized := op == "put resized"
			if resized {
				col, err := datatype.Vector[int32](n, 1, n)
				if err != nil {
					return err
				}
				if xpose, err = col.Resized(0, 4); err != nil {
					return err
				}
			}
			tcount := 1
			if resized {
				tcount = n
			}
			var win *window.Win[int32]
			var local []int32
			switch {
			case rank == 0 && op != "get":
				win, err = window.Create[int32](ctx, c, nil)
			case alloc:
				if win, err = window.Allocate[int32](ctx, c, n*n); err == nil {
					local = win.Local()
				}
			default:
				local = make([]int32, n*n)
				win, err = window.Create(ctx, c, local)
			}
			if err != nil {
				return err
			}
			if rank == 1 {
				switch op {
				case "acc", "get":
					copy(local, a)
				default:
					if sync != "pscw" {
						copy(local, fill(n*n, int32(-1)))
					}
				}
			}
			if rank == 0 && op == "get" {
				a = fill(n*n, int32(-1))
			}
			if sync == "lock" {
				// Rank 1's memory is ready before rank 0 locks it (transpose4.c fills it
				// before MPI_Win_create, which synchronizes).
				if err := runtime.Barrier(ctx, c); err != nil {
					return err
				}
			}
			move := func() error {
				switch op {
				case "put", "put resized":
					return win.PutType(a, n*n, datatype.Of[int32](), 1, 0, tcount, xpose)
				case "acc":
					return win.AccumulateType(a, n*n, datatype.Of[int32](), 1, 0, 1, xpose, collectives.Sum[int32]())
				}
				return win.GetType(a, n*n, datatype.Of[int32](), 1, 0, 1, xpose)
			}
			switch sync {
			case "fence":
				if err := win.Fence(ctx, 0); err != nil {
					return err
				}
				if rank == 0 {
					if err := move(); err != nil {
						return err
					}
				}
				if err := win.Fence(ctx, 0); err != nil {
					return err
				}
			case "pscw":
				if rank == 0 {
					err = first(win.Start(ctx, []int{1}, 0), move(), win.Complete(ctx))
				} else {
					err = first(win.Lock(ctx, window.Shared, 1, 0), func() error {
						copy(local, fill(n*n, int32(-1)))
						return nil
					}(), win.Unlock(ctx, 1), win.Post(ctx, []int{0}, 0), win.Wait(ctx))
				}
				if err != nil {
					return err
				}
			case "lock":
				if rank == 0 {
					if err := first(win.Lock(ctx, window.Shared, 1, 0), move(), win.Unlock(ctx, 1)); err != nil {
						return err
					}
				}
			}
			if sync == "lock" && rank == 1 {
				// Read only after the window is freed, as transpose4 does; keep the memory.
				got := local
				if err := win.Free(ctx); err != nil {
					return err
				}
				return same("transposed", got, seq(n*n, func(k int) int32 { return int32(k%n*n + k/n) }))
			}
			var got []int32
			want := seq(n*n, func(k int) int32 { return int32(k%n*n + k/n) })
			switch {
			case op == "get" && rank == 0:
				got = a
			case op != "get" && rank == 1:
				got = append([]int32(nil), local...)
				if op == "acc" {
					// A[j][i] = i*n + j + j*n + i, for k = j*n + i.
					want = seq(n*n, func(k int) int32 { j, i := k/n, k%n; return int32(i*n + j + j*n + i) })
				}
			}
			if err := win.Free(ctx); err != nil {
				return err
			}
			if got == nil {
				return nil
			}
			return same("transposed", got, want)
		})
	}
}

// rmaTranspose6: one rank Accumulates (Sum) its 100x100 matrix into a window over a copy
// of it through the transpose type, between Fences: B[j][i] = i*100 + j + j*100 + i.
func rmaTranspose6(ctx context.Context, w *runtime.World) error {
	const n = 100
	self, err := w.Split(ctx, w.Rank(), 0)
	if err != nil {
		return err
	}
	a := seq(n*n, func(k int) int32 { return int32(k) })
	b := append([]int32(nil), a...)
	xpose, err := xposeType(n)
	if err != nil {
		return err
	}
	win, err := window.Create(ctx, self, b)
	if err != nil {
		return err
	}
	if err := first(win.Fence(ctx, 0), win.AccumulateType(a, n*n, datatype.Of[int32](), 0, 0, 1, xpose, collectives.Sum[int32]()), win.Fence(ctx, 0)); err != nil {
		return err
	}
	got := append([]int32(nil), b...)
	if err := first(win.Free(ctx), self.Free()); err != nil {
		return err
	}
	return same("accumulated transpose", got, seq(n*n, func(k int) int32 { j, i := k/n, k%n; return int32(i*n + j + j*n + i) }))
}

// rmaPutfidx: rank 0 Puts an indexed origin (two blocks of 2048 int32s, one element
// apart, holding 0..4095 around a -1) as 4096 contiguous int32s into the last rank's
// window between Fences: it holds 0..4095.
func rmaPutfidx(ctx context.Context, w *runtime.World) error {
	const blk = 2048
	const tot = 2 * blk
	ot, err := datatype.Indexed[int32]([]int{blk, blk}, []int{0, blk + 1})
	if err != nil {
		return err
	}
	recv := fill(tot, int32(-1))
	src := make([]int32, tot+1)
	for i := 0; i < blk; i++ {
		src[i], src[blk+1+i] = int32(i), int32(blk+i)
	}
	src[blk] = -1
	win, err := window.Create(ctx, w, recv)
	if err != nil {
		return err
	}
	dest := w.Size() - 1
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	if w.Rank() == 0 {
		if err := win.PutType(src, 1, ot, dest, 0, tot, datatype.Of[int32]()); err != nil {
			return err
		}
	}
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	var got []int32
	if w.Rank() == dest {
		got = append([]int32(nil), recv...)
	}
	if err := win.Free(ctx); err != nil {
		return err
	}
	if got == nil {
		return nil
	}
	return same("put of an indexed origin", got, seq(tot, func(i int) int32 { return int32(i) }))
}

func init() {
	register("rma-contig_displ", "rma/contig_displ.c", 1, rmaContigDispl)
	register("rma-selfrma", "rma/selfrma.c", 1, rmaSelfrma)
}

// rmaContigDispl: rank 0, on a window of its own over {100, 200}, Gets one int32 through
// an indexed-block type of one int32 at displacement 1 under an exclusive lock: 200.
func rmaContigDispl(ctx context.Context, w *runtime.World) error {
	if w.Rank() != 0 {
		return nil
	}
	self, err := selfWorld(ctx, w)
	if err != nil {
		return err
	}
	t, err := datatype.IndexedBlock[int32](1, []int{1})
	if err != nil {
		return err
	}
	array := []int32{100, 200}
	win, err := window.Create(ctx, self, array)
	if err != nil {
		return err
	}
	get := []int32{0}
	if err := first(win.Lock(ctx, window.Exclusive, 0, 0), win.GetType(get, 1, datatype.Of[int32](), 0, 0, 1, t), win.Unlock(ctx, 0)); err != nil {
		return err
	}
	return first(same("get through displacement 1", get, []int32{200}), win.Free(ctx), self.Free())
}

// rmaSelfrma: each rank, on a window of 1000 int32s, Puts (exclusive lock), Accumulates
// with Sum into zeros (shared lock) and Gets (shared lock) to and from itself through a
// vector of 250 int32s, stride 2, on both sides: every other element matches.
func rmaSelfrma(ctx context.Context, w *runtime.World) error {
	const count = 1000
	rank := w.Rank()
	sbuf := seq(count, func(i int) int32 { return int32(i) })
	winbuf := make([]int32, count)
	vt, err := datatype.Vector[int32](count/4, 1, 2)
	if err != nil {
		return err
	}
	win, err := window.Create(ctx, w, winbuf)
	if err != nil {
		return err
	}
	every2 := func(what string, a, b []int32) error {
		for j := 0; j < count/2; j += 2 {
			if a[j] != b[j] {
				return fmt.Errorf("%s: element %d is %d, want %d", what, j, a[j], b[j])
			}
		}
		return nil
	}
	if err := first(win.Lock(ctx, window.Exclusive, rank, 0), win.PutType(sbuf, 1, vt, rank, 0, 1, vt), win.Unlock(ctx, rank)); err != nil {
		return err
	}
	if err := every2("put", winbuf, sbuf); err != nil {
		return err
	}
	clear(winbuf)
	if err := first(win.Lock(ctx, window.Shared, rank, 0), win.AccumulateType(sbuf, 1, vt, rank, 0, 1, vt, collectives.Sum[int32]()), win.Unlock(ctx, rank)); err != nil {
		return err
	}
	if err := every2("accumulate", winbuf, sbuf); err != nil {
		return err
	}
	clear(sbuf)
	if err := first(win.Lock(ctx, window.Shared, rank, 0), win.GetType(sbuf, 1, vt, rank, 0, 1, vt), win.Unlock(ctx, rank)); err != nil {
		return err
	}
	return first(every2("get", winbuf, sbuf), win.Free(ctx))
}
