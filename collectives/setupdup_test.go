package collectives

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestSetupDup: SetupDup leaves a Dup's shared-memory groups set up, mapped and ready
// before any call on the Dup (one group, or teams and their heads), and the Dup's
// collectives then give right results.
func TestSetupDup(t *testing.T) {
	for _, c := range []struct {
		name string
		p    int
		team string // GORMA_SHM_TEAM
	}{{"flat", 5, ""}, {"teams", 11, "4"}} {
		t.Run(c.name, func(t *testing.T) {
			if c.team != "" {
				t.Setenv("GORMA_SHM_TEAM", c.team)
			}
			runJob(t, c.p, runtimetest.Options{Transport: "shm"}, 60*time.Second, func(e rankEnv) error {
				d, err := e.w.Dup()
				if err != nil {
					return err
				}
				if err := SetupDup(e.ctx, e.w, d, ""); err != nil {
					return err
				}
				s, err := stateOf(d)
				if err != nil {
					return err
				}
				l := s.local
				if l == nil {
					return fmt.Errorf("rank %d: the Dup has no shared-memory state", e.r)
				}
				groups := []*hostgroup.Group{l.world}
				if c.team != "" {
					groups = []*hostgroup.Group{l.team}
					if l.team != nil && l.team.Me == 0 {
						groups = append(groups, l.heads)
					}
				}
				for _, g := range groups {
					if g == nil || !g.Status().Ready {
						return fmt.Errorf("rank %d: a group of the Dup is not set up (or a member not mapped) after SetupDup", e.r)
					}
				}
				de := rankEnv{ctx: e.ctx, w: d, p: e.p, r: e.r}
				if err := checkAllreduce(de, floatCases[float64]()[0], 1<<15, false); err != nil {
					return err
				}
				if err := checkAllreduce(de, affineCase[int64](), 7, true); err != nil {
					return err
				}
				return Barrier(e.ctx, e.w)
			})
		})
	}
}

// TestSetupDupMismatch: a rank at another collective call on the World while the others
// set up a Dup fails, and so do they, with ErrMismatch naming both calls.
func TestSetupDupMismatch(t *testing.T) {
	runJob(t, 3, runtimetest.Options{Transport: "shm"}, 60*time.Second, func(e rankEnv) error {
		if err := Barrier(e.ctx, e.w); err != nil {
			return err
		}
		d, err := e.w.Dup()
		if err != nil {
			return err
		}
		if e.r == 0 {
			err = Barrier(e.ctx, e.w)
		} else {
			err = SetupDup(e.ctx, e.w, d, "")
		}
		if !errors.Is(err, ErrMismatch) {
			return fmt.Errorf("rank %d: %v, want ErrMismatch", e.r, err)
		}
		for _, want := range []string{"Barrier", "SetupDup"} {
			if !strings.Contains(err.Error(), want) {
				return fmt.Errorf("rank %d: %q does not name %s", e.r, err, want)
			}
		}
		return nil
	})
}

// TestSetupDupInvalid: SetupDup refuses a World that is not a Dup of w.
func TestSetupDupInvalid(t *testing.T) {
	runJob(t, 3, runtimetest.Options{Transport: "shm"}, 30*time.Second, func(e rankEnv) error {
		half, err := e.w.Split(e.ctx, e.r%2, e.r)
		if err != nil {
			return err
		}
		if err := SetupDup(e.ctx, e.w, half, ""); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("rank %d: SetupDup of a Split: %v, want ErrInvalid", e.r, err)
		}
		return nil
	})
}
