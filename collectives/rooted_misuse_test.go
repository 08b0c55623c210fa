package collectives

// Misuse of Gather, Scatter, Scan and Exscan: bad arguments, counts and roots that differ
// across ranks, calls after Finalize.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestRootedBadArguments: arguments that every rank passes alike, or that a rank checks
// before any message (a root's own lengths, checked with every rank its own root), fail
// at once with runtime.ErrInvalid, an error naming the call and what is wrong; the calls
// work afterwards.
func TestRootedBadArguments(t *testing.T) {
	runJob(t, 3, runtimetest.Options{Transport: "shm"}, 20*time.Second, func(e rankEnv) error {
		ctx, w, p, me, next := e.ctx, e.w, e.p, e.r, (e.r+1)%e.p
		two, five, six := make([]int64, 2), make([]int64, 5), make([]int64, 6)
		sum := Sum[int64]()
		cases := []struct {
			name string
			err  error
			want string
		}{
			{"gather", Gather(ctx, w, two, six, -1), "root -1 of 3 ranks"},
			{"gather", Gather(ctx, w, two, six, p), "root 3 of 3 ranks"},
			{"gather", Gather(ctx, w, two, five, me), "len(recv) 5 at root != 3 ranks * len(send) 2"},
			{"gather", Gather(ctx, w, two, nil, me), "len(recv) 0 at root"},
			{"gather", Gather(ctx, w, nil, five, me), "in place: len(recv) 5 at root is not a multiple of 3 ranks"},
			{"gather", Gather(ctx, w, nil, six, next), "nil send at a rank other than root"},
			{"gather", Gather(ctx, w, six[2*me:2*me+2], six, me), "overlap"},
			{"gather", Gather(ctx, w, six[1:3], six, me), "overlap"},
			{"scatter", Scatter(ctx, w, six, two, -1), "root -1 of 3 ranks"},
			{"scatter", Scatter(ctx, w, six, two, p), "root 3 of 3 ranks"},
			{"scatter", Scatter(ctx, w, five, two, me), "len(send) 5 at root != 3 ranks * len(recv) 2"},
			{"scatter", Scatter(ctx, w, nil, two, me), "len(send) 0 at root"},
			{"scatter", Scatter(ctx, w, five, nil, me), "in place: len(send) 5 at root is not a multiple of 3 ranks"},
			{"scatter", Scatter(ctx, w, six, nil, next), "nil recv at a rank other than root"},
			{"scatter", Scatter(ctx, w, six, six[2*me:2*me+2], me), "nil recv at root for in place"},
			{"scan", Scan(ctx, w, two, make([]int64, 2), Op[int64]{}), "zero op"},
			{"scan", Scan(ctx, w, two, make([]int64, 3), sum), "len(send) 2 != len(recv) 3"},
			{"scan", Scan(ctx, w, two, two, sum), "overlap"},
			{"exscan", Exscan(ctx, w, two, make([]int64, 2), NewOp[int64]("mine", nil, false)), "zero op"},
			{"exscan", Exscan(ctx, w, six[:3], six[2:5], mat2[int64]()), "overlap"},
			{"exscan", Exscan(ctx, w, nil, nil, Op[int64]{}), "zero op"},
			{"gather", Gather(ctx, nil, two, six, 0), "nil world"},
			{"scatter", Scatter(ctx, nil, six, two, 0), "nil world"},
			{"scan", Scan(ctx, nil, two, six, sum), "nil world"},
			{"exscan", Exscan(ctx, nil, two, six, sum), "nil world"},
		}
		for i, c := range cases {
			if !errors.Is(c.err, runtime.ErrInvalid) || !strings.HasPrefix(c.err.Error(), "collectives: "+c.name+": ") ||
				!strings.Contains(strings.ToLower(c.err.Error()), strings.ToLower(c.want)) {
				return fmt.Errorf("case %d (%s): got %v, want an ErrInvalid error naming %q", i, c.name, c.err, c.want)
			}
		}
		if err := checkGather(e, mat2Case[int16]().gen, 3, 1, false); err != nil {
			return fmt.Errorf("after misuse: %w", err)
		}
		if err := checkScatter(e, mat2Case[int16]().gen, 3, 2, true); err != nil {
			return fmt.Errorf("after misuse: %w", err)
		}
		return checkScan(e, mat2Case[int32](), 5, false, true)
	})
}

