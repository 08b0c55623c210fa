package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// typeLayouts are the placements the typed calls are tested on: one host, tcp between
// every rank, and two pretend hosts of two ranks.
var typeLayouts = []struct {
	name string
	n    int
	opt  runtimetest.Options
}{
	{"shm", 3, runtimetest.Options{Transport: "shm", Timeout: 30 * time.Second}},
	{"tcp", 3, runtimetest.Options{Transport: "tcp", Timeout: 30 * time.Second}},
	{"hosts", 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}, Timeout: 30 * time.Second}},
}

func forTypeLayouts(t *testing.T, f func(ctx context.Context, w *runtime.World) error) {
	for _, l := range typeLayouts {
		t.Run(l.name, func(t *testing.T) {
			runtimetest.Run(t, l.n, l.opt, func(w *runtime.World) error {
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
				defer cancel()
				return f(ctx, w)
			})
		})
	}
}

// TestHaloColumn exchanges the boundary columns of row-major matrices around a ring with
// a vector type: each rank sends its last interior column to the next rank, which
// receives it into its left ghost column. Small columns go eagerly, large ones by
// rendezvous.
func TestHaloColumn(t *testing.T) {
	forTypeLayouts(t, func(ctx context.Context, w *runtime.World) error {
		me, size := w.Rank(), w.Size()
		next, prev := (me+1)%size, (me-1+size)%size
		for _, rows := range []int{5, 40_000} {
			const cols = 6
			m := make([]float64, rows*cols)
			for i := range m {
				m[i] = float64(me*1_000_000 + i)
			}
			col, err := datatype.Vector[float64](rows, 1, cols)
			if err != nil {
				return err
			}
			send := func() error { return runtime.SendType(ctx, w, m[cols-2:], 1, col, next, rows) }
			recv := func() error {
				st, err := runtime.RecvType(ctx, w, m, 1, col, prev, rows)
				if err == nil && (st.Count != 1 || st.Bytes != rows*8 || st.Source != prev) {
					err = fmt.Errorf("status %+v, want 1 copy of %d bytes from %d", st, rows*8, prev)
				}
				return err
			}
			// A chain, so that rendezvous sends cannot wait on each other in a cycle.
			steps := []func() error{send, recv}
			if me == 0 {
				steps = []func() error{recv, send}
			}
			for _, s := range steps {
				if err := s(); err != nil {
					return fmt.Errorf("rank %d, %d rows: %w", me, rows, err)
				}
			}
			for r := range rows {
				if got, want := m[r*cols], float64(prev*1_000_000+r*cols+cols-2); got != want {
					return fmt.Errorf("rank %d, %d rows: ghost row %d = %v, want %v", me, rows, r, got, want)
				}
				if got, want := m[r*cols+1], float64(me*1_000_000+r*cols+1); got != want {
					return fmt.Errorf("rank %d: interior [%d][1] = %v, want %v (untouched)", me, r, got, want)
				}
			}
		}
		return nil
	})
}

// TestSubarrayBlock sends a 3x2 sub-block of a 5x4 C-order grid and receives it into a
// 2x3 sub-block of a 4x4 Fortran-order grid: the same 6 elements in the same order.
func TestSubarrayBlock(t *testing.T) {
	forTypeLayouts(t, func(ctx context.Context, w *runtime.World) error {
		if w.Rank() > 1 {
			return nil
		}
		if w.Rank() == 0 {
			g := make([]int32, 20)
			for i := range g {
				g[i] = int32(i)
			}
			sub, err := datatype.Subarray[int32]([]int{5, 4}, []int{3, 2}, []int{1, 2}, datatype.OrderC)
			if err != nil {
				return err
			}
			return runtime.SendType(ctx, w, g, 1, sub, 1, 7)
		}
		g := make([]int32, 16)
		sub, err := datatype.Subarray[int32]([]int{4, 4}, []int{2, 3}, []int{1, 0}, datatype.OrderFortran)
		if err != nil {
			return err
		}
		if _, err := runtime.RecvType(ctx, w, g, 1, sub, 0, 7); err != nil {
			return err
		}
		// Sent in order: rows 1..3 of columns 2..3 of the C grid: 6 7 10 11 14 15. In the
		// Fortran grid, element (i, j) is at j*4+i: (1,0) (2,0) (1,1) (2,1) (1,2) (2,2).
		want := make([]int32, 16)
		for k, idx := range []int{1, 2, 5, 6, 9, 10} {
			want[idx] = []int32{6, 7, 10, 11, 14, 15}[k]
		}
		if !reflect.DeepEqual(g, want) {
			return fmt.Errorf("received grid %v, want %v", g, want)
		}
		return nil
	})
}

type particle struct {
	ID   int32
	Pos  [3]float64
	Mass float32
}

