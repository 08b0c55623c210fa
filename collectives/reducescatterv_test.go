package collectives

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// checkReduceScatterV runs one ReduceScatterV over counts and checks this rank's block
// against the sequential reference.
func checkReduceScatterV[T runtime.Elem](e rankEnv, oc opCase[T], counts []int, inPlace bool) error {
	what := name[T](fmt.Sprintf("reduce_scatter_v %s counts=%v", oc.op.Name(), counts), counts[e.r], inPlace)
	total := offset(counts, e.p)
	send, recv := input(oc.gen, e.r, total), garbage(oc.gen, counts[e.r])
	if inPlace {
		recv = slices.Clone(send)
		send = nil
	}
	if err := ReduceScatterV(e.ctx, e.w, send, recv, counts, oc.op); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	off := offset(counts, e.r)
	return compare(what, recv[:counts[e.r]], reference(oc, e.p, total)[off:off+counts[e.r]])
}

// TestReduceScatterV checks ReduceScatterV against the sequential reference with
// commutative and non-commutative operators, counts with empty blocks, short and
// rendezvous, in place and not.
func TestReduceScatterV(t *testing.T) {
	for _, j := range vJobs {
		for _, p := range j.p {
			t.Run(fmt.Sprintf("%s/p=%d", j.name, p), func(t *testing.T) {
				runJob(t, p, j.opt, 60*time.Second, func(e rankEnv) error {
					k := 0
					for _, max := range []int{0, 1, 4, 3000} {
						for seed := range 2 {
							counts := layoutOf(p, seed, max, 0).counts
							k++
							for _, f := range []func() error{
								func() error { return checkReduceScatterV(e, affineCase[uint64](), counts, k%2 == 0) },
								func() error { return checkReduceScatterV(e, intCases[int32]()[0], counts, k%2 == 1) },
								func() error { return checkReduceScatterV(e, floatCases[float64]()[1], counts, k%2 == 0) },
								func() error { return checkReduceScatterV(e, mat2Case[int16](), counts, k%2 == 1) },
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

// TestReduceScatterVMisuse: bad arguments fail at once with runtime.ErrInvalid; a rank
// whose counts differ makes some rank fail with ErrMismatch or ErrTruncated, and every
// rank fails, succeeds with what its own counts ask for, or ends at the deadline; the
// World works afterwards.
func TestReduceScatterVMisuse(t *testing.T) {
	runJob(t, 3, runtimetest.Options{Transport: "shm"}, 20*time.Second, func(e rankEnv) error {
		ctx, w := e.ctx, e.w
		six, two := make([]int64, 6), make([]int64, 2)
		sum := Sum[int64]()
		cases := []struct {
			err  error
			want string
		}{
			{ReduceScatterV(ctx, w, six, two, []int{2, 2}, sum), "len(counts) 2 != 3 ranks"},
			{ReduceScatterV(ctx, w, six, two, []int{2, -1, 5}, sum), "counts[1] = -1 is negative"},
			{ReduceScatterV(ctx, w, six, two, []int{2, 2, 2}, Op[int64]{}), "zero op"},
			{ReduceScatterV(ctx, w, six[:5], two, []int{2, 2, 2}, sum), "len(send) 5 != sum(counts) 6"},
			{ReduceScatterV(ctx, w, six, six[:3], []int{2, 2, 2}, sum), "len(recv) 3 != counts"},
			{ReduceScatterV(ctx, w, nil, six[:5], []int{2, 2, 2}, sum), "in place: len(recv) 5 != sum(counts) 6"},
			{ReduceScatterV(ctx, w, six, six[4:], []int{2, 2, 2}, sum), "overlap"},
		}
		for i, c := range cases {
			if !errors.Is(c.err, runtime.ErrInvalid) || !strings.HasPrefix(c.err.Error(), "collectives: reduce_scatter_v: ") ||
				!strings.Contains(strings.ToLower(c.err.Error()), strings.ToLower(c.want)) {
				return fmt.Errorf("case %d: got %v, want an ErrInvalid error naming %q", i, c.err, c.want)
			}
		}
		seen := 0
		for k, bad := range [][]int{{1, 2, 3}, {1, 3, 2}, {1, 1, 4}} {
			counts := []int{1, 2, 3}
			if e.r == 1 {
				counts = bad
			}
			out, err := runMismatched(e, 400*time.Millisecond, "reduce_scatter_v", func(e rankEnv) (func() error, error) {
				send, recv := input(small64, e.r, 6), make([]int64, counts[e.r])
				err := ReduceScatterV(e.ctx, e.w, send, recv, counts, sum)
				return func() error {
					if slices.Equal(counts, []int{1, 2, 3}) || e.r != 1 {
						return checkReduceScatterVSum(e, counts, recv)
					}
					return errors.New("succeeded with other counts than the rest")
				}, err
			})
			if err != nil {
				return fmt.Errorf("mismatch %d: %w", k, err)
			}
			if out == mismatchSeen {
				seen++
			}
			if err := checkReduceScatterV(e, affineCase[int64](), []int{2, 0, 1}, k%2 == 0); err != nil {
				return fmt.Errorf("after mismatch %d: %w", k, err)
			}
		}
		// Rank 1's counts differ in the two last cases (its own block's length too).
		if total, err := allSum(e, seen); err != nil || total == 0 {
			return fmt.Errorf("mismatches seen by all ranks: %d (%v)", total, err)
		}
		return nil
	})
}

func small64(r, i int) int64 { return int64(small(r, i)) }

// checkReduceScatterVSum checks recv, the block of a sum over inputs small(r, i) with
// counts, as this rank's counts place it.
func checkReduceScatterVSum(e rankEnv, counts []int, recv []int64) error {
	off := offset(counts, e.r)
	want := make([]int64, counts[e.r])
	for r := range e.p {
		for i := range want {
			want[i] += int64(small(r, off+i))
		}
	}
	return compare("reduce_scatter_v sum", recv, want)
}

// allSum returns the sum of every rank's v.
func allSum(e rankEnv, v int) (int, error) {
	x := []int64{int64(v)}
	err := Allreduce(e.ctx, e.w, nil, x, Sum[int64]())
	return int(x[0]), err
}

// TestReduceLocal checks ReduceLocal against Apply: in is the left operand, so a
// non-commutative operator gives in ∘ inout; and its misuse.
func TestReduceLocal(t *testing.T) {
	oc := affineCase[uint64]()
	in, inout := input(oc.gen, 1, 9), input(oc.gen, 2, 9)
	want := slices.Clone(in)
	oc.op.Apply(want, inout)
	if err := ReduceLocal(in, inout, oc.op); err != nil {
		t.Fatal(err)
	}
	if err := compare("affine", inout, want); err != nil {
		t.Error(err)
	}
	if err := compare("affine: in changed", in, input(oc.gen, 1, 9)); err != nil {
		t.Error(err)
	}
	a, b := []float64{1, 2, 3}, []float64{10, 20, 30}
	if err := ReduceLocal(a, b, Sum[float64]()); err != nil || !slices.Equal(b, []float64{11, 22, 33}) {
		t.Errorf("sum: %v, %v", b, err)
	}
	if err := ReduceLocal[float64](nil, nil, Max[float64]()); err != nil {
		t.Errorf("empty: %v", err)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{ReduceLocal(a, b[:2], Sum[float64]()), "len(in) 3 != len(inout) 2"},
		{ReduceLocal(a, a, Sum[float64]()), "overlap"},
		{ReduceLocal(a, b, Op[float64]{}), "zero op"},
	} {
		if !errors.Is(c.err, runtime.ErrInvalid) || !strings.HasPrefix(c.err.Error(), "collectives: reduce_local: ") ||
			!strings.Contains(strings.ToLower(c.err.Error()), strings.ToLower(c.want)) {
			t.Errorf("got %v, want an ErrInvalid error naming %q", c.err, c.want)
		}
	}
}
