package collectives

import (
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestAllreduceDirectFromSend: the direct and Rabenseifner algorithms read their input
// from send, never copying it into recv first (Rabenseifner: on a power of two; at p = 3
// it folds, on a copy): the result is right whatever recv held before, send is left as it
// was, for a predefined operator (combined in one pass, Op.combine), a user-defined one
// (copied, then combined) and a non-commutative one (combined in rank order; direct gives
// way to Rabenseifner for it), including counts below p (empty blocks); and in place.
// "direct-pipelined" lowers directSegMinBytes to 64 so that the larger counts take
// allreduceDirectPipelined, in segments of equal and (odd block lengths) unequal lengths;
// at p = 3 with scratch acquired per call (ScratchFresh).
func TestAllreduceDirectFromSend(t *testing.T) {
	cases := append(fromSendCases(), affineCase[int64]())
	type job struct {
		a         algo
		p         int
		pipelined bool
	}
	var jobs []job
	for _, a := range []algo{algoDirect, algoRabenseifner} {
		for p := 2; p <= 4; p++ {
			jobs = append(jobs, job{a, p, false})
			if a == algoDirect {
				jobs = append(jobs, job{a, p, true})
			}
		}
	}
	for _, tc := range jobs {
		a, p := tc.a, tc.p
		counts := []int{1, p - 1, p + 1, 3001, 70001}
		label := a.String()
		if tc.pipelined {
			label = "direct-pipelined"
			counts = append(counts, 16*p, 24*p+1, 32*p+p-1)
		}
		t.Run(fmt.Sprintf("%s/p=%d", label, p), func(t *testing.T) {
			if tc.pipelined {
				old := directSegMinBytes
				directSegMinBytes = 64
				defer func() { directSegMinBytes = old }()
				segs := map[int]bool{}
				for _, n := range counts {
					segs[directSegments(n/p*8)] = true
				}
				if !segs[directMaxSegments] || !segs[0] {
					t.Fatalf("counts %v: want some in %d segments and some not pipelined, got segment counts %v", counts, directMaxSegments, segs)
				}
				if p == 3 {
					SetScratch(ScratchFresh)
					defer SetScratch(ScratchArena)
				}
			}
			runJob(t, p, runtimetest.Options{Transport: "tcp"}, 40*time.Second, func(e rankEnv) error {
				forceAllreduce(e.w, a)
				defer forceAllreduce(e.w, algoAuto)
				return checkFromSend(e, cases, counts)
			})
		})
	}
}

// checkFromSend runs Allreduce for every case and count, with recv holding garbage that
// a copy-free algorithm must not combine, and checks the result and that send is left as
// it was; then again in place, where direct's second round lands in the blocks its first
// round read.
func checkFromSend(e rankEnv, cases []opCase[int64], counts []int) error {
	for _, oc := range cases {
		for _, n := range counts {
			send := input(oc.gen, e.r, n)
			recv := make([]int64, n)
			for i := range recv {
				recv[i] = 1 << 40
			}
			if err := Allreduce(e.ctx, e.w, send, recv, oc.op); err != nil {
				return err
			}
			what := name[int64]("allreduce "+oc.op.Name(), n, false)
			if err := compare(what, recv, reference(oc, e.p, n)); err != nil {
				return err
			}
			if err := compare(what+" send", send, input(oc.gen, e.r, n)); err != nil {
				return err
			}
			if err := Allreduce(e.ctx, e.w, nil, send, oc.op); err != nil {
				return err
			}
			if err := compare(name[int64]("allreduce "+oc.op.Name(), n, true), send, reference(oc, e.p, n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// fromSendCases are checkFromSend's cases: a predefined operator (combined in one pass,
// Op.combine), a user-defined one (copied, then combined) and Max.
func fromSendCases() []opCase[int64] {
	userSum := NewOp("usersum", func(inout, in []int64) {
		for i := range inout {
			inout[i] += in[i]
		}
	}, true)
	return []opCase[int64]{
		{Sum[int64](), func(r, i int) int64 { return int64(wide(r, i)) }},
		{userSum, func(r, i int) int64 { return int64(wide(r, i)) }},
		{Max[int64](), func(r, i int) int64 { return int64(wide(r, i)) }},
	}
}