// mismatchCase is a call whose ranks pass different counts or roots: run makes this
// rank's call and, if it succeeds, checks its result against what this rank's own
// arguments ask for (a success with anything else would be a silent wrong answer).
type mismatchCase struct {
	name string
	run  func(e rankEnv) (func() error, error)
}

// gatherCase is a Gather of 5 blocks where rank r passes n(r) elements and root(r).
func gatherCase(n, root func(r int) int) mismatchCase {
	return mismatchCase{"gather", func(e rankEnv) (func() error, error) {
		gen := affineCase[int64]().gen
		m, rt := n(e.r), root(e.r)
		var recv []int64
		if e.r == rt {
			recv = make([]int64, e.p*m)
		}
		err := Gather(e.ctx, e.w, input(gen, e.r, m), recv, rt)
		return func() error { return compare("gather", recv, gathered(gen, e.p, m)[:len(recv)]) }, err
	}}
}

// scatterCase is a Scatter where rank r passes n(r) elements and root(r); a root's send
// holds its own rank's values, so that a rank given another root's blocks can tell.
func scatterCase(n, root func(r int) int) mismatchCase {
	return mismatchCase{"scatter", func(e rankEnv) (func() error, error) {
		gen := affineCase[int64]().gen
		m, rt := n(e.r), root(e.r)
		var send []int64
		if e.r == rt {
			send = input(gen, rt, e.p*m)
		}
		recv := make([]int64, m)
		err := Scatter(e.ctx, e.w, send, recv, rt)
		return func() error { return compare("scatter", recv, input(gen, rt, e.p*m)[e.r*m:(e.r+1)*m]) }, err
	}}
}

// bcastCase is a Bcast of n elements where rank r names root(r); a root's buf holds its
// own rank's values, so that a rank given another root's buffer can tell.
func bcastCase(n int, root func(r int) int) mismatchCase {
	return mismatchCase{"bcast", func(e rankEnv) (func() error, error) {
		gen := affineCase[int64]().gen
		rt := root(e.r)
		buf := make([]int64, n)
		if e.r == rt {
			buf = input(gen, rt, n)
		}
		err := Bcast(e.ctx, e.w, buf, rt)
		return func() error { return compare("bcast", buf, input(gen, rt, n)) }, err
	}}
}

// reduceCase is a Reduce (sum) of n elements where rank r names root(r): a rank that
// names itself root must get the sum of all, never a partial one.
func reduceCase(n int, root func(r int) int) mismatchCase {
	return mismatchCase{"reduce", func(e rankEnv) (func() error, error) {
		oc := intCases[int64]()[0]
		rt := root(e.r)
		var recv []int64
		if e.r == rt {
			recv = make([]int64, n)
		}
		err := Reduce(e.ctx, e.w, input(oc.gen, e.r, n), recv, oc.op, rt)
		return func() error {
			if e.r != rt {
				return nil
			}
			return compare("reduce", recv, reference(oc, e.p, n))
		}, err
	}}
}

// scanCase is a Scan (Exscan) where rank r passes n(r) elements.
func scanCase(exclusive bool, n func(r int) int) mismatchCase {
	name, f := "scan", Scan[int64]
	if exclusive {
		name, f = "exscan", Exscan[int64]
	}
	return mismatchCase{name, func(e rankEnv) (func() error, error) {
		oc, m := mat2Case[int64](), n(e.r)
		recv := make([]int64, m)
		err := f(e.ctx, e.w, input(oc.gen, e.r, m), recv, oc.op)
		return func() error {
			if exclusive && e.r == 0 {
				return compare("exscan", recv, make([]int64, m))
			}
			k := e.r + 1
			if exclusive {
				k = e.r
			}
			return compare(name, recv, reference(oc, k, m))
		}, err
	}}
}

