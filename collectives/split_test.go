package collectives

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestSplitWorlds runs the collectives on Worlds made by runtime's Split, whose ranks are
// not the job's (every other job rank, in reverse order), next to the job's World: the
// whole suite on each group, every Allreduce algorithm (shm and hier on pretend hosts),
// then calls on both groups and on the job's World interleaved. A collective that used
// job ranks, or a context that two of these Worlds share, gives wrong sums or hangs.
func TestSplitWorlds(t *testing.T) {
	layouts := [][]string{
		{"a", "a", "a", "a", "a", "a", "a"},
		{"a", "b", "a", "b", "a", "b"}, // each group has ranks on both hosts
		{"a", "a", "b", "b", "c", "c"}, // each group has one rank per host
	}
	for _, hosts := range layouts {
		t.Run(strings.Join(hosts, ""), func(t *testing.T) {
			runJob(t, len(hosts), runtimetest.Options{Hosts: hosts}, 60*time.Second, func(e rankEnv) error {
				g, err := e.w.Split(e.ctx, e.r%2, -e.r)
				if err != nil {
					return err
				}
				ge := rankEnv{ctx: e.ctx, w: g, p: g.Size(), r: g.Rank()}
				if err := suite(ge, intCases[int64](), []int{0, 1, 13, 1000}); err != nil {
					return fmt.Errorf("group %d: %w", e.r%2, err)
				}
				for _, a := range []algo{algoRecdbl, algoRabenseifner, algoRing, algoSHM, algoHier, algoDirect, algoLanes, algoAuto} {
					forceAllreduce(g, a)
					err := checkAllreduce(ge, affineCase[int64](), 5000, a == algoRing)
					if errors.Is(err, runtime.ErrConfig) && (a == algoSHM || a == algoHier) {
						continue // shm needs one host, hier more than one: a refusal names why
					}
					if err != nil {
						return fmt.Errorf("group %d, %v: %w", e.r%2, a, err)
					}
				}
				forceAllreduce(g, algoAuto)
				for i := range 3 {
					if err := checkAllreduce(e, floatCases[float64]()[0], 3000+i, false); err != nil {
						return fmt.Errorf("job World between group calls: %w", err)
					}
					if err := checkAllreduce(ge, floatCases[float64]()[0], 3000+i, true); err != nil {
						return fmt.Errorf("group %d between job calls: %w", e.r%2, err)
					}
				}
				if err := Barrier(e.ctx, g); err != nil {
					return err
				}
				return Barrier(e.ctx, e.w)
			})
		})
	}
}

// TestSplitRanksSeen: a group's Allgather lists its members in group order (by key), so
// the collectives see the group's numbering and not the job's.
func TestSplitRanksSeen(t *testing.T) {
	runJob(t, 5, runtimetest.Options{}, 30*time.Second, func(e rankEnv) error {
		g, err := e.w.Split(e.ctx, 0, -e.r) // one group, reversed
		if err != nil {
			return err
		}
		got := make([]int64, g.Size())
		if err := Allgather(e.ctx, g, []int64{int64(e.r)}, got); err != nil {
			return err
		}
		for i, v := range got {
			if want := int64(e.p - 1 - i); v != want {
				return fmt.Errorf("group rank %d is job rank %d, want %d", i, v, want)
			}
		}
		root := []int64{0}
		if g.Rank() == 0 {
			root[0] = 77
		}
		if err := Bcast(e.ctx, g, root, 0); err != nil || root[0] != 77 {
			return fmt.Errorf("bcast from group rank 0 (job rank %d): %v %v", e.p-1, root, err)
		}
		return nil
	})
}
