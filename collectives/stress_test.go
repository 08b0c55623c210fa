package collectives

// Adversarial tests of the collectives: every Allreduce algorithm forced at small and
// non power-of-two rank counts, counts around p and around the algorithms' byte
// thresholds, every element size, non-commutative operators in every collective, many
// calls of different shapes interleaved on one World and on Dup'd ones, calls whose
// counts do not match (and the calls after them), and overlapping send and recv.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// mat2 is an associative, non-commutative operator on integers: an element packs a 2x2
// matrix [a b; c d] (a in the lowest quarter of the bits), entries modulo 2^(bits/4),
// and x ∘ y is the matrix product x·y. For int8 the entries are modulo 4.
func mat2[T Integer]() Op[T] {
	var z T
	w := uint(unsafe.Sizeof(z)) * 2 // bits per entry
	mask := uint64(1)<<w - 1
	return NewOp("mat2", func(inout, in []T) {
		for i := range inout {
			x, y := uint64(inout[i]), uint64(in[i])
			a, b, c, d := x&mask, x>>w&mask, x>>(2*w)&mask, x>>(3*w)&mask
			e, f, g, h := y&mask, y>>w&mask, y>>(2*w)&mask, y>>(3*w)&mask
			inout[i] = T((a*e+b*g)&mask | ((a*f+b*h)&mask)<<w | ((c*e+d*g)&mask)<<(2*w) | ((c*f+d*h)&mask)<<(3*w))
		}
	}, false)
}

// mix is a deterministic hash of rank, index and salt.
func mix(r, i, k int) uint64 {
	x := uint64(r)*0x9E3779B97F4A7C15 ^ uint64(i)*0xBF58476D1CE4E5B9 ^ uint64(k)*0x94D049BB133111EB
	x ^= x >> 31
	x *= 0xD6E9F8CC1F6F1B4D
	return x ^ x>>29
}

func mat2Case[T Integer]() opCase[T] {
	return opCase[T]{mat2[T](), func(r, i int) T { return T(mix(r, i, 1)) }}
}

// first keeps its first operand (x0 ∘ x1 ∘ ... = x0): associative, not commutative.
func first[T runtime.Elem]() Op[T] { return NewOp("first", func(_, _ []T) {}, false) }

// affineC is x -> a*x + b with a the real part and b the imaginary part; x ∘ y applies x,
// then y. Small integers keep it exact.
func affineC[T ~complex64 | ~complex128]() Op[T] {
	return NewOp("affinec", func(inout, in []T) {
		for i := range inout {
			x, y := complex128(inout[i]), complex128(in[i])
			a1, b1, a2, b2 := real(x), imag(x), real(y), imag(y)
			inout[i] = T(complex(a1*a2, a2*b1+b2))
		}
	}, false)
}

type intType interface {
	Integer
	Ordered
}

// stressInt, stressFloat and stressComplex are each type's operators: a commutative
// one, a non-commutative one, and (floats) Replace.
func stressInt[T intType]() []opCase[T] {
	return []opCase[T]{
		{Bxor[T](), func(r, i int) T { return T(mix(r, i, 2)) }},
		mat2Case[T](),
		{Sum[T](), func(r, i int) T { return T(mix(r, i, 3)) }}, // wraps: still exact
	}
}

func stressFloat[T interface {
	Ordered
	~float32 | ~float64
}]() []opCase[T] {
	s := func(r, i int) T { return T(small(r, i)) }
	return []opCase[T]{{Sum[T](), s}, {first[T](), func(r, i int) T { return T(r*1000 + i%997) }}, {Replace[T](), s}}
}

func stressComplex[T ~complex64 | ~complex128]() []opCase[T] {
	return []opCase[T]{
		{Sum[T](), func(r, i int) T { return T(complex(float64(small(r, i)), float64(small(r+1, i)))) }},
		{affineC[T](), func(r, i int) T { return T(complex(float64(1+(r+i)%2), float64((r*3+i)%5))) }},
	}
}

// checkAR runs one Allreduce and checks recv exactly against the rank-order reference;
// recv starts out as garbage (not in place), and send must be left as it was.
func checkAR[T runtime.Elem](e rankEnv, oc opCase[T], n int, inPlace bool) error {
	what := name[T]("allreduce "+oc.op.Name(), n, inPlace)
	send, recv := input(oc.gen, e.r, n), make([]T, n)
	for i := range recv {
		recv[i] = oc.gen(e.r+7, i+1)
	}
	if inPlace {
		copy(recv, send)
		send = nil
	}
	if err := Allreduce(e.ctx, e.w, send, recv, oc.op); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := compare(what, recv, reference(oc, e.p, n)); err != nil {
		return err
	}
	if send != nil {
		return compare(what+": send changed", send, input(oc.gen, e.r, n))
	}
	return nil
}

