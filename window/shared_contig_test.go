package window_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"
	"unsafe"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/runtime/substrate"
	"github.com/gorma-hpc/gorma/window"
)

// sharedCount is rank r's element count in the contiguity tests: uneven, and none for
// rank 2.
func sharedCount(r int) int {
	if r == 2 {
		return 0
	}
	return 5 + 3*r
}

// hostFirst returns the lowest rank on w's rank r's host and r's element offset from
// that rank's memory, counting the ranks of the host before r.
func hostFirst(w *runtime.World, r int) (first, off int) {
	first = -1
	for s := 0; s < r; s++ {
		if substrate.TransportBetween(w, r, s) == "shm" {
			if first < 0 {
				first = s
			}
			off += sharedCount(s)
		}
	}
	if first < 0 {
		first = r
	}
	return first, off
}

// checkContiguous checks that SharedQuery gives the memory of every rank of this host
// at its place in the host's segment, reaching to its end, and that ranks on other
// hosts are not shared.
func checkContiguous(w *runtime.World, win *window.Win[int64]) error {
	me := w.Rank()
	first, _ := hostFirst(w, me)
	base, err := win.SharedQuery(first)
	if err != nil {
		return err
	}
	for r := range w.Size() {
		v, err := win.SharedQuery(r)
		if w.Transport(r) == "tcp" {
			if !errors.Is(err, window.ErrNotShared) {
				return fmt.Errorf("SharedQuery(%d) of a rank on another host: %v, want ErrNotShared", r, err)
			}
			continue
		}
		f, off := hostFirst(w, r)
		switch {
		case err != nil:
			return fmt.Errorf("SharedQuery(%d): %w", r, err)
		case f != first:
			return fmt.Errorf("rank %d shares memory with this rank but its host's first rank is %d, not %d", r, f, first)
		case len(v) != sharedCount(r) || win.Len(r) != sharedCount(r):
			return fmt.Errorf("SharedQuery(%d) has %d elements (Len %d), want %d", r, len(v), win.Len(r), sharedCount(r))
		case unsafe.SliceData(v) != unsafe.SliceData(base[off:cap(base)]):
			return fmt.Errorf("rank %d's memory is at %p, want %p: element %d of rank %d's", r, unsafe.SliceData(v), unsafe.SliceData(base[off:cap(base)]), off, first)
		case cap(v) != cap(base)-off:
			return fmt.Errorf("SharedQuery(%d) reaches %d elements, want %d (to the end of the host's memory)", r, cap(v), cap(base)-off)
		}
	}
	if _, off := hostFirst(w, me); len(win.Local()) > 0 && &win.Local()[0] != &base[:cap(base)][off] {
		return errors.New("Local() is not this rank's place in the host's memory")
	}
	return nil
}

