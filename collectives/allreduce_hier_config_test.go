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

// TestAllreduceHierUnmappedIsConfigError: under golaunch --transport tcp the ranks of a
// host do not share memory, and the shared-memory algorithms cannot run. Two failures it
// guards against (launcher's TestE2EStress reaches both):
//
//   - with a host of one rank (hosts a, a, b), the automatic choice must judge sharing by
//     what every rank sees: rank 2, alone on its host, judging by its own Transport
//     (nothing to see) would pick hier while ranks 0 and 1 see tcp between them and pick
//     recursive doubling, and every rank would wait for the others until its context
//     ended;
//   - GORMA_ALLREDUCE=hier must not fail with runtime.ErrInvalid ("cannot map rank 0's
//     scratch") at the ranks that share a host, as if the caller had passed a bad
//     argument, and hang at a rank alone on its host. Like a forced shm there, it is a
//     configuration error (ErrConfig, naming the variable) at every rank, and the
//     World's collectives go on working afterwards.
func TestAllreduceHierUnmappedIsConfigError(t *testing.T) {
	for _, hosts := range [][]string{{"a", "a", "a"}, {"a", "a", "b"}} {
		t.Run(strings.Join(hosts, ""), func(t *testing.T) {
			runJob(t, len(hosts), runtimetest.Options{Transport: "tcp", Hosts: hosts}, 20*time.Second, func(e rankEnv) error {
				forceAllreduce(e.w, algoHier)
				x := []float64{float64(e.r)}
				err := Allreduce(e.ctx, e.w, nil, x, Sum[float64]())
				if !errors.Is(err, runtime.ErrConfig) || !strings.Contains(err.Error(), EnvAllreduce+"=hier") {
					return fmt.Errorf("forced hier over tcp on one host: got %v, want an ErrConfig error naming %s=hier", err, EnvAllreduce)
				}
				forceAllreduce(e.w, algoAuto)
				for _, n := range []int{1, 1000, 100001} {
					v := make([]float64, n)
					for i := range v {
						v[i] = float64(e.r + i)
					}
					if err := Allreduce(e.ctx, e.w, nil, v, Sum[float64]()); err != nil {
						return fmt.Errorf("auto allreduce of %d: %w", n, err)
					}
					for i, got := range v {
						if want := float64(3*i + 3); got != want {
							return fmt.Errorf("auto allreduce of %d: element %d is %g, want %g", n, i, got, want)
						}
					}
				}
				return Barrier(e.ctx, e.w)
			})
		})
	}
}