// typed is a check over one element type: f(e, n, k, inPlace) checks operator case k
// (modulo the type's number of cases) at count n.
type typed struct {
	name  string
	size  int
	cases int
	f     func(e rankEnv, n, k int, inPlace bool) error
}

func typedOf[T runtime.Elem](cases []opCase[T]) typed {
	return typed{name: fmt.Sprintf("%T", *new(T)), size: elemSize[T](), cases: len(cases),
		f: func(e rankEnv, n, k int, inPlace bool) error { return checkAR(e, cases[k%len(cases)], n, inPlace) }}
}

var stressTypes = []typed{
	typedOf(stressInt[int8]()), typedOf(stressInt[uint8]()),
	typedOf(stressInt[int16]()), typedOf(stressInt[uint16]()),
	typedOf(stressInt[int32]()), typedOf(stressInt[uint32]()),
	typedOf(stressInt[int64]()), typedOf(stressInt[uint64]()),
	typedOf(stressFloat[float32]()), typedOf(stressFloat[float64]()),
	typedOf(stressComplex[complex64]()), typedOf(stressComplex[complex128]()),
}

// stressAlgos are the algorithms forced on one host (hier there is an on-host reduce and
// broadcast around no leaders' step).
var stressAlgos = []algo{algoAuto, algoRecdbl, algoRabenseifner, algoRing, algoDirect, algoSHM, algoHier}

// aroundP are counts around the rank count: empty and one-element blocks, blocks of
// different lengths, fewer elements than ranks.
func aroundP(p int) []int { return []int{0, 1, p - 1, p, p + 1, 2*p - 1, 2*p + 1, 13} }

// aroundBytes are byte lengths around the algorithms' thresholds: the inline flag line
// (48 B), recursive doubling's limit (4 KiB), the one-step shm limit (8 KiB), the shm
// eager limit (16 KiB), and direct's combination chunk per block.
func aroundBytes(p int) []int {
	return []int{hostgroup.InlineMax - 1, hostgroup.InlineMax + 1, allreduceShortMsg - 1, allreduceShortMsg + 1,
		hostgroup.SmallMax - 1, hostgroup.SmallMax + 1, 16<<10 + 3, p*directChunkBytes + 5}
}

// TestStressAllreduceEdges forces every algorithm at p = 2..5 over every element type,
// a commutative and a non-commutative operator (rank order must hold: the algorithms
// that cannot keep it must not be used), counts around p, and byte lengths around the
// thresholds (odd ones included) for a few types.
func TestStressAllreduceEdges(t *testing.T) {
	for p := 2; p <= 5; p++ {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			runJob(t, p, runtimetest.Options{Transport: "shm"}, 40*time.Second, func(e rankEnv) error {
				defer forceAllreduce(e.w, algoAuto)
				for _, a := range stressAlgos {
					forceAllreduce(e.w, a)
					for j, n := range aroundP(p) {
						for ti, ty := range stressTypes {
							for k := range ty.cases {
								if err := ty.f(e, n, k, (j+ti+k)%2 == 0); err != nil {
									return fmt.Errorf("%v: %w", a, err)
								}
							}
						}
					}
					for j, b := range aroundBytes(p) {
						for ti, ty := range []typed{stressTypes[0], stressTypes[3], stressTypes[11]} {
							n := (b + ty.size - 1) / ty.size
							if err := ty.f(e, n, j+ti, j%2 == 0); err != nil {
								return fmt.Errorf("%v: %w", a, err)
							}
						}
					}
				}
				return Barrier(e.ctx, e.w)
			})
		})
	}
}

