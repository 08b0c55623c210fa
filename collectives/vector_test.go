package collectives

// Allgatherv and Alltoallv: results against the sequential reference, bad arguments,
// counts that differ across ranks, and steady-state allocations.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// vectorBig is the byte size of the one large block of some cases: past the eager limit
// of every transport (16 KiB on shm, 64 KiB on tcp), so that it goes by rendezvous.
const vectorBig = 300 << 10

func realGen[T ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64](r, i int) T {
	return T(r*1000003 + i)
}

func complexGen(r, i int) complex128 { return complex(float64(r), float64(i)) }

// countsSum returns the sum of counts.
func countsSum(counts []int) int {
	total := 0
	for _, n := range counts {
		total += n
	}
	return total
}

// checkAllgatherv runs one Allgatherv of counts and checks recv against the owners'
// inputs in rank order, and that send is left as it was.
func checkAllgatherv[T runtime.Elem](e rankEnv, gen func(r, i int) T, counts []int, inPlace bool) error {
	what := name[T](fmt.Sprintf("allgatherv counts=%v", counts), countsSum(counts), inPlace)
	check, err := runAllgatherv(e, gen, counts, inPlace)
	if err == nil {
		err = check()
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// runAllgatherv runs one Allgatherv with this rank's counts and returns a check of its
// result and its error: every block as its owner made it, of the length counts give.
func runAllgatherv[T runtime.Elem](e rankEnv, gen func(r, i int) T, counts []int, inPlace bool) (func() error, error) {
	mine := input(gen, e.r, counts[e.r])
	send, recv := mine, garbage(gen, countsSum(counts))
	if inPlace {
		copy(recv[offset(counts, e.r):], send)
		send = nil
	}
	err := Allgatherv(e.ctx, e.w, send, recv, counts)
	return func() error {
		if err := compare("send changed", mine, input(gen, e.r, counts[e.r])); err != nil {
			return err
		}
		var want []T
		for r := range e.p {
			want = append(want, input(gen, r, counts[r])...)
		}
		return compare("recv", recv, want)
	}, err
}

// checkAlltoallv runs one Alltoallv where rank s sends cnt(s, d) elements to rank d.
func checkAlltoallv[T runtime.Elem](e rankEnv, gen func(r, i int) T, cnt func(s, d int) int) error {
	view := func(_, s, d int) int { return cnt(s, d) }
	what := name[T]("alltoallv", 0, false)
	check, err := runAlltoallv(e, gen, view)
	if err == nil {
		err = check()
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// runAlltoallv runs one Alltoallv where rank r believes that rank s sends view(r, s, d)
// elements to rank d, and returns a check of its result and its error: block s of recv
// is the elements rank s's send holds for this rank (as rank s's own view places them),
// of the length this rank's view gives.
func runAlltoallv[T runtime.Elem](e rankEnv, gen func(r, i int) T, view func(r, s, d int) int) (func() error, error) {
	sc, rc := make([]int, e.p), make([]int, e.p)
	for k := range e.p {
		sc[k], rc[k] = view(e.r, e.r, k), view(e.r, k, e.r)
	}
	send, recv := input(gen, e.r, countsSum(sc)), garbage(gen, countsSum(rc))
	err := Alltoallv(e.ctx, e.w, send, sc, recv, rc)
	return func() error {
		if err := compare("send changed", send, input(gen, e.r, countsSum(sc))); err != nil {
			return err
		}
		var want []T
		for s := range e.p {
			off := 0
			for d := range e.r {
				off += view(s, s, d)
			}
			for i := range rc[s] {
				want = append(want, gen(s, off+i))
			}
		}
		return compare("recv", recv, want)
	}, err
}

// vectorSuite runs Allgatherv (in place and not) and Alltoallv with irregular counts,
// zeros among them; big adds a case with one block of vectorBig bytes in each.
func vectorSuite[T runtime.Elem](e rankEnv, gen func(r, i int) T, big bool) error {
	p := e.p
	nbig := vectorBig / elemSize[T]()
	patterns := []func(r int) int{
		func(r int) int { return (r*7 + 3) % 5 },   // 3 0 2 4 1 ...
		func(r int) int { return r % 2 * (r + 9) }, // every other rank 0
		func(int) int { return 0 },
	}
	pairs := []func(s, d int) int{
		func(s, d int) int { return (s*3 + d*5) % 4 },
		func(s, d int) int { return (s + 2*d) % 3 * (s + d + 1) },
		func(int, int) int { return 0 },
	}
	if big {
		patterns = append(patterns, func(r int) int {
			if r == p/2 {
				return nbig
			}
			return r % 3
		})
		pairs = append(pairs, func(s, d int) int {
			if s == 0 && d == p-1 {
				return nbig
			}
			return (s + d) % 2
		})
	}
	for k, f := range patterns {
		counts := make([]int, p)
		for r := range counts {
			counts[r] = f(r)
		}
		if err := checkAllgatherv(e, gen, counts, k%2 == 0); err != nil {
			return err
		}
		if err := checkAllgatherv(e, gen, counts, k%2 == 1); err != nil {
			return err
		}
	}
	for _, f := range pairs {
		if err := checkAlltoallv(e, gen, f); err != nil {
			return err
		}
	}
	return nil
}

// vectorTypes runs vectorSuite over several element types, the large block for two.
func vectorTypes(e rankEnv) error {
	for _, f := range []func() error{
		func() error { return vectorSuite(e, mat2Case[int8]().gen, false) },
		func() error { return vectorSuite(e, mat2Case[uint16]().gen, false) },
		func() error { return vectorSuite(e, mat2Case[int32]().gen, true) },
		func() error { return vectorSuite(e, affineCase[int64]().gen, false) },
		func() error { return vectorSuite(e, realGen[float32], false) },
		func() error { return vectorSuite(e, realGen[float64], true) },
		func() error { return vectorSuite(e, complexGen, false) },
	} {
		if err := f(); err != nil {
			return err
		}
	}
	return Barrier(e.ctx, e.w)
}

// TestVectorCollectives checks Allgatherv and Alltoallv against the sequential reference
// on 1 to 9 ranks over shm.
func TestVectorCollectives(t *testing.T) {
	for p := 1; p <= 9; p++ {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			runJob(t, p, runtimetest.Options{Transport: "shm"}, 40*time.Second, vectorTypes)
		})
	}
}

// TestVectorLayouts runs them over tcp and over two pretend hosts.
func TestVectorLayouts(t *testing.T) {
	layouts := []struct {
		name string
		n    int
		opt  runtimetest.Options
	}{
		{"tcp", 3, runtimetest.Options{Transport: "tcp"}},
		{"hosts", 5, runtimetest.Options{Hosts: []string{"a", "a", "b", "b", "b"}}},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			runJob(t, l.n, l.opt, 40*time.Second, vectorTypes)
		})
	}
}