// TestStructArray sends only the positions of an array of structs (a Go struct's fields
// through FromStruct) and receives them into another array, whose other fields stay as
// they were.
func TestStructArray(t *testing.T) {
	forTypeLayouts(t, func(ctx context.Context, w *runtime.World) error {
		pos, err := datatype.FromStruct[particle]("Pos")
		if err != nil {
			return err
		}
		const n = 1000
		me, size := w.Rank(), w.Size()
		if me == 0 {
			ps := make([]particle, n)
			for i := range ps {
				ps[i] = particle{ID: int32(i), Pos: [3]float64{float64(i), float64(2 * i), float64(3 * i)}, Mass: 9}
			}
			for r := 1; r < size; r++ {
				if err := runtime.SendType(ctx, w, ps, n, pos, r, 3); err != nil {
					return err
				}
			}
			return nil
		}
		ps := make([]particle, n)
		for i := range ps {
			ps[i].ID, ps[i].Mass = -1, -1
		}
		st, err := runtime.RecvType(ctx, w, ps, n, pos, 0, 3)
		if err != nil {
			return err
		}
		if st.Count != n || st.Bytes != n*24 {
			return fmt.Errorf("rank %d: status %+v", me, st)
		}
		for i, p := range ps {
			if want := (particle{-1, [3]float64{float64(i), float64(2 * i), float64(3 * i)}, -1}); p != want {
				return fmt.Errorf("rank %d: particle %d = %+v, want %+v", me, i, p, want)
			}
		}
		return nil
	})
}

// TestRecvTypeLengths receives a message shorter than the layout (the first bytes are
// written, Count is the whole copies) and a longer one (ErrTruncated, every copy filled).
func TestRecvTypeLengths(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			pair, _ := datatype.Vector[int64](2, 1, 2) // elements 0 and 2; extent 3
			if w.Rank() == 0 {
				for _, k := range []int{5, 8} {
					msg := make([]int64, k)
					for i := range msg {
						msg[i] = int64(i + 1)
					}
					if err := runtime.Send(ctx, w, msg, 1, k); err != nil {
						return err
					}
				}
				return nil
			}
			buf := make([]int64, 9)
			st, err := runtime.RecvType(ctx, w, buf, 3, pair, 0, 5)
			if err != nil {
				return err
			}
			if want := []int64{1, 0, 2, 3, 0, 4, 5, 0, 0}; st.Count != runtime.Undefined || st.Bytes != 40 || !reflect.DeepEqual(buf, want) {
				return fmt.Errorf("short message: status %+v, buffer %v, want 2.5 copies (Count Undefined) in %v", st, buf, want)
			}
			clear(buf)
			st, err = runtime.RecvType(ctx, w, buf, 3, pair, 0, 8)
			if !errors.Is(err, runtime.ErrTruncated) {
				return fmt.Errorf("long message: %v, want ErrTruncated", err)
			}
			if want := []int64{1, 0, 2, 3, 0, 4, 5, 0, 6}; !reflect.DeepEqual(buf, want) {
				return fmt.Errorf("long message: buffer %v, want %v", buf, want)
			}
			return nil
		})
	})
}

// TestSendTypeMisuse checks that a layout outside the buffer, a negative count and a pointer
// element fail at once with ErrInvalid, naming the rank and the reach of the layout.
func TestSendTypeMisuse(t *testing.T) {
	run(t, "shm", 2, func(ctx context.Context, w *runtime.World) error {
		col, _ := datatype.Vector[float64](4, 1, 4)
		buf := make([]float64, 12)
		err := runtime.SendType(ctx, w, buf, 1, col, 1-w.Rank(), 0)
		if !errors.Is(err, runtime.ErrInvalid) || !errors.Is(err, datatype.ErrRange) ||
			!strings.Contains(err.Error(), fmt.Sprintf("rank %d", w.Rank())) || !strings.Contains(err.Error(), "reach byte 104, but the buffer holds 96 bytes") {
			return fmt.Errorf("layout beyond the buffer: %v", err)
		}
		if _, err := runtime.RecvType(ctx, w, buf, -1, col, 0, 0); !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "count -1") {
			return fmt.Errorf("negative count: %v", err)
		}
		if err := runtime.SendType(ctx, w, []*int{nil}, 1, datatype.Of[uint8](), 0, 0); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("pointer elements: %v", err)
		}
		if err := runtime.SendType[float64](ctx, nil, buf, 1, col, 0, 0); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("nil World: %v", err)
		}
		return nil
	})
}

// TestTypeAllocs pins that a send and receive of a strided layout, to this rank itself,
// allocate nothing in steady state (the packing buffers are pooled).
func TestTypeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the pooled packing buffers: sync.Pool drops items at random under -race")
	}
	run(t, "shm", 1, func(ctx context.Context, w *runtime.World) error {
		col, _ := datatype.Vector[float64](64, 1, 8)
		m := make([]float64, 64*8)
		var err error
		allocs := testing.AllocsPerRun(50, func() {
			if err == nil {
				err = runtime.SendType(ctx, w, m[3:], 1, col, 0, 1)
			}
			if err == nil {
				_, err = runtime.RecvType(ctx, w, m, 1, col, 0, 1)
			}
		})
		if err != nil {
			return err
		}
		if allocs != 0 {
			return fmt.Errorf("SendType+RecvType allocate %v times per run, want 0", allocs)
		}
		return nil
	})
}