// TestStressAllreduceHosts forces every algorithm on pretend hosts: even and
// consecutive (hier, lanes), interleaved (hier cannot keep rank order: a non-commutative
// operator must fall back), and uneven (lanes must refuse clearly).
func TestStressAllreduceHosts(t *testing.T) {
	layouts := [][]string{{"a", "a", "b", "b"}, {"a", "b", "a", "b"}, {"a", "a", "a", "b", "b"}}
	algos := []algo{algoAuto, algoRecdbl, algoRabenseifner, algoRing, algoDirect, algoHier, algoLanes}
	for _, hosts := range layouts {
		t.Run(strings.Join(hosts, ""), func(t *testing.T) {
			p := len(hosts)
			runJob(t, p, runtimetest.Options{Hosts: hosts}, 40*time.Second, func(e rankEnv) error {
				defer forceAllreduce(e.w, algoAuto)
				s, err := stateOf(e.w)
				if err != nil {
					return err
				}
				even := localOf(s).hostS != nil
				counts := append(aroundP(p), 1025, hostgroup.SmallMax/8+3)
				for _, a := range algos {
					forceAllreduce(e.w, a)
					for j, n := range counts {
						for ti, ty := range []typed{stressTypes[1], stressTypes[4], stressTypes[7], stressTypes[9], stressTypes[10]} {
							for k := range ty.cases {
								err := ty.f(e, n, k, (j+ti+k)%2 == 1)
								if a == algoLanes && !even && n > 0 && err != nil {
									// Uneven hosts: lanes refuses every commutative call alike;
									// a non-commutative one goes to Rabenseifner and must work.
									if !errors.Is(err, runtime.ErrConfig) {
										return fmt.Errorf("lanes on uneven hosts: %w, want ErrConfig", err)
									}
									continue
								}
								if err != nil {
									return fmt.Errorf("%v: %w", a, err)
								}
							}
						}
					}
				}
				return Barrier(e.ctx, e.w)
			})
		})
	}
}

// TestStressSelectNonCommutative: whatever is forced and wherever the ranks are, a
// non-commutative operator gets an algorithm that combines in rank order (recursive
// doubling, Rabenseifner, shm, or hier on consecutive hosts), or a forced one that fails
// with an error (shm off one host).
func TestStressSelectNonCommutative(t *testing.T) {
	locs := []locality{
		{oneHost: true, hosts: 1, contiguous: true, even: true},
		{hosts: 2, shared: true, contiguous: true, even: true},
		{hosts: 2, shared: true, contiguous: false, even: true},
		{hosts: 3, shared: true, contiguous: true, even: false},
		{hosts: 4, contiguous: true, even: true},
	}
	for _, loc := range locs {
		for force := algoAuto; force <= algoLanes; force++ {
			for _, bytes := range []int{8, 4 << 10, 1 << 20, 64 << 20} {
				for _, p := range []int{2, 3, 4, 5, 8} {
					got := selectAllreduce(force, bytes, bytes/8, p, false, loc)
					ok := got == algoRecdbl || got == algoRabenseifner || got == algoSHM || (got == algoHier && loc.contiguous)
					if !ok {
						t.Errorf("selectAllreduce(%v, %d B, p=%d, non-commutative, %+v) = %v: does not keep rank order", force, bytes, p, loc, got)
					}
				}
			}
		}
	}
}

// TestStressOtherCollectives runs Reduce, Bcast, Allgather, ReduceScatter and Alltoall
// with non-commutative operators (matrix products of every integer size) and commutative
// ones, at p = 2..5, with counts around p, every root and in place and not.
func TestStressOtherCollectives(t *testing.T) {
	for p := 2; p <= 5; p++ {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			runJob(t, p, runtimetest.Options{Transport: "shm"}, 40*time.Second, func(e rankEnv) error {
				counts := aroundP(p)
				for _, f := range []func() error{
					func() error { return suite(e, []opCase[int8]{mat2Case[int8](), intCases[int8]()[0]}, counts) },
					func() error { return suite(e, []opCase[uint16]{mat2Case[uint16](), intCases[uint16]()[6]}, counts) },
					func() error { return suite(e, []opCase[uint32]{mat2Case[uint32]()}, counts) },
					func() error { return suite(e, []opCase[int64]{mat2Case[int64](), intCases[int64]()[2]}, counts) },
					func() error { return suite(e, stressFloat[float32](), counts) },
					func() error { return suite(e, stressComplex[complex64](), counts) },
					func() error { return suite(e, stressComplex[complex128](), []int{3 * p, 64<<10/16 + 1}) },
				} {
					if err := f(); err != nil {
						return err
					}
				}
				for root := range p { // every root, non-commutative, in place at root and not
					for _, n := range []int{1, p + 1} {
						if err := checkReduce(e, mat2Case[uint64](), n, root, root%2 == 0); err != nil {
							return err
						}
					}
					if err := checkBcast(e, mat2Case[int16]().gen, 64<<10/2+p, root); err != nil {
						return err
					}
				}
				return Barrier(e.ctx, e.w)
			})
		})
	}
}