// TestSharedContiguous: AllocateShared places the memory of a host's ranks one after
// another in rank order; a rank stores into every rank of its host through the lowest
// rank's slice, and every rank Puts, Gets and accumulates into every other rank
// (through the transport for another host's ranks).
func TestSharedContiguous(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		me, size := w.Rank(), w.Size()
		win, err := window.AllocateShared[int64](ctx, w, sharedCount(me))
		if err != nil {
			return err
		}
		if err := checkContiguous(w, win); err != nil {
			return err
		}
		for i, v := range win.Local() {
			if v != 0 {
				return fmt.Errorf("new window: local[%d] = %d, want 0", i, v)
			}
		}
		// Each host's first rank writes the whole host's memory through its own slice.
		first, _ := hostFirst(w, me)
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		if first == me {
			mine, err := win.SharedQuery(me)
			if err != nil {
				return err
			}
			all := mine[:cap(mine)]
			for i := range all {
				all[i] = int64(1000 + i)
			}
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		_, off := hostFirst(w, me)
		for i, v := range win.Local() {
			if v != int64(1000+off+i) {
				return fmt.Errorf("after the host's first rank's stores: local[%d] = %d, want %d", i, v, 1000+off+i)
			}
		}
		// RMA to every rank with memory: one Put per origin at its own element, then a
		// Sum of 1 from every rank into the last element.
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		for r := range size {
			if n := sharedCount(r); n > me+1 {
				if err := win.Put([]int64{int64(-me)}, r, me); err != nil {
					return err
				}
			}
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		for r := range size {
			if n := sharedCount(r); n > 0 {
				if err := win.Accumulate([]int64{1}, r, n-1, collectives.Sum[int64]()); err != nil {
					return err
				}
			}
		}
		if err := win.Fence(ctx, 0); err != nil {
			return err
		}
		n := sharedCount(me)
		for i, v := range win.Local() {
			want := int64(1000 + off + i)
			if i < size && i < n-1 {
				want = int64(-i)
			}
			if i == n-1 { // no Put lands on the last element
				want = int64(1000+off+i) + int64(size)
			}
			if v != want {
				return fmt.Errorf("after the RMA: local[%d] = %d, want %d", i, v, want)
			}
		}
		// Gets and FetchAndOp under a lock, from the next rank with memory.
		if err := win.Fence(ctx, window.NoSucceed); err != nil {
			return err
		}
		next := (me + 1) % size
		if sharedCount(next) == 0 {
			next = (next + 1) % size
		}
		got := make([]int64, sharedCount(next))
		var old int64
		if err := win.Lock(ctx, window.Exclusive, next, 0); err != nil {
			return err
		}
		if err := win.FetchAndOp(0, &old, next, 0, collectives.NoOp[int64]()); err != nil {
			return err
		}
		if err := win.Get(got, next, 0); err != nil {
			return err
		}
		if err := win.Unlock(ctx, next); err != nil {
			return err
		}
		if old != 0 || got[0] != 0 || got[len(got)-1] < int64(size) {
			return fmt.Errorf("from rank %d: FetchAndOp %d, Get %v", next, old, got)
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		return win.Free(ctx)
	})
}

// TestSharedNonContiguous: with NonContiguous each rank's memory is its own: SharedQuery
// still maps every rank of the host, reaching no further than the rank's memory.
func TestSharedNonContiguous(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		me := w.Rank()
		win, err := window.AllocateShared[int64](ctx, w, sharedCount(me), window.NonContiguous())
		if err != nil {
			return err
		}
		for i := range win.Local() {
			win.Local()[i] = int64(me*100 + i)
		}
		if err := first(win.Sync(ctx), runtime.Barrier(ctx, w), win.Sync(ctx)); err != nil {
			return err
		}
		for r := range w.Size() {
			v, err := win.SharedQuery(r)
			if w.Transport(r) == "tcp" {
				if !errors.Is(err, window.ErrNotShared) {
					return fmt.Errorf("SharedQuery(%d) over tcp: %v", r, err)
				}
				continue
			}
			if err != nil || len(v) != sharedCount(r) || cap(v) != len(v) {
				return fmt.Errorf("SharedQuery(%d): %d elements of %d, %v; want %d", r, len(v), cap(v), err, sharedCount(r))
			}
			for i, x := range v {
				if x != int64(r*100+i) {
					return fmt.Errorf("rank %d's [%d] = %d", r, i, x)
				}
			}
		}
		return first(runtime.Barrier(ctx, w), win.Free(ctx))
	})
}

// first returns the first non-nil error.
func first(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestSharedZeroAndRelease: windows made, dirtied and freed again and again start
// zeroed, and the host segments and registrations they took come back to the arena:
// every rank's arena bytes in use and live MRs equal their baseline afterwards.
func TestSharedZeroAndRelease(t *testing.T) {
	layouts := []struct {
		name string
		n    int
		opt  runtimetest.Options
	}{
		{"shm", 3, runtimetest.Options{Transport: "shm"}},
		{"hosts", 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
			defer cancel()
			runtimetest.Run(t, l.n, l.opt, func(w *runtime.World) error {
				cycle := func(n int) error {
					win, err := window.AllocateShared[int64](ctx, w, n)
					if err != nil {
						return err
					}
					for i, v := range win.Local() {
						if v != 0 {
							return fmt.Errorf("window of %d: local[%d] = %d, want 0", n, i, v)
						}
					}
					for i := range win.Local() {
						win.Local()[i] = -1
					}
					return first(runtime.Barrier(ctx, w), win.Free(ctx))
				}
				if err := first(cycle(8), runtime.Barrier(ctx, w), runtime.Barrier(ctx, w)); err != nil {
					return err
				}
				inUse0, mrs0 := runtimetest.ArenaUse(w)
				for i := range 20 {
					if err := cycle([]int{1, 100, 4096, 0, 1 << 14}[i%5] + w.Rank()); err != nil {
						return fmt.Errorf("cycle %d: %w", i, err)
					}
				}
				if inUse, mrs := runtimetest.ArenaUse(w); inUse != inUse0 || mrs != mrs0 {
					return fmt.Errorf("after 20 windows: arena %d bytes in use and %d live MRs, want %d and %d", inUse, mrs, inUse0, mrs0)
				}
				return runtime.Barrier(ctx, w)
			})
		})
	}
}