// TestSendrecvTypeHalo runs a full halo exchange around the ring with SendrecvType: every
// rank sends its first interior column left and its last right, at the same time, into
// its neighbours' ghost columns; then a column goes into a contiguous buffer (in place on
// the receiving side).
func TestSendrecvTypeHalo(t *testing.T) {
	forTypeLayouts(t, func(ctx context.Context, w *runtime.World) error {
		me, size := w.Rank(), w.Size()
		next, prev := (me+1)%size, (me-1+size)%size
		for _, rows := range []int{5, 40_000} {
			const cols = 6 // ghost columns 0 and 5
			m := make([]float64, rows*cols)
			val := func(r, i int) float64 { return float64(r*10_000_000 + i) }
			for i := range m {
				m[i] = val(me, i)
			}
			col, _ := datatype.Vector[float64](rows, 1, cols)
			// Right: last interior column to next, ghost column 0 from prev.
			if _, err := runtime.SendrecvType(ctx, w, m[cols-2:], 1, col, next, 1, m, 1, col, prev, 1); err != nil {
				return fmt.Errorf("rank %d, %d rows, right: %w", me, rows, err)
			}
			// Left: first interior column to prev, ghost column 5 from next.
			st, err := runtime.SendrecvType(ctx, w, m[1:], 1, col, prev, 2, m[cols-1:], 1, col, next, 2)
			if err != nil {
				return fmt.Errorf("rank %d, %d rows, left: %w", me, rows, err)
			}
			if st.Count != 1 || st.Source != next || st.Bytes != rows*8 {
				return fmt.Errorf("rank %d: status %+v", me, st)
			}
			for r := range rows {
				if got, want := m[r*cols], val(prev, r*cols+cols-2); got != want {
					return fmt.Errorf("rank %d, %d rows: left ghost [%d] = %v, want %v", me, rows, r, got, want)
				}
				if got, want := m[r*cols+cols-1], val(next, r*cols+1); got != want {
					return fmt.Errorf("rank %d, %d rows: right ghost [%d] = %v, want %v", me, rows, r, got, want)
				}
			}
			flat := make([]float64, rows)
			run, _ := datatype.Contiguous[float64](rows)
			if _, err := runtime.SendrecvType(ctx, w, m[2:], 1, col, next, 3, flat, 1, run, prev, 3); err != nil {
				return err
			}
			for r, v := range flat {
				if want := val(prev, r*cols+2); v != want {
					return fmt.Errorf("rank %d: flat[%d] = %v, want %v", me, r, v, want)
				}
			}
		}
		return nil
	})
}

// TestIsendIrecvType: the halo ring of TestHaloColumn with IrecvType and IsendType
// completed by WaitAll, eager and rendezvous; the send buffer may be overwritten at once
// (the layout was packed at the call), the receive's layout is filled when WaitAll
// reports it, and its Status counts copies of the type.
func TestIsendIrecvType(t *testing.T) {
	forTypeLayouts(t, func(ctx context.Context, w *runtime.World) error {
		me, size := w.Rank(), w.Size()
		next, prev := (me+1)%size, (me-1+size)%size
		for _, rows := range []int{5, 40_000} {
			const cols = 6
			m := make([]float64, rows*cols)
			for i := range m {
				m[i] = float64(me*1_000_000 + i)
			}
			col, err := datatype.Vector[float64](rows, 1, cols)
			if err != nil {
				return err
			}
			ghost := make([]float64, rows*cols)
			rr, err := runtime.IrecvType(w, ghost, 1, col, prev, rows)
			if err != nil {
				return err
			}
			sr, err := runtime.IsendType(w, m[cols-2:], 1, col, next, rows)
			if err != nil {
				return err
			}
			clear(m) // packed at the call: the message keeps the old values
			sts := make([]runtime.Status, 2)
			if err := runtime.WaitAll(ctx, []*runtime.Request{rr, sr}, sts); err != nil {
				return fmt.Errorf("rank %d, %d rows: %w", me, rows, err)
			}
			if st := sts[0]; st.Count != 1 || st.Bytes != rows*8 || st.Source != prev {
				return fmt.Errorf("rank %d, %d rows: status %+v, want 1 copy of %d bytes from %d", me, rows, st, rows*8, prev)
			}
			for r := range rows {
				if got, want := ghost[r*cols], float64(prev*1_000_000+r*cols+cols-2); got != want {
					return fmt.Errorf("rank %d, %d rows: ghost row %d = %v, want %v", me, rows, r, got, want)
				}
				if got := ghost[r*cols+1]; got != 0 {
					return fmt.Errorf("rank %d: [%d][1] = %v, want 0 (outside the layout)", me, r, got)
				}
			}
		}
		return nil
	})
}