// stressOp is one step of an interleaved run: a collective on World k of a set.
type stressOp struct {
	world int
	kind  int // 0 allreduce, 1 reduce, 2 bcast, 3 allgather, 4 reduce_scatter, 5 alltoall, 6 barrier
	force algo
	n     int
	typ   int
	k     int
	root  int
	in    bool
}

// stressPlan is a seeded sequence of collectives of many shapes on nw Worlds, the same
// on every rank.
func stressPlan(seed uint64, steps, nw, p int) []stressOp {
	rng := rand.New(rand.NewPCG(seed, 1))
	sizes := []int{0, 1, p - 1, p + 1, 6, 49, 511, 1023, 1025, 2049, 8193, 20001}
	algos := append([]algo(nil), stressAlgos...)
	plan := make([]stressOp, steps)
	for i := range plan {
		plan[i] = stressOp{
			world: rng.IntN(nw), kind: rng.IntN(7), force: algos[rng.IntN(len(algos))],
			n: sizes[rng.IntN(len(sizes))], typ: rng.IntN(len(stressTypes)), k: rng.IntN(3),
			root: rng.IntN(p), in: rng.IntN(2) == 0,
		}
	}
	return plan
}

// runStressOp runs one step at this rank, on World w.
func runStressOp(e rankEnv, o stressOp) error {
	forceAllreduce(e.w, o.force)
	m := min(o.n, 2000) // the collectives whose vectors hold p blocks
	switch o.kind {
	case 0:
		return stressTypes[o.typ].f(e, o.n, o.k, o.in)
	case 1:
		return checkReduce(e, mat2Case[uint32](), o.n, o.root, o.in)
	case 2:
		return checkBcast(e, mat2Case[int8]().gen, o.n, o.root)
	case 3:
		return checkAllgather(e, mat2Case[int16]().gen, m, o.in)
	case 4:
		if o.k%2 == 0 {
			return checkReduceScatter(e, mat2Case[int64](), m, o.in)
		}
		return checkReduceScatter(e, intCases[int32]()[0], m, o.in)
	case 5:
		return checkAlltoall(e, stressComplex[complex64]()[0].gen, m, o.in)
	}
	return Barrier(e.ctx, e.w)
}

// stressWorlds returns e.w and nw-1 Dups of it (made in the same order on every rank).
func stressWorlds(e rankEnv, nw int) ([]*runtime.World, error) {
	ws := []*runtime.World{e.w}
	for len(ws) < nw {
		d, err := e.w.Dup()
		if err != nil {
			return nil, err
		}
		ws = append(ws, d)
	}
	return ws, nil
}

// TestStressInterleaved runs a few hundred collectives of different kinds, sizes,
// types, operators and forced algorithms back to back, interleaved over a World and two
// Dups of it (scratch and tag reuse, shm scratch growing and shrinking its use), under
// both scratch policies, on one host and on two pretend hosts.
func TestStressInterleaved(t *testing.T) {
	jobs := []struct {
		name    string
		p       int
		opt     runtimetest.Options
		scratch Scratch
		steps   int
	}{
		{"shm-p3", 3, runtimetest.Options{Transport: "shm"}, ScratchArena, 400},
		{"shm-p4-fresh", 4, runtimetest.Options{Transport: "shm"}, ScratchFresh, 150},
		{"hosts-p4", 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}, ScratchArena, 250},
	}
	for ji, j := range jobs {
		t.Run(j.name, func(t *testing.T) {
			SetScratch(j.scratch)
			defer SetScratch(ScratchArena)
			plan := stressPlan(uint64(ji+1), j.steps, 3, j.p)
			runJob(t, j.p, j.opt, 40*time.Second, func(e rankEnv) error {
				ws, err := stressWorlds(e, 3)
				if err != nil {
					return err
				}
				for i, o := range plan {
					if o.force == algoLanes || (o.force == algoSHM && j.opt.Hosts != nil) {
						o.force = algoAuto
					}
					we := e
					we.w = ws[o.world]
					if err := runStressOp(we, o); err != nil {
						return fmt.Errorf("step %d (%+v): %w", i, o, err)
					}
				}
				for _, w := range ws {
					forceAllreduce(w, algoAuto)
				}
				return Barrier(e.ctx, e.w)
			})
		})
	}
}

