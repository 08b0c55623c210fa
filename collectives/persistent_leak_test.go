package collectives

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestLeakPersistent makes persistent Allreduces of every leak size and a Bcast, starts
// each twice, and frees them, cycle after cycle: each Request's own state (its Track,
// scratch and shared-memory groups) is released by Free, so after the freed states'
// regions are reaped the arenas, mappings, goroutines and fds are where they were after
// the first cycle (which made the World's Dup for persistent calls).
func TestLeakPersistent(t *testing.T) {
	const cycles = 6
	for _, l := range leakLayouts {
		t.Run(l.name, func(t *testing.T) {
			var base atomic.Pointer[runtimetest.Usage]
			runJob(t, l.n, l.opt, 60*time.Second, func(e rankEnv) error {
				send, recv := leakBufs(e.r)
				bc := make([]float64, 1<<14)
				cycle := func() error {
					reqs := []*Request{BcastInit(e.w, bc, 0)}
					for _, n := range leakSizes {
						reqs = append(reqs, AllreduceInit(e.w, send[n], recv[n], Sum[float64]()))
					}
					for range 2 {
						if err := Startall(e.ctx, reqs); err != nil {
							return err
						}
						if err := WaitAll(e.ctx, reqs); err != nil {
							return err
						}
					}
					for _, r := range reqs {
						if err := r.Free(); err != nil {
							return err
						}
					}
					// Every rank has freed its Requests: their regions can be reaped.
					if err := runtime.Barrier(e.ctx, e.w); err != nil {
						return err
					}
					return reaperIdle(10 * time.Second)
				}
				if err := cycle(); err != nil {
					return err
				}
				for range 2 {
					if err := runtime.Barrier(e.ctx, e.w); err != nil {
						return err
					}
				}
				if e.r == 0 {
					u := runtimetest.MeasureUsage()
					base.Store(&u)
				}
				inUse0, mrs0 := runtimetest.ArenaUse(e.w)
				if err := runtime.Barrier(e.ctx, e.w); err != nil {
					return err
				}
				for k := range cycles {
					if err := cycle(); err != nil {
						return fmt.Errorf("cycle %d: %w", k, err)
					}
				}
				return checkRank(t, e.ctx, e.w, fmt.Sprintf("%d cycles of %d persistent Requests", cycles, len(leakSizes)+1), inUse0, mrs0, &base)
			})
		})
	}
}
