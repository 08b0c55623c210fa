package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// layoutCase is a layout of n float64 elements over a buffer of len elements.
type layoutCase struct {
	name  string
	t     datatype.Type
	count int
	len   int
}

// offerLayouts returns layouts of rows blocks of b float64 elements each (rows even):
// one run, a column of blocks, columns two blocks wide, an irregular indexed layout,
// two half columns as count copies of a column resized to one block, and the blocks in
// reverse order (a negative extent).
func offerLayouts(t *testing.T, rows, b int) []layoutCase {
	t.Helper()
	must := func(ty datatype.Type, err error) datatype.Type {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return ty
	}
	const cols = 7
	n := rows * b
	var bls, ds []int
	for i, at := 0, 0; i < n; {
		bl := min((1+len(bls)%3)*b, n-i)
		bls, ds = append(bls, bl), append(ds, at)
		at += bl + (1+len(bls)%4)*b
		i += bl
	}
	blk := must(datatype.Contiguous[float64](b))
	back := must(blk.Resized(0, -8*b))
	last := (rows - 1) * b * 8
	return []layoutCase{
		{"contiguous", must(datatype.Contiguous[float64](n)), 1, n},
		{"column", must(datatype.Vector[float64](rows, b, b*cols)), 1, n * cols},
		{"pairs", must(datatype.Vector[float64](rows/2, 2*b, b*cols)), 1, n / 2 * cols},
		{"irregular", must(datatype.Indexed[float64](bls, ds)), 1, ds[len(ds)-1] + bls[len(bls)-1]},
		{"2 half columns", must(must(datatype.Vector[float64](rows/2, b, b*cols)).Resized(0, 8*b)), 2, n / 2 * cols},
		{"reversed", must(datatype.Struct([]datatype.Field{{Off: last, Count: 1, Type: back}})), rows, n},
	}
}

// fill sets buf to values that name rank and position.
func fill(buf []float64, rank int) {
	for i := range buf {
		buf[i] = float64(rank<<24 | i)
	}
}

// expect returns what a receive of layout rl gets from a send of layout sl by rank src:
// the sender's packed data unpacked over zeros (its first bytes when it is longer).
func expect(sl, rl layoutCase, src int) ([]float64, error) {
	sbuf := make([]float64, sl.len)
	fill(sbuf, src)
	n, _ := sl.t.PackSize(sl.count)
	packed := make([]byte, n)
	if _, err := datatype.Pack(packed, sbuf, sl.count, sl.t); err != nil {
		return nil, err
	}
	want := make([]float64, rl.len)
	rn, _ := rl.t.PackSize(rl.count)
	_, err := datatype.UnpackPrefix(want, packed[:min(n, rn)], rl.count, rl.t)
	return want, err
}

func same(got, want []float64) error {
	for i := range want {
		if got[i] != want[i] {
			return fmt.Errorf("element %d = %v, want %v", i, got[i], want[i])
		}
	}
	return nil
}

// TestLayoutOffer sends every layout of offerLayouts to every one, small (eager), large
// (rendezvous) of 8-byte blocks (packed) and large of 4 KiB blocks (a layout offer on
// one host), with SendType and RecvType, SendrecvType, and IsendType and IrecvType, on
// one host, over tcp, and over two pretend hosts: the receiver's buffer must hold
// exactly the sender's packed data laid out in its layout, whichever path the message
// took. On one host the layout offers are read (LayoutReads counts them); over tcp none.
func TestLayoutOffer(t *testing.T) {
	sets := [][]layoutCase{offerLayouts(t, 16, 1), offerLayouts(t, 2400, 1), offerLayouts(t, 8, 512)}
	full, half, fine := offerLayouts(t, 8, 512)[1], offerLayouts(t, 4, 512)[1], offerLayouts(t, 8*512, 1)[1]
	for _, l := range typeLayouts {
		t.Run(l.name, func(t *testing.T) {
			before := runtime.LayoutReads()
			runtimetest.Run(t, l.n, l.opt, func(w *runtime.World) error {
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
				defer cancel()
				if err := layoutOffers(ctx, w, sets); err != nil {
					return err
				}
				return layoutTruncation(ctx, w, full, half, fine)
			})
			got := runtime.LayoutReads() - before
			switch {
			case l.opt.Transport == "shm" && got == 0:
				t.Errorf("no layout offer was read on one host")
			case l.opt.Transport == "tcp" && got != 0:
				t.Errorf("%d layout offers were read over tcp", got)
			}
		})
	}
}