// TestStressConcurrentWorlds: once each Dup'd World has had its first collective call
// (in the same order on every rank, as the package documentation asks), goroutines may
// run collectives on different Worlds concurrently, each getting its own exact results.
func TestStressConcurrentWorlds(t *testing.T) {
	const nw, steps = 3, 60
	runJob(t, 3, runtimetest.Options{Transport: "shm"}, 40*time.Second, func(e rankEnv) error {
		ws, err := stressWorlds(e, nw)
		if err != nil {
			return err
		}
		for _, w := range ws {
			if err := Barrier(e.ctx, w); err != nil {
				return err
			}
		}
		errs := make([]error, nw)
		var wg sync.WaitGroup
		for i, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				we := e
				we.w = w
				for k, o := range stressPlan(uint64(100+i), steps, 1, e.p) {
					if o.force == algoLanes || o.force == algoHier {
						o.force = algoAuto
					}
					if err := runStressOp(we, o); err != nil {
						errs[i] = fmt.Errorf("world %d step %d: %w", i, k, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	})
}

// TestStressConcurrentFirstCalls: two Dup'd Worlds whose first collective calls race
// from concurrent goroutines, in a different order on each rank. The collectives use the
// World's Sibling, which the World itself determines: a context taken from a Dup at the
// first call would depend on the order of the races, differ between ranks, and let the
// Worlds' calls meet each other's messages (wrong results, silently).
func TestStressConcurrentFirstCalls(t *testing.T) {
	runJob(t, 2, runtimetest.Options{Transport: "shm"}, 20*time.Second, func(e rankEnv) error {
		ws, err := stressWorlds(e, 3)
		if err != nil {
			return err
		}
		d := ws[1:]
		a, b := d[0], d[1]
		if e.r == 1 {
			a, b = b, a
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		run := func(k int, w *runtime.World) {
			defer wg.Done()
			x := []int64{100}
			if w == d[1] {
				x[0] = 7
			}
			want := x[0] * int64(e.p)
			ctx, cancel := context.WithTimeout(e.ctx, testbudget.Scale(3*time.Second))
			defer cancel()
			if err := Allreduce(ctx, w, nil, x, Sum[int64]()); err != nil {
				errs[k] = err
			} else if x[0] != want {
				errs[k] = fmt.Errorf("got %d, want %d", x[0], want)
			}
		}
		wg.Add(2)
		go run(0, a)
		for { // a's first call has made its Dup: now b's
			if _, ok := states.Load(a); ok {
				break
			}
			time.Sleep(time.Millisecond)
		}
		go run(1, b)
		wg.Wait()
		return errors.Join(errs...)
	})
}

// TestStressMismatch: calls whose counts differ across ranks, crossing the shm scratch's
// set-up and growth (one rank needing big buffers the others do not), the one-step limit
// and the point-to-point algorithms, end in ErrMismatch, ErrTruncated or the deadline at
// every rank, never in success; and the matching calls after each work exactly.
func TestStressMismatch(t *testing.T) {
	const mismatchWait = 500 * time.Millisecond // for a call that cannot succeed
	cases := []struct {
		force algo
		n, m  int // rank 1 passes m, the others n
	}{
		{algoSHM, 1, 100000},     // the very first call: rank 1 sets up big buffers, the others none
		{algoSHM, 6, 7},          // inline
		{algoSHM, 1000, 1025},    // small slot against big buffers
		{algoSHM, 9000, 40000},   // rank 1 would grow the big buffers
		{algoSHM, 100000, 10},    // the others would
		{algoHier, 3000, 3001},   // on one host: on-host reduce and broadcast
		{algoRabenseifner, 3, 4}, // halves of different lengths
		{algoDirect, 6, 8},       // some blocks of equal length
		{algoSHM, 5, 0},          // rank 1 has nothing to do and goes on to the next call
		{algoSHM, 7000, 0},       // the same through the big buffers
		{algoRecdbl, 5, 0},
	}
	runJob(t, 3, runtimetest.Options{Transport: "shm"}, 40*time.Second, func(e rankEnv) error {
		defer forceAllreduce(e.w, algoAuto)
		sum := floatCases[float64]()[0]
		for _, c := range cases {
			forceAllreduce(e.w, c.force)
			// Two matching calls of the count the others pass first: what they left in
			// the scratch must not pass for rank 1's part of the mismatched call.
			for range 2 {
				if err := checkAR(e, sum, c.n, false); err != nil {
					return fmt.Errorf("%v %d/%d: before the mismatch: %w", c.force, c.n, c.m, err)
				}
			}
			n := c.n
			if e.r == 1 {
				n = c.m
			}
			ctx, cancel := context.WithTimeout(e.ctx, mismatchWait)
			err := Allreduce(ctx, e.w, make([]float64, n), make([]float64, n), Sum[float64]())
			cancel()
			switch {
			case err == nil && n == 0:
				// Nothing to do at this rank: it returns at once (and goes on).
			case err == nil:
				return fmt.Errorf("%v %d/%d: mismatched counts succeeded", c.force, c.n, c.m)
			case !errors.Is(err, ErrMismatch) && !errors.Is(err, runtime.ErrTruncated) && !errors.Is(err, context.DeadlineExceeded):
				return fmt.Errorf("%v %d/%d: %w, want ErrMismatch, ErrTruncated or the deadline", c.force, c.n, c.m, err)
			}
			// A rank that passed 0 went on to this Barrier while the others were still in
			// the Allreduce: it may fail with ErrMismatch (shm: another call) or the
			// deadline, which leaves every rank at the same call again; the next
			// Barrier starts them together.
			ctx, cancel = e.ctx, func() {}
			if c.m == 0 {
				ctx, cancel = context.WithTimeout(e.ctx, mismatchWait)
			}
			err = Barrier(ctx, e.w)
			cancel()
			if err != nil && (c.m != 0 || !errors.Is(err, ErrMismatch) && !errors.Is(err, context.DeadlineExceeded)) {
				return fmt.Errorf("%v %d/%d: barrier after: %w", c.force, c.n, c.m, err)
			}
			if err := Barrier(e.ctx, e.w); err != nil {
				return fmt.Errorf("%v %d/%d: second barrier after: %w", c.force, c.n, c.m, err)
			}
			for _, n := range []int{c.n, c.m, 3} {
				if err := checkAR(e, sum, n, n%2 == 0); err != nil {
					return fmt.Errorf("%v %d/%d: after the mismatch: %w", c.force, c.n, c.m, err)
				}
			}
		}
		return nil
	})
}

// TestStressOverlap: send and recv that share memory (the same slice, or shifted by one
// element) are rejected with ErrInvalid by every collective that takes both, at once
// and without communication; the World works afterwards.
func TestStressOverlap(t *testing.T) {
	runJob(t, 3, runtimetest.Options{Transport: "shm"}, 20*time.Second, func(e rankEnv) error {
		defer forceAllreduce(e.w, algoAuto)
		p := e.p
		sum := Sum[int64]()
		for _, a := range stressAlgos {
			forceAllreduce(e.w, a)
			for _, n := range []int{5, 3000} {
				x := make([]int64, p*n+1)
				calls := map[string]error{
					"allreduce shifted":      Allreduce(e.ctx, e.w, x[:n], x[1:n+1], sum),
					"allreduce same":         Allreduce(e.ctx, e.w, x[:n], x[:n], sum),
					"reduce shifted":         Reduce(e.ctx, e.w, x[1:n+1], x[:n], sum, e.r), // every rank its own root: checked before any message
					"allgather own block":    Allgather(e.ctx, e.w, x[e.r*n:(e.r+1)*n], x[:p*n]),
					"reduce_scatter shifted": ReduceScatter(e.ctx, e.w, x[1:p*n+1], x[:n], sum),
					"alltoall same":          Alltoall(e.ctx, e.w, x[:p*n], x[:p*n]),
				}
				for what, err := range calls {
					if !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "overlap") {
						return fmt.Errorf("%v n=%d %s: got %v, want an ErrInvalid error about the overlap", a, n, what, err)
					}
				}
				// Adjacent, not overlapping: fine.
				y := input(stressInt[int64]()[2].gen, e.r, 2*n)
				if err := Allreduce(e.ctx, e.w, y[:n], y[n:], sum); err != nil {
					return fmt.Errorf("%v n=%d adjacent: %w", a, n, err)
				}
				if err := compare("adjacent", y[n:], reference(stressInt[int64]()[2], p, n)); err != nil {
					return err
				}
			}
		}
		return Barrier(e.ctx, e.w)
	})
}