// but returns a count or root function: v at rank bad, else def.
func but(def, bad, v int) func(r int) int {
	return func(r int) int {
		if r == bad {
			return v
		}
		return def
	}
}

// TestRootedMismatch: calls whose counts differ across ranks (one rank more, or 0, at
// leaves, inner ranks and the root) end in ErrMismatch or runtime.ErrTruncated at some
// rank, and calls whose roots differ end in the deadline at some rank (in these cases:
// not in all, see rootTag); at every rank a call either fails with one of those or
// succeeds with the result its own arguments ask for (never another root's blocks), and
// the World works afterwards.
func TestRootedMismatch(t *testing.T) {
	const wait = 400 * time.Millisecond // for a call that cannot succeed
	same := func(v int) func(int) int { return func(int) int { return v } }
	cases := []struct {
		c     mismatchCase
		clear bool // some rank must see ErrMismatch or ErrTruncated (else the deadline will do)
	}{
		{gatherCase(but(7, 1, 8), same(0)), true},  // a leaf passes more
		{gatherCase(but(7, 4, 6), same(2)), true},  // an inner rank passes less
		{gatherCase(but(7, 1, 0), same(1)), true},  // root passes 0
		{gatherCase(but(0, 3, 1), same(0)), true},  // a leaf passes 1, the others 0
		{scatterCase(but(7, 2, 8), same(0)), true}, // an inner rank passes more
		{scatterCase(but(7, 4, 0), same(4)), true}, // root passes 0
		{scatterCase(but(7, 3, 0), same(1)), true}, // a leaf passes 0
		{scanCase(false, but(7, 2, 8)), true},
		{scanCase(false, but(7, 3, 0)), true},
		{scanCase(true, but(7, 0, 0)), true},
		{scanCase(true, but(3000, 4, 3001)), true}, // rendezvous
		// Rank 2 names itself root and sends rank 3 its block, which rank 3 (root 0's
		// leaf below rank 2) took for root 0's before rootTag.
		{scatterCase(same(5), but(0, 2, 2)), false},
		{gatherCase(same(5), but(0, 2, 2)), false},
		{scatterCase(same(5), but(3, 0, 1)), false},
		{gatherCase(same(5), but(3, 4, 4)), false},
		// The same for Bcast and Reduce: rank 3 took rank 2's buffer (or partial sum)
		// for root 0's before they mixed the root into their tags too.
		{bcastCase(5, but(0, 2, 2)), false},
		{bcastCase(1000, but(0, 2, 3)), false}, // eager messages (a rendezvous offer left unmatched would hold Finalize until its ctx)
		{reduceCase(5, but(0, 2, 2)), false},
		{reduceCase(5, but(3, 0, 0)), false},
	}
	seen := make([]atomic.Int32, len(cases)) // ranks that saw ErrMismatch or ErrTruncated
	failed := make([]atomic.Int32, len(cases))
	runJob(t, 5, runtimetest.Options{Transport: "shm"}, 40*time.Second, func(e rankEnv) error {
		for k, c := range cases {
			out, err := runMismatched(e, wait, c.c.name, c.c.run)
			if err != nil {
				return fmt.Errorf("case %d: %w", k, err)
			}
			if out == mismatchSeen {
				seen[k].Add(1)
			}
			if out != mismatchSucceeded {
				failed[k].Add(1)
			}
			if err := checkGather(e, mat2Case[uint8]().gen, 3, k%e.p, k%2 == 0); err != nil {
				return fmt.Errorf("case %d: the call after: %w", k, err)
			}
		}
		return checkScan(e, mat2Case[uint32](), 9, true, false)
	})
	for k, c := range cases {
		switch {
		case failed[k].Load() == 0:
			t.Errorf("case %d (%s): every rank succeeded", k, c.c.name)
		case c.clear && seen[k].Load() == 0:
			t.Errorf("case %d (%s): no rank reported the mismatch (all timed out)", k, c.c.name)
		}
	}
}