// layoutOffers runs the exchanges of TestLayoutOffer for each set of layouts.
func layoutOffers(ctx context.Context, w *runtime.World, sets [][]layoutCase) error {
	me, size := w.Rank(), w.Size()
	next, prev := (me+1)%size, (me-1+size)%size
	for _, cases := range sets {
		n := cases[0].len // the contiguous layout's elements: every layout's
		for si, sl := range cases {
			for ri, rl := range cases {
				want, err := expect(sl, rl, prev)
				if err != nil {
					return err
				}
				what := fmt.Sprintf("rank %d, %d elements, %s to %s", me, n, sl.name, rl.name)
				tag := si*len(cases) + ri
				sbuf, rbuf := make([]float64, sl.len), make([]float64, rl.len)
				// SendType and RecvType along a chain (rank 0 receives first).
				fill(sbuf, me)
				send := func() error { return runtime.SendType(ctx, w, sbuf, sl.count, sl.t, next, tag) }
				recv := func() error {
					st, err := runtime.RecvType(ctx, w, rbuf, rl.count, rl.t, prev, tag)
					if err == nil && (st.Bytes != n*8 || st.Source != prev) {
						err = fmt.Errorf("status %+v", st)
					}
					return err
				}
				steps := []func() error{send, recv}
				if me == 0 {
					steps = []func() error{recv, send}
				}
				for _, s := range steps {
					if err := s(); err != nil {
						return fmt.Errorf("%s, SendType: %w", what, err)
					}
				}
				if err := same(rbuf, want); err != nil {
					return fmt.Errorf("%s, SendType: %w", what, err)
				}
				// SendrecvType around the ring.
				clear(rbuf)
				st, err := runtime.SendrecvType(ctx, w, sbuf, sl.count, sl.t, next, tag, rbuf, rl.count, rl.t, prev, tag)
				if err == nil && (st.Bytes != n*8 || st.Source != prev) {
					err = fmt.Errorf("status %+v", st)
				}
				if err == nil {
					err = same(rbuf, want)
				}
				if err != nil {
					return fmt.Errorf("%s, SendrecvType: %w", what, err)
				}
				// IrecvType and IsendType.
				clear(rbuf)
				rr, err := runtime.IrecvType(w, rbuf, rl.count, rl.t, prev, tag)
				if err != nil {
					return err
				}
				sr, err := runtime.IsendType(w, sbuf, sl.count, sl.t, next, tag)
				if err != nil {
					return err
				}
				if err := runtime.WaitAll(ctx, []*runtime.Request{rr, sr}, nil); err != nil {
					return fmt.Errorf("%s, IsendType: %w", what, err)
				}
				if err := same(rbuf, want); err != nil {
					return fmt.Errorf("%s, IrecvType: %w", what, err)
				}
			}
		}
	}
	return nil
}

// layoutTruncation receives a column of 8 blocks of 4 KiB into half a column, half a
// column into a whole one, and a whole one into a layout of 8-byte blocks (a layout
// offer read into the pooled buffer and unpacked): the first fills the half and fails
// with ErrTruncated, the second fills the first half of the column and counts Undefined
// copies, the third fills every block; and no copies of a column into a column fill
// nothing.
func layoutTruncation(ctx context.Context, w *runtime.World, full, half, fine layoutCase) error {
	me, size := w.Rank(), w.Size()
	next, prev := (me+1)%size, (me-1+size)%size
	const n = 8 * 512
	none := full
	none.name, none.count, none.len = "no copies", 0, 0
	for _, c := range []struct {
		s, r         layoutCase
		trunc        bool
		bytes, count int
	}{
		{full, half, true, n / 2 * 8, 1},
		{half, full, false, n / 2 * 8, runtime.Undefined},
		{full, fine, false, n * 8, 1},
		{none, full, false, 0, 0},
	} {
		sbuf, rbuf := make([]float64, c.s.len), make([]float64, c.r.len)
		fill(sbuf, me)
		st, err := runtime.SendrecvType(ctx, w, sbuf, c.s.count, c.s.t, next, 1, rbuf, c.r.count, c.r.t, prev, 1)
		if got := errors.Is(err, runtime.ErrTruncated); got != c.trunc || (err != nil && !got) {
			return fmt.Errorf("rank %d, %s: %v, want truncated %v", me, c.r.name, err, c.trunc)
		}
		want, err := expect(c.s, c.r, prev)
		if err != nil {
			return err
		}
		if err := same(rbuf, want); err != nil {
			return fmt.Errorf("rank %d, %d-element %s into %d-element %s: %w", me, c.s.len, c.s.name, c.r.len, c.r.name, err)
		}
		if st.Bytes != c.bytes || st.Count != c.count {
			return fmt.Errorf("rank %d: status %+v, want %d bytes and %d copies", me, st, c.bytes, c.count)
		}
	}
	return nil
}

// TestLayoutOfferAllocs: a halo exchange of 4 KiB blocks between two ranks of one host
// (SendrecvType), and a SendType to a RecvType, go as layout offers and allocate
// nothing in steady state.
func TestLayoutOfferAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the pooled layouts and buffers: sync.Pool drops items at random under -race")
	}
	before := runtime.LayoutReads()
	runtimetest.Run(t, 2, runtimetest.Options{Transport: "shm", Timeout: 30 * time.Second}, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
		defer cancel()
		col, err := datatype.Vector[float64](8, 512, 512*5)
		if err != nil {
			return err
		}
		m, g := make([]float64, 8*512*5), make([]float64, 8*512*5)
		peer := 1 - w.Rank()
		allocs := testing.AllocsPerRun(50, func() {
			if err == nil {
				_, err = runtime.SendrecvType(ctx, w, m, 1, col, peer, 1, g, 1, col, peer, 1)
			}
			if err == nil && w.Rank() == 0 {
				err = runtime.SendType(ctx, w, m, 1, col, peer, 2)
			} else if err == nil {
				_, err = runtime.RecvType(ctx, w, g, 1, col, peer, 2)
			}
		})
		if err != nil {
			return err
		}
		if allocs != 0 {
			return fmt.Errorf("rank %d: a layout offer exchange allocates %v times, want 0", w.Rank(), allocs)
		}
		return nil
	})
	if runtime.LayoutReads() == before {
		t.Fatal("no layout offer was read")
	}
}
