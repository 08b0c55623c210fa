package collectives

import (
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestIbcastAcrossDupReuse: an Ibcast in flight while the program Dups a World whose
// contexts a freed Dup gave back (the Dup waits for the other ranks' free marks) still
// completes at every rank: the Dup's wait passes the poller role on to the worker parked
// behind it.
func TestIbcastAcrossDupReuse(t *testing.T) {
	for _, tr := range []string{"shm", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			runJob(t, 6, runtimetest.Options{Transport: tr}, 20*time.Second, func(e rankEnv) error {
				for round := range 10 {
					d, err := e.w.Dup()
					if err != nil {
						return err
					}
					out := []int32{0}
					if err := Allreduce(e.ctx, d, []int32{1}, out, Sum[int32]()); err != nil {
						return err
					}
					if err := d.Free(); err != nil {
						return err
					}
					buf := []int32{10}
					if e.r == 0 {
						buf[0] = 815
					}
					r := Ibcast(e.ctx, e.w, buf, 0)
					d2, err := e.w.Dup() // reuses d's contexts
					if err != nil {
						return err
					}
					if err := r.Wait(e.ctx); err != nil {
						return fmt.Errorf("round %d: %w", round, err)
					}
					if buf[0] != 815 {
						return fmt.Errorf("round %d: Ibcast gave %d, want 815", round, buf[0])
					}
					if err := d2.Free(); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}