// TestVectorBadArguments: bad counts slices, lengths and overlaps fail at once with
// runtime.ErrInvalid, an error naming the call and what is wrong; the calls work
// afterwards.
func TestVectorBadArguments(t *testing.T) {
	runJob(t, 3, runtimetest.Options{Transport: "shm"}, 20*time.Second, func(e rankEnv) error {
		ctx, w, me := e.ctx, e.w, e.r
		two, five, six := make([]int64, 2), make([]int64, 5), make([]int64, 6)
		c2, c1 := []int{2, 2, 2}, []int{1, 1, 1}
		self := []int{0, 0, 0}
		self[me] = 1
		cases := []struct {
			name string
			err  error
			want string
		}{
			{"allgatherv", Allgatherv(ctx, w, two, six, []int{2, 2}), "len(counts) 2 != 3 ranks"},
			{"allgatherv", Allgatherv(ctx, w, two, six, nil), "len(counts) 0 != 3 ranks"},
			{"allgatherv", Allgatherv(ctx, w, two, six, []int{2, -1, 5}), "counts[1] = -1 is negative"},
			{"allgatherv", Allgatherv(ctx, w, two, six, c1), fmt.Sprintf("len(send) 2 != counts[%d] 1", me)},
			{"allgatherv", Allgatherv(ctx, w, two, five, c2), "len(recv) 5 != sum(counts) 6"},
			{"allgatherv", Allgatherv(ctx, w, nil, five, c2), "len(recv) 5 != sum(counts) 6"},
			{"allgatherv", Allgatherv(ctx, w, six[2*me:2*me+2], six, c2), "overlap"},
			{"allgatherv", Allgatherv(ctx, w, six[1:3], six, c2), "overlap"},
			{"alltoallv", Alltoallv(ctx, w, six, []int{2, 2}, six, c2), "len(sendCounts) 2 != 3 ranks"},
			{"alltoallv", Alltoallv(ctx, w, six, c2, six, []int{2, 2, 2, 0}), "len(recvCounts) 4 != 3 ranks"},
			{"alltoallv", Alltoallv(ctx, w, six, []int{-2, 4, 4}, six, c2), "sendCounts[0] = -2 is negative"},
			{"alltoallv", Alltoallv(ctx, w, six, c2, six, []int{3, 6, -3}), "recvCounts[2] = -3 is negative"},
			{"alltoallv", Alltoallv[int64](ctx, w, nil, c2, six, c2), "nil send"},
			{"alltoallv", Alltoallv(ctx, w, five, c2, six, c2), "len(send) 5 != sum(sendCounts) 6"},
			{"alltoallv", Alltoallv(ctx, w, six, c2, five, c2), "len(recv) 5 != sum(recvCounts) 6"},
			{"alltoallv", Alltoallv(ctx, w, two[:1], self, make([]int64, 0), []int{0, 0, 0}),
				fmt.Sprintf("sendCounts[%d] 1 != recvCounts[%d] 0", me, me)},
			{"alltoallv", Alltoallv(ctx, w, six, c2, six, c2), "overlap"},
			{"alltoallv", Alltoallv(ctx, w, six[:3], c1, six[2:5], c1), "overlap"},
			{"allgatherv", Allgatherv(ctx, nil, two, six, c2), "nil world"},
			{"alltoallv", Alltoallv(ctx, nil, six, c2, make([]int64, 6), c2), "nil world"},
		}
		for i, c := range cases {
			if !errors.Is(c.err, runtime.ErrInvalid) || !strings.HasPrefix(c.err.Error(), "collectives: "+c.name+": ") ||
				!strings.Contains(strings.ToLower(c.err.Error()), strings.ToLower(c.want)) {
				return fmt.Errorf("case %d (%s): got %v, want an ErrInvalid error naming %q", i, c.name, c.err, c.want)
			}
		}
		// Nothing to send at all: a nil send (and recv) is no elements, not a misuse.
		zero := []int{0, 0, 0}
		if err := Alltoallv[int64](ctx, w, nil, zero, nil, zero); err != nil {
			return fmt.Errorf("Alltoallv of nothing, nil buffers: %w", err)
		}
		if err := checkAllgatherv(e, mat2Case[int16]().gen, []int{3, 0, 2}, true); err != nil {
			return fmt.Errorf("after misuse: %w", err)
		}
		return checkAlltoallv(e, mat2Case[int16]().gen, func(s, d int) int { return s + d })
	})
}

