package collectives

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// locInput is rank r's pairs: values from a few distinct ones, so that ties across ranks
// are common, and indices that do not grow with the rank (the lowest index is not the
// lowest rank's).
func locInput[V Ordered, I LocIndex](r, n int) ([]V, []I) {
	vals, idx := make([]V, n), make([]I, n)
	for i := range n {
		vals[i] = V((r*5 + i*3) % 4)
		idx[i] = I((r*7 + i*11) % 13)
	}
	return vals, idx
}

// locReference folds the ranks' pairs in rank order with MPI's definition of MAXLOC or
// MINLOC: (u, i) ∘ (v, j) = (w, k), w the larger (smaller) value, k = i if u wins, j if v
// wins, min(i, j) if u == v.
func locReference[V Ordered, I LocIndex](p, n int, op LocOp) ([]V, []I) {
	vals, idx := locInput[V, I](0, n)
	for r := 1; r < p; r++ {
		v, j := locInput[V, I](r, n)
		for i := range n {
			better := v[i] > vals[i]
			if op == MinLoc {
				better = v[i] < vals[i]
			}
			switch {
			case better:
				vals[i], idx[i] = v[i], j[i]
			case v[i] == vals[i]:
				idx[i] = min(idx[i], j[i])
			}
		}
	}
	return vals, idx
}

