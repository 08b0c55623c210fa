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

// TestAllreduceLanes checks the multi-leader Allreduce on pretend hosts of equal rank
// counts, consecutive or not, with counts that leave some lanes' blocks empty or shorter
// than the hosts, with arena and fresh scratch; and that forcing it where hosts are
// uneven fails with ErrConfig.
func TestAllreduceLanes(t *testing.T) {
	layouts := [][]string{
		{"a", "a", "b", "b"},
		{"a", "b", "c", "a", "b", "c"},
		{"a", "a", "a", "b", "b", "b"},
		{"a", "b", "a", "b", "c", "d", "c", "d"},
	}
	for _, hosts := range layouts {
		t.Run(strings.Join(hosts, ""), func(t *testing.T) {
			runJob(t, len(hosts), runtimetest.Options{Hosts: hosts}, 40*time.Second, func(e rankEnv) error {
				forceAllreduce(e.w, algoLanes)
				if err := shmSuite(e, []int{1, 2, 7, 3001, 70001}); err != nil {
					return err
				}
				s, _ := stateOf(e.w)
				if l := s.local; l.hostS == nil || l.laneS.size != l.loc.hosts || l.laneS.world(l.laneS.rank) != e.r {
					return fmt.Errorf("rank %d: lanes sub-groups not set up: %+v", e.r, l)
				}
				forceAllreduce(e.w, algoAuto)
				return Barrier(e.ctx, e.w)
			})
		})
	}
	t.Run("fresh", func(t *testing.T) {
		SetScratch(ScratchFresh)
		t.Cleanup(func() { SetScratch(ScratchArena) })
		runJob(t, 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}, 40*time.Second, func(e rankEnv) error {
			forceAllreduce(e.w, algoLanes)
			defer forceAllreduce(e.w, algoAuto)
			return shmSuite(e, []int{7, 70001})
		})
	})
	runJob(t, 3, runtimetest.Options{Hosts: []string{"a", "a", "b"}}, 20*time.Second, func(e rankEnv) error {
		forceAllreduce(e.w, algoLanes)
		err := Allreduce(e.ctx, e.w, nil, make([]float64, 3), Sum[float64]())
		if !errors.Is(err, runtime.ErrConfig) || !strings.Contains(err.Error(), "lanes") {
			return fmt.Errorf("forced lanes on uneven hosts: got %v, want an ErrConfig error", err)
		}
		forceAllreduce(e.w, algoAuto)
		return Barrier(e.ctx, e.w)
	})
}