// TestRootedAfterFinalize: each call after Finalize fails at once with
// runtime.ErrFinalized, whether or not the World made a collective call before.
func TestRootedAfterFinalize(t *testing.T) {
	calls := map[string]func(ctx context.Context, w *runtime.World) error{
		"gather": func(ctx context.Context, w *runtime.World) error {
			return Gather(ctx, w, []int32{1}, make([]int32, 2), 0)
		},
		"scatter": func(ctx context.Context, w *runtime.World) error {
			return Scatter(ctx, w, []int32{1, 2}, make([]int32, 1), 0)
		},
		"scan": func(ctx context.Context, w *runtime.World) error {
			return Scan(ctx, w, []int32{1}, make([]int32, 1), Sum[int32]())
		},
		"exscan": func(ctx context.Context, w *runtime.World) error {
			return Exscan(ctx, w, nil, make([]int32, 1), Sum[int32]())
		},
	}
	for _, warm := range []bool{false, true} {
		for name, f := range calls {
			t.Run(fmt.Sprintf("warm=%v/%s", warm, name), func(t *testing.T) {
				j, err := runtimetest.Start(context.Background(), 2, runtimetest.Options{Transport: "shm"})
				if err != nil {
					t.Fatal(err)
				}
				defer j.Close()
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
				defer cancel()
				if warm {
					errs := make(chan error, 2)
					for _, w := range j.Worlds {
						go func() { errs <- f(ctx, w) }()
					}
					for range 2 {
						if err := <-errs; err != nil {
							t.Fatal(err)
						}
					}
				}
				if err := j.Finalize(ctx); err != nil {
					t.Fatal(err)
				}
				for _, w := range j.Worlds {
					if err := f(ctx, w); !errors.Is(err, runtime.ErrFinalized) || !strings.HasPrefix(err.Error(), "collectives: "+name+": ") {
						t.Errorf("rank %d: %s after Finalize: %v, want runtime.ErrFinalized", w.Rank(), name, err)
					}
				}
			})
		}
	}
}

// TestRootedMismatchWritesNothing: a Reduce (its root's input in send, or in place), a
// Gather and a Gatherv whose ranks name two roots (rank 0 itself, the others rank 1)
// never succeed at a rank that names itself root, and write no receive buffer at any
// rank, of 8 B, 64 KiB and 4 MiB, at 2 ranks and at 3 on one host, and of 8 B at 4 on
// two hosts and at 3 and 4 on hosts of their own. There ranks 1 and up agree on root 1
// and move their blocks point to point: root 1 takes them into recv only once every
// rank's are there. The calls end in their deadline or ErrMismatch; the World works
// afterwards. Across hosts the sizes stay eager: a sender whose rendezvous offer is never
// taken holds its Finalize (runtime's TestMisuseFinalizePending).
func TestRootedMismatchWritesNothing(t *testing.T) {
	all, reduces := []string{"reduce", "reduce in place", "gather", "gatherv"}, []string{"reduce", "reduce in place"}
	for _, tc := range []struct {
		hosts []string
		calls []string
		sizes []int // float64s
	}{
		{[]string{"a", "a"}, all, []int{1, 8 << 10, 512 << 10}},
		{[]string{"a", "a", "a"}, all, []int{1, 8 << 10}},
		{[]string{"a", "a", "a"}, reduces, []int{512 << 10}},
		{[]string{"a", "a", "b", "b"}, reduces, []int{1}},
		{[]string{"a", "b", "c"}, all, []int{1}},
		{[]string{"a", "b", "c", "d"}, all, []int{1}},
	} {
		t.Run(strings.Join(tc.hosts, "")+"/"+strconv.Itoa(len(tc.calls))+"x"+strconv.Itoa(tc.sizes[0]), func(t *testing.T) {
			runJob(t, len(tc.hosts), runtimetest.Options{Hosts: tc.hosts}, 60*time.Second, func(e rankEnv) error {
				root := min(e.r, 1)
				for _, n := range tc.sizes {
					for _, name := range tc.calls {
						if err := mismatchWrites(e, name, n, root); err != nil {
							return err
						}
					}
				}
				return nil
			})
		})
	}
}