// vectorMismatch is an Allgatherv or Alltoallv whose ranks disagree on the counts.
type vectorMismatch struct {
	name string
	run  func(e rankEnv) (func() error, error)
}

// allgathervMismatch: rank r's view of the counts is counts(r).
func allgathervMismatch(counts func(r int) []int) vectorMismatch {
	return vectorMismatch{"allgatherv", func(e rankEnv) (func() error, error) {
		return runAllgatherv(e, affineCase[int64]().gen, counts(e.r), e.r%2 == 0)
	}}
}

// alltoallvMismatch: rank r believes that rank s sends view(r, s, d) elements to d.
func alltoallvMismatch(view func(r, s, d int) int) vectorMismatch {
	return vectorMismatch{"alltoallv", func(e rankEnv) (func() error, error) {
		return runAlltoallv(e, affineCase[int64]().gen, view)
	}}
}

// countsBut returns counts of def for every block but v for block b at rank bad.
func countsBut(p, def, bad, b, v int) func(r int) []int {
	return func(r int) []int {
		c := make([]int, p)
		for i := range c {
			c[i] = def
		}
		if r == bad {
			c[b] = v
		}
		return c
	}
}

// rendezvousBut returns counts of 1 for every block but n for block b, and n+d at rank
// bad. Only block b is past the eager limit, and it travels no further than the rank that
// sees the mismatch: a rendezvous offer a failed rank left unmatched would hold its
// sender's Finalize until Finalize's context ends.
func rendezvousBut(p, n, bad, b, d int) func(r int) []int {
	return func(r int) []int {
		c := make([]int, p)
		for i := range c {
			c[i] = 1
		}
		c[b] = n
		if r == bad {
			c[b] += d
		}
		return c
	}
}

// pairBut returns a view where every pair sends def, but rank bad believes that s sends
// v to d.
func pairBut(def, bad, s, d, v int) func(r, s, d int) int {
	return func(r, ss, dd int) int {
		if r == bad && ss == s && dd == d {
			return v
		}
		return def
	}
}

