package collectives

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// rootedCounts cross the boundaries of the one-host Gather, Scatter and v-collectives,
// in int32 elements: the flag line, a block that fills the small slot and one past it,
// Scatter's p blocks in one slot, several chunks, and hostgroup.RootedMost (point to point
// beyond). Above 4 ranks the longest block is smaller: the host's chunks are too.
func rootedCounts(p int) []int {
	long := 2*hostgroup.ChunkMax/4 + 5
	if p > 4 {
		long = 40000
	}
	return []int{0, 1, hostgroup.InlineMax/4 + 1, hostgroup.SmallMax/(4*p) + 1, hostgroup.SmallMax / 4, hostgroup.SmallMax/4 + 1,
		long, hostgroup.RootedMost/4 + 3}
}

// shapeLayout is a v-layout of p blocks around n elements: every third block empty, the
// others n plus or minus their rank, packed (kind 0) or reversed with gaps (kind 1).
func shapeLayout(p, n, kind int) vLayout {
	l := layoutOf(p, 0, 0, kind)
	total := 0
	for r := range p {
		c := 0
		if r%3 != 1 && n > 0 {
			c = max(n+r*(1-2*(r%2)), 1)
		}
		l.counts[r] = c
		total += c
	}
	if kind == 0 {
		l.n = total
		return l
	}
	l.n = 0
	for r := p - 1; r >= 0; r-- {
		l.n++
		l.displs[r] = l.n
		l.n += l.counts[r]
	}
	return l
}

// TestSHMRootedMoves checks the one-host Gather, Scatter, Gatherv, Scatterv, Allgatherv
// and Alltoallv against the sequential reference at p = 2, 3, 7 and 16, in the arena's
// scratch and in fresh scratch, in place and not, every root in turn: blocks in the flag
// line, in the small slot beside the counts, in chunks, and past the bound where the call
// goes point to point after the agreement step.
func TestSHMRootedMoves(t *testing.T) {
	for _, p := range []int{2, 3, 7, 16} {
		for _, fresh := range []bool{false, true} {
			if fresh && p != 2 && p != 7 {
				continue
			}
			t.Run(fmt.Sprintf("p=%d/fresh=%v", p, fresh), func(t *testing.T) {
				if fresh {
					SetScratch(ScratchFresh)
					t.Cleanup(func() { SetScratch(ScratchArena) })
				}
				runJob(t, p, runtimetest.Options{Transport: "shm"}, 180*time.Second, func(e rankEnv) error {
					ints := intCases[int32]()
					for i, n := range rootedCounts(p) {
						inPlace, root := i%2 == 1, i%p
						if err := checkGather(e, ints[0].gen, n, root, inPlace); err != nil {
							return err
						}
						if err := checkScatter(e, ints[1].gen, n, (root+1)%p, !inPlace); err != nil {
							return err
						}
						l := shapeLayout(p, n, i%2)
						if err := checkGatherv(e, ints[2].gen, l, root, inPlace); err != nil {
							return err
						}
						if err := checkScatterv(e, ints[0].gen, l, (root+1)%p, !inPlace); err != nil {
							return err
						}
						if err := checkAllgatherv(e, ints[1].gen, l.counts, inPlace); err != nil {
							return err
						}
						if err := checkAlltoallv(e, ints[2].gen, func(s, d int) int {
							if (s+d)%3 == 1 {
								return 0
							}
							return max(n/p+s-d, 1)
						}); err != nil {
							return err
						}
						if fresh {
							if err := checkReleased(e); err != nil {
								return err
							}
						}
					}
					return Barrier(e.ctx, e.w)
				})
			})
		}
	}
}

// TestSHMVMismatch: on one host, ranks that disagree on a v-collective's counts all get
// ErrMismatch from the agreement step, whichever rank other than root is wrong (root's
// own block is checked at root: ErrInvalid) and however (a block
// longer or shorter than root's count for it, an Allgatherv count, an Alltoallv pair,
// small and long blocks). A uniform Gather with another count at one rank fails at root,
// and at every rank when its blocks go in chunks. The World works afterwards.
func TestSHMVMismatch(t *testing.T) {
	const p = 4
	type call func(e rankEnv, n int, bad bool) error
	gatherv := func(e rankEnv, n int, bad bool) error {
		counts := []int{n, n, n, n}
		m := n
		if bad {
			m++
		}
		var recv []int32
		if e.r == 0 {
			recv = make([]int32, 4*n)
		}
		return Gatherv(e.ctx, e.w, make([]int32, m), recv, counts, nil, 0)
	}
	scatterv := func(e rankEnv, n int, bad bool) error {
		counts := []int{n, n, n, n}
		m := n
		if bad {
			m--
		}
		var send []int32
		if e.r == 1 {
			send = make([]int32, 4*n)
		}
		return Scatterv(e.ctx, e.w, send, counts, nil, make([]int32, m), 1)
	}
	allgatherv := func(e rankEnv, n int, bad bool) error {
		counts := []int{n, n, n, n}
		if bad {
			counts[3] = n + 2 // a count of another rank's block
		}
		return Allgatherv(e.ctx, e.w, make([]int32, counts[e.r]), make([]int32, countsSum(counts)), counts)
	}
	alltoallv := func(e rankEnv, n int, bad bool) error {
		sc, rc := []int{n, n, n, n}, []int{n, n, n, n}
		if bad {
			rc[0] = n + 1 // expects more from rank 0 than rank 0 sends
		}
		return Alltoallv(e.ctx, e.w, make([]int32, countsSum(sc)), sc, make([]int32, countsSum(rc)), rc)
	}
	gather := func(e rankEnv, n int, bad bool) error {
		m := n
		if bad {
			m = n + 3
		}
		return Gather(e.ctx, e.w, make([]int32, m), make([]int32, 4*m), 0)
	}
	cases := []struct {
		name string
		f    call
		bad  int
	}{
		{"gatherv", gatherv, 2}, {"gatherv", gatherv, 3}, {"scatterv", scatterv, 3}, {"scatterv", scatterv, 0},
		{"allgatherv", allgatherv, 1}, {"alltoallv", alltoallv, 2}, {"gather", gather, 3},
	}
	// Gather's short step waits at root only (stepLast): its other ranks succeed.
	mayPass := func(name string, e rankEnv, n int) bool { return name == "gather" && n == 5 && e.r != 0 }
	runJob(t, p, runtimetest.Options{Transport: "shm"}, 60*time.Second, func(e rankEnv) error {
		if err := Barrier(e.ctx, e.w); err != nil {
			return err
		}
		for _, tc := range cases {
			for _, n := range []int{5, 3000} {
				err := tc.f(e, n, e.r == tc.bad)
				if !errors.Is(err, ErrMismatch) && !(err == nil && mayPass(tc.name, e, n)) {
					return fmt.Errorf("rank %d: %s of %d elements, rank %d wrong: %v, want ErrMismatch", e.r, tc.name, n, tc.bad, err)
				}
				if err := checkAllgatherv(e, intCases[int32]()[0].gen, []int{3, 0, 2, 1}, false); err != nil {
					return fmt.Errorf("after %s: %w", tc.name, err)
				}
			}
		}
		return nil
	})
}