// TestSharedPSCWAtomics: on a contiguous shared window, a ring of PSCW epochs with
// CompareAndSwap and GetAccumulate into the next rank (through the transport for a rank
// on another host), checked through SharedQuery by the target's host and by Get from
// everyone under LockAll.
func TestSharedPSCWAtomics(t *testing.T) {
	forLayouts(t, func(ctx context.Context, w *runtime.World) error {
		me, size := w.Rank(), w.Size()
		next, prev := (me+1)%size, (me+size-1)%size
		win, err := window.AllocateShared[int64](ctx, w, 2)
		if err != nil {
			return err
		}
		const rounds = 5
		for round := range int64(rounds) {
			if err := win.Post(ctx, []int{prev}, 0); err != nil {
				return err
			}
			if err := win.Start(ctx, []int{next}, 0); err != nil {
				return err
			}
			var old int64
			if err := win.CompareAndSwap(round+1, round, &old, next, 0); err != nil {
				return err
			}
			sum := []int64{0}
			if err := win.GetAccumulate([]int64{int64(me + 1)}, sum, next, 1, collectives.Sum[int64]()); err != nil {
				return err
			}
			if err := win.Complete(ctx); err != nil {
				return err
			}
			if err := win.Wait(ctx); err != nil {
				return err
			}
			if old != round || sum[0] != round*int64(me+1) {
				return fmt.Errorf("round %d at rank %d: CompareAndSwap found %d, GetAccumulate %d", round, next, old, sum[0])
			}
		}
		if err := first(runtime.Barrier(ctx, w), win.LockAll(ctx, 0)); err != nil { // every round done
			return err
		}
		for r := range size {
			want := []int64{rounds, rounds * int64((r+size-1)%size+1)}
			got := make([]int64, 2)
			if err := first(win.Get(got, r, 0), win.Flush(ctx, r)); err != nil {
				return err
			}
			if got[0] != want[0] || got[1] != want[1] {
				return fmt.Errorf("rank %d's memory by Get: %v, want %v", r, got, want)
			}
			if w.Transport(r) != "tcp" {
				v, err := win.SharedQuery(r)
				if err != nil || v[0] != want[0] || v[1] != want[1] {
					return fmt.Errorf("rank %d's memory by SharedQuery: %v (%v), want %v", r, v, err, want)
				}
			}
		}
		return first(win.UnlockAll(ctx), runtime.Barrier(ctx, w), win.Free(ctx))
	})
}

// TestSharedTooLarge: when the ranks of one host ask for more memory in all than an int
// counts in bytes, AllocateShared fails with ErrInvalid at every rank, on the other host
// too, rather than leave a host waiting for the others.
func TestSharedTooLarge(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	runtimetest.Run(t, 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}, func(w *runtime.World) error {
		n := 8
		if w.HostOf(w.Rank()) == w.HostOf(0) {
			n = math.MaxInt/16 + 1 // each fits; the two int64 counts together do not
		}
		if _, err := window.AllocateShared[int64](ctx, w, n); !errors.Is(err, window.ErrInvalid) {
			return fmt.Errorf("AllocateShared of %d elements: %v, want ErrInvalid", n, err)
		}
		// The World is still usable: a window of sane size works.
		win, err := window.AllocateShared[int64](ctx, w, 8)
		if err != nil {
			return err
		}
		return first(runtime.Barrier(ctx, w), win.Free(ctx))
	})
}