// TestVectorMismatch: calls whose ranks disagree on the counts (of their own block or of
// another's, more, less, 0, rendezvous) end in ErrMismatch or runtime.ErrTruncated at
// some rank; at every rank a call either fails with one of those or the deadline, or
// succeeds with the result its own arguments ask for; the World works afterwards.
func TestVectorMismatch(t *testing.T) {
	const p, wait = 5, 400 * time.Millisecond
	cases := []vectorMismatch{
		allgathervMismatch(countsBut(p, 7, 2, 2, 8)),        // an owner passes more
		allgathervMismatch(countsBut(p, 7, 2, 2, 0)),        // an owner passes 0
		allgathervMismatch(countsBut(p, 4, 3, 1, 0)),        // a rank counts 0 for another's block
		allgathervMismatch(countsBut(p, 0, 4, 0, 1)),        // a rank counts 1, the others 0
		allgathervMismatch(countsBut(p, 0, 0, 4, 2)),        // the same, for the block it receives last
		allgathervMismatch(rendezvousBut(p, 3000, 1, 1, 1)), // rendezvous
		alltoallvMismatch(pairBut(7, 1, 1, 3, 8)),           // a sender sends more
		alltoallvMismatch(pairBut(7, 3, 1, 3, 6)),           // a receiver expects less
		alltoallvMismatch(pairBut(0, 2, 2, 0, 5)),           // a rank sends to one expecting 0
		alltoallvMismatch(pairBut(0, 0, 4, 0, 2)),           // a rank expects from one sending 0
		alltoallvMismatch(func(r, s, d int) int { // rendezvous
			if s == 2 && d == 4 {
				return 3000 + r/4 // rank 4 expects one more
			}
			return 1
		}),
	}
	seen := make([]atomic.Int32, len(cases)) // ranks that saw ErrMismatch or ErrTruncated
	runJob(t, p, runtimetest.Options{Transport: "shm"}, 40*time.Second, func(e rankEnv) error {
		for k, c := range cases {
			out, err := runMismatched(e, wait, c.name, c.run)
			if err != nil {
				return fmt.Errorf("case %d: %w", k, err)
			}
			if out == mismatchSeen {
				seen[k].Add(1)
			}
			if err := checkAllgatherv(e, mat2Case[uint8]().gen, []int{1, 0, 3, 2, 1}, k%2 == 0); err != nil {
				return fmt.Errorf("case %d: the call after: %w", k, err)
			}
		}
		return checkAlltoallv(e, mat2Case[uint32]().gen, func(s, d int) int { return (s + d) % 3 })
	})
	for k, c := range cases {
		if seen[k].Load() == 0 {
			t.Errorf("case %d (%s): no rank reported the mismatch", k, c.name)
		}
	}
}

// TestVectorZeroAllocs: small Allgatherv and Alltoallv calls allocate nothing in steady
// state (scratch and Requests are reused), measured at rank 1 while the others make the
// same calls, every rank in step (runtime.Barrier after each call: AllocsPerRun counts
// every goroutine's allocations, and a rank running calls ahead would queue sends).
func TestVectorZeroAllocs(t *testing.T) {
	const p, m = 4, 1
	ctx := context.Background()
	counts := []int{1, 0, 3, 2}
	pairs := [p][]int{{1, 0, 2, 1}, {0, 0, 1, 3}, {2, 1, 0, 0}, {1, 3, 0, 2}} // rank s sends pairs[s][d] to d
	type bufs struct {
		send, recv, sc, rc []int64
		scnt, rcnt         []int
	}
	b := make([]bufs, p)
	for r := range b {
		b[r].scnt, b[r].rcnt = pairs[r], make([]int, p)
		for s := range p {
			b[r].rcnt[s] = pairs[s][r]
		}
		b[r].send, b[r].recv = make([]int64, counts[r]), make([]int64, countsSum(counts))
		b[r].sc, b[r].rc = make([]int64, countsSum(b[r].scnt)), make([]int64, countsSum(b[r].rcnt))
	}
	calls := map[string]func(w *runtime.World, b bufs) error{
		"allgatherv": func(w *runtime.World, b bufs) error { return Allgatherv(ctx, w, b.send, b.recv, counts) },
		"in-place":   func(w *runtime.World, b bufs) error { return Allgatherv(ctx, w, nil, b.recv, counts) },
		"alltoallv":  func(w *runtime.World, b bufs) error { return Alltoallv(ctx, w, b.sc, b.scnt, b.rc, b.rcnt) },
	}
	j, err := runtimetest.Start(ctx, p, runtimetest.Options{Transport: "shm"})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	defer j.Finalize(ctx)
	for name, f := range calls {
		zeroAllocsInStep(t, j, m, name, func(r int, w *runtime.World) error { return f(w, b[r]) })
	}
}