// checkLoc runs AllreduceLoc (root < 0) or ReduceLoc and compares with locReference.
func checkLoc[V Ordered, I LocIndex](e rankEnv, n int, op LocOp, root int, inPlace bool) error {
	var zv V
	var zi I
	what := fmt.Sprintf("%v %T,%T n=%d root=%d in-place=%v", op, zv, zi, n, root, inPlace)
	sv, si := locInput[V, I](e.r, n)
	vals, idx := make([]V, n), make([]I, n)
	if inPlace && (root < 0 || e.r == root) {
		copy(vals, sv)
		copy(idx, si)
		sv, si = nil, nil
	}
	var err error
	if root < 0 {
		err = AllreduceLoc(e.ctx, e.w, sv, si, vals, idx, op)
	} else {
		err = ReduceLoc(e.ctx, e.w, sv, si, vals, idx, op, root)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if root >= 0 && e.r != root {
		return nil
	}
	wv, wi := locReference[V, I](e.p, n, op)
	if err := compare(what+": values", vals, wv); err != nil {
		return err
	}
	return compare(what+": indices", idx, wi)
}

// TestAllreduceLoc checks AllreduceLoc and ReduceLoc against MPI's definition, ties
// across ranks included, on every value type kind and both index types, short and
// rendezvous counts, every root, in place and not.
func TestAllreduceLoc(t *testing.T) {
	for _, j := range vJobs {
		for _, p := range j.p {
			t.Run(fmt.Sprintf("%s/p=%d", j.name, p), func(t *testing.T) {
				runJob(t, p, j.opt, 60*time.Second, func(e rankEnv) error {
					k := 0
					for _, n := range []int{0, 1, 7, 5000} {
						for _, op := range []LocOp{MaxLoc, MinLoc} {
							k++
							root := []int{-1, k % p}[k%2]
							for _, f := range []func() error{
								func() error { return checkLoc[float64, int32](e, n, op, -1, k%2 == 0) },
								func() error { return checkLoc[int32, int32](e, n, op, root, k%2 == 1) },
								func() error { return checkLoc[uint8, int64](e, n, op, k%p, k%3 == 0) },
								func() error { return checkLoc[float32, int64](e, n, op, -1, k%3 == 1) },
							} {
								if err := f(); err != nil {
									return err
								}
							}
						}
					}
					return Barrier(e.ctx, e.w)
				})
			})
		}
	}
}

// TestAllreduceLocFloat: a NaN wins with the lowest index among the NaNs, and -0 and +0
// tie.
func TestAllreduceLocFloat(t *testing.T) {
	runJob(t, 3, runtimetest.Options{Transport: "shm"}, 20*time.Second, func(e rankEnv) error {
		nan, negz := math.NaN(), math.Copysign(0, -1)
		in := [][]float64{{1, negz, 5}, {nan, 0, nan}, {nan, negz, 2}}
		ix := [][]int32{{0, 9, 1}, {4, 3, 8}, {2, 7, 6}}
		vals, idx := make([]float64, 3), make([]int32, 3)
		if err := AllreduceLoc(e.ctx, e.w, in[e.r], ix[e.r], vals, idx, MaxLoc); err != nil {
			return err
		}
		if !math.IsNaN(vals[0]) || vals[1] != 0 || !math.IsNaN(vals[2]) || !slices.Equal(idx, []int32{2, 3, 8}) {
			return fmt.Errorf("got %v %v, want [NaN 0 NaN] [2 3 8]", vals, idx)
		}
		return nil
	})
}

// TestAllreduceLocMisuse: bad arguments fail with runtime.ErrInvalid naming the call,
// and the calls work afterwards.
func TestAllreduceLocMisuse(t *testing.T) {
	runJob(t, 3, runtimetest.Options{Transport: "shm"}, 20*time.Second, func(e rankEnv) error {
		ctx, w, next := e.ctx, e.w, (e.r+1)%e.p
		v2, v3 := make([]float64, 2), make([]float64, 3)
		i2, i3 := make([]int32, 2), make([]int32, 3)
		cases := []struct {
			name string
			err  error
			want string
		}{
			{"AllreduceLoc", AllreduceLoc(ctx, w, v2, i2, v3, i3, LocOp(0)), "neither MaxLoc nor MinLoc"},
			{"AllreduceLoc", AllreduceLoc(ctx, w, v2, i2, v2, i3, MaxLoc), "len(vals) 2 != len(idx) 3"},
			{"AllreduceLoc", AllreduceLoc(ctx, w, v2, i3, v3, i3, MaxLoc), "len(sendVals) 2 != len(sendIdx) 3"},
			{"AllreduceLoc", AllreduceLoc(ctx, w, v2, i2, v3, i3, MinLoc), "len(sendVals) 2 != len(vals) 3"},
			{"AllreduceLoc", AllreduceLoc(ctx, w, v3[1:], i2, v3[:2], i3[:2], MinLoc), "overlap"},
			{"ReduceLoc", ReduceLoc(ctx, w, v2, i2, v3, i3, MaxLoc, -1), "root -1 of 3 ranks"},
			{"ReduceLoc", ReduceLoc(ctx, w, v2, i2, v3, i3, MaxLoc, 3), "root 3 of 3 ranks"},
			{"ReduceLoc", ReduceLoc[float64, int32](ctx, w, nil, nil, v3, i3, MaxLoc, next), "nil send at a rank other than root"},
			{"AllreduceLoc", AllreduceLoc[float64, int32](ctx, nil, nil, nil, v3, i3, MaxLoc), "nil world"},
		}
		for i, c := range cases {
			if !errors.Is(c.err, runtime.ErrInvalid) || !strings.HasPrefix(c.err.Error(), "collectives: "+map[string]string{"AllreduceLoc": "allreduce_loc", "ReduceLoc": "reduce_loc"}[c.name]+": ") ||
				!strings.Contains(strings.ToLower(c.err.Error()), strings.ToLower(c.want)) {
				return fmt.Errorf("case %d (%s): got %v, want an ErrInvalid error naming %q", i, c.name, c.err, c.want)
			}
		}
		return checkLoc[float64, int32](e, 9, MinLoc, -1, false)
	})
}

// TestLogicalOps checks Land, Lor and Lxor against their truth tables through Allreduce
// (nonzero is true, the result 0 or 1, negative and large values included).
func TestLogicalOps(t *testing.T) {
	for _, p := range []int{1, 2, 3, 5} {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			runJob(t, p, runtimetest.Options{Transport: "shm"}, 20*time.Second, func(e rankEnv) error {
				gen := func(r, i int) int16 { return int16([]int{0, 1, -3, 256, 0, 7}[(r*i+r+i/2)%6]) }
				for _, oc := range []opCase[int16]{{Land[int16](), gen}, {Lor[int16](), gen}, {Lxor[int16](), gen}} {
					if err := checkAllreduce(e, oc, 37, e.p%2 == 0); err != nil {
						return err
					}
					want := make([]int16, 37)
					for i := range want {
						n := 0 // ranks whose element is true
						for r := range e.p {
							if gen(r, i) != 0 {
								n++
							}
						}
						want[i] = map[string]int16{
							"land": truth[int16](n == e.p), "lor": truth[int16](n > 0), "lxor": truth[int16](n%2 == 1),
						}[oc.op.Name()]
					}
					if e.p > 1 {
						if err := compare("truth table "+oc.op.Name(), reference(oc, e.p, 37), want); err != nil {
							return err
						}
					}
				}
				x := []uint64{0, 5, 1 << 63}
				y := []uint64{3, 0, 1 << 63}
				Lxor[uint64]().combine(x, x, y)
				if !slices.Equal(x, []uint64{1, 1, 0}) {
					return fmt.Errorf("lxor combine: %v", x)
				}
				return nil
			})
		})
	}
}
