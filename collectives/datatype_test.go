package collectives

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// typeJobs are the placements of the typed collectives' tests.
var typeJobs = []struct {
	name string
	n    int
	opt  runtimetest.Options
}{
	{"shm", 3, runtimetest.Options{Transport: "shm"}},
	{"tcp", 3, runtimetest.Options{Transport: "tcp"}},
	{"hosts", 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}},
}

func forTypeJobs(t *testing.T, f func(e rankEnv) error) {
	for _, j := range typeJobs {
		t.Run(j.name, func(t *testing.T) { runJob(t, j.n, j.opt, 20*time.Second, f) })
	}
}

type body struct {
	ID  int32
	Pos [2]float64
	V   float32
}

// TestBcastType broadcasts a matrix column (a vector type; packed) and an array of
// structs' positions (FromStruct), and a contiguous layout (sent in place).
func TestBcastType(t *testing.T) {
	forTypeJobs(t, func(e rankEnv) error {
		const rows, cols = 300, 4
		root := e.p - 1
		m := make([]float64, rows*cols)
		if e.r == root {
			for i := range m {
				m[i] = float64(i)
			}
		}
		col, _ := datatype.Vector[float64](rows, 1, cols)
		if err := BcastType(e.ctx, e.w, m[1:], 1, col, root); err != nil {
			return err
		}
		for i, v := range m {
			want := 0.0
			if e.r == root || i%cols == 1 {
				want = float64(i)
			}
			if v != want {
				return fmt.Errorf("rank %d: m[%d] = %v, want %v", e.r, i, v, want)
			}
		}
		pos, _ := datatype.FromStruct[body]("Pos")
		bs := make([]body, 50)
		for i := range bs {
			bs[i].ID = int32(e.r)
			if e.r == root {
				bs[i].Pos = [2]float64{float64(i), -float64(i)}
			}
		}
		if err := BcastType(e.ctx, e.w, bs, len(bs), pos, root); err != nil {
			return err
		}
		for i, b := range bs {
			if want := (body{int32(e.r), [2]float64{float64(i), -float64(i)}, 0}); b != want {
				return fmt.Errorf("rank %d: body %d = %+v, want %+v", e.r, i, b, want)
			}
		}
		run, _ := datatype.Contiguous[int32](5)
		x := make([]int32, 10)
		if e.r == root {
			copy(x, []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
		}
		if err := BcastType(e.ctx, e.w, x, 2, run, root); err != nil {
			return err
		}
		if fmt.Sprint(x) != "[1 2 3 4 5 6 7 8 9 10]" {
			return fmt.Errorf("rank %d: contiguous bcast %v", e.r, x)
		}
		return nil
	})
}

// TestGatherScatterType gathers each rank's column into column r of root's matrix with a
// column type resized to one element (MPI's idiom for interleaved blocks), scatters the
// columns back, and allgathers and alltoalls the same way.
func TestGatherScatterType(t *testing.T) {
	forTypeJobs(t, func(e rankEnv) error {
		const rows = 7
		p, r := e.p, e.r
		mine := make([]int64, rows) // contiguous at every rank
		for i := range mine {
			mine[i] = int64(r*100 + i)
		}
		flat, _ := datatype.Contiguous[int64](rows)
		colv, _ := datatype.Vector[int64](rows, 1, p)
		col, _ := colv.Resized(0, 8) // consecutive copies start one element apart
		want := make([]int64, rows*p)
		for i := range rows {
			for q := range p {
				want[i*p+q] = int64(q*100 + i)
			}
		}
		root := 1
		m := make([]int64, rows*p)
		if err := GatherType(e.ctx, e.w, mine, 1, flat, m, 1, col, root); err != nil {
			return err
		}
		if r == root && fmt.Sprint(m) != fmt.Sprint(want) {
			return fmt.Errorf("gather at root: %v, want %v", m, want)
		}
		back := make([]int64, rows)
		if err := ScatterType(e.ctx, e.w, m, 1, col, back, 1, flat, root); err != nil {
			return err
		}
		if fmt.Sprint(back) != fmt.Sprint(mine) {
			return fmt.Errorf("rank %d: scatter %v, want %v", r, back, mine)
		}
		all := make([]int64, rows*p)
		if err := AllgatherType(e.ctx, e.w, mine, 1, flat, all, 1, col); err != nil {
			return err
		}
		if fmt.Sprint(all) != fmt.Sprint(want) {
			return fmt.Errorf("rank %d: allgather %v, want %v", r, all, want)
		}
		// Alltoall: rank r sends column q of its rows x p matrix to rank q, which stores
		// it as a contiguous row r: the transpose, gathered.
		src := make([]int64, rows*p)
		for i := range rows {
			for q := range p {
				src[i*p+q] = int64(r*1000 + i*p + q)
			}
		}
		dst := make([]int64, rows*p)
		if err := AlltoallType(e.ctx, e.w, src, 1, col, dst, 1, flat); err != nil {
			return err
		}
		for q := range p {
			for i := range rows {
				if got, want := dst[q*rows+i], int64(q*1000+i*p+r); got != want {
					return fmt.Errorf("rank %d: alltoall from %d, row %d = %d, want %d", r, q, i, got, want)
				}
			}
		}
		return nil
	})
}

// TestTypeCollectiveMisuse checks that layouts outside their buffers and mismatched
// packed sizes fail with runtime.ErrInvalid at once, naming the rank.
func TestTypeCollectiveMisuse(t *testing.T) {
	runJob(t, 2, runtimetest.Options{Transport: "shm"}, 10*time.Second, func(e rankEnv) error {
		col, _ := datatype.Vector[float64](4, 1, 4)
		buf := make([]float64, 12)
		three, _ := datatype.Contiguous[float64](3)
		two, _ := datatype.Vector[float64](2, 1, 4)
		cases := []struct {
			name string
			err  error
			want string
		}{
			{"bcast beyond", BcastType(e.ctx, e.w, buf, 1, col, 0), "reach byte 104, but the buffer holds 96 bytes"},
			{"gather sizes", GatherType(e.ctx, e.w, buf, 1, two, buf, 1, three, e.r), "each rank's block is 16 packed bytes, but 1 copies"},
			{"allgather recv short", AllgatherType(e.ctx, e.w, buf, 1, three, buf[:5], 1, three), "2 copies of"},
			{"scatter negative", ScatterType(e.ctx, e.w, buf, 1, three, buf, -1, three, 0), "count -1"},
			{"nil world", BcastType[float64](e.ctx, nil, buf, 1, col, 0), "nil World"},
		}
		for _, c := range cases {
			if !errors.Is(c.err, runtime.ErrInvalid) || !strings.Contains(c.err.Error(), c.want) {
				return fmt.Errorf("%s: %v, want ErrInvalid containing %q", c.name, c.err, c.want)
			}
			if c.name != "nil world" && !strings.Contains(c.err.Error(), fmt.Sprintf("rank %d", e.r)) {
				return fmt.Errorf("%s: %v does not name rank %d", c.name, c.err, e.r)
			}
		}
		return nil
	})
}