// mismatchWrites runs one case of TestRootedMismatchWritesNothing: this rank's call
// named name, of n float64s, naming root.
func mismatchWrites(e rankEnv, name string, n, root int) error {
	var recv []float64
	inPlace := name == "reduce in place" && e.r == root
	call := func(e rankEnv) (func() error, error) {
		in := slices.Repeat([]float64{1}, n)
		ok := func() error { return nil } // a rank other than root may see its part done
		switch name {
		case "reduce", "reduce in place":
			recv = nanSlice(n)
			if inPlace {
				in = nil
				for i := range recv {
					recv[i] = float64(i) // the input
				}
			}
			return ok, Reduce(e.ctx, e.w, in, recv, Sum[float64](), root)
		case "gather":
			recv = nanSlice(n * e.p)
			return ok, Gather(e.ctx, e.w, in, recv, root)
		}
		recv = nanSlice(n * e.p)
		return ok, Gatherv(e.ctx, e.w, in, recv, slices.Repeat([]int{n}, e.p), nil, root)
	}
	out, err := runMismatched(e, 300*time.Millisecond, strings.Fields(name)[0], call)
	if err != nil {
		return fmt.Errorf("%s of %d: %w", name, n, err)
	}
	if out == mismatchSucceeded && e.r == root {
		return fmt.Errorf("%s of %d: root %d's call succeeded", name, n, root)
	}
	for i, v := range recv {
		if inPlace && v != float64(i) || !inPlace && !math.IsNaN(v) {
			return fmt.Errorf("%s of %d: recv[%d] written (%v), outcome %d", name, n, i, v, out)
		}
	}
	return nil
}

// nanSlice returns n NaNs.
func nanSlice(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}

// TestUnrootedMismatchWritesNothing: rank 0 calls Allgather while the others call
// Alltoall of as many bytes, on one host (shared memory compares the calls) and on two
// hosts of one rank each (every exchange meets the rank that does not match). No call
// succeeds, and no rank's recv is written. Across hosts with more ranks, the ranks that
// match exchange their blocks (docs/api.md). Sizes stay at eager ones: a rendezvous
// offer that a mismatch leaves untaken holds Finalize (runtime's
// TestMisuseFinalizePending).
func TestUnrootedMismatchWritesNothing(t *testing.T) {
	for _, tc := range []struct {
		hosts []string
		sizes []int // float64s per block
	}{
		{[]string{"a", "a"}, []int{1, 1 << 10}},
		{[]string{"a", "a", "a"}, []int{1, 1 << 10}},
		{[]string{"a", "a", "a", "a"}, []int{1}},
		{[]string{"a", "b"}, []int{1, 1 << 10}},
	} {
		t.Run(strings.Join(tc.hosts, ""), func(t *testing.T) {
			runJob(t, len(tc.hosts), runtimetest.Options{Hosts: tc.hosts}, 60*time.Second, func(e rankEnv) error {
				for _, n := range tc.sizes {
					name := "alltoall"
					if e.r == 0 {
						name = "allgather"
					}
					send, recv := slices.Repeat([]float64{1}, n), nanSlice(n*e.p)
					if name == "alltoall" {
						send = slices.Repeat([]float64{1}, n*e.p)
					}
					out, err := runMismatched(e, 300*time.Millisecond, name, func(e rankEnv) (func() error, error) {
						fail := func() error { return fmt.Errorf("rank %d's %s succeeded", e.r, name) }
						if name == "allgather" {
							return fail, Allgather(e.ctx, e.w, send, recv)
						}
						return fail, Alltoall(e.ctx, e.w, send, recv)
					})
					if err != nil {
						return fmt.Errorf("%s of %d: %w", name, n, err)
					}
					for i, v := range recv {
						if !math.IsNaN(v) {
							return fmt.Errorf("%s of %d: recv[%d] written (%v), outcome %d", name, n, i, v, out)
						}
					}
				}
				return nil
			})
		})
	}
}
