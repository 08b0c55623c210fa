package collectives

import (
	"context"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

// Barrier returns once every rank of w has entered it, and counts as a collective call in
// the order every rank must keep. When every rank is on this host (reached through shm)
// it is one step of the shared-memory scratch's flags (each rank stores its counter and
// waits for the others': no message). Otherwise it is the runtime's dissemination barrier
// (ceil(log2 p) rounds of empty messages) on the collectives' own context.
func Barrier(ctx context.Context, w *runtime.World) error {
	if w.IsInter() {
		return interErr("barrier", w, runtime.Barrier(ctx, w))
	}
	c, err := begin(ctx, w, "barrier", -1, "", "", -1)
	if err != nil {
		return err
	}
	c.toAll(0, 0)
	if w.Size() > 1 {
		if l := localOf(c.s); l.loc.oneHost && l.teamed() {
			c.chose("teams")
			return c.end(barrierTeams(c, l))
		} else if l.loc.oneHost {
			c.chose("shm")
			if l.world == nil {
				l.world = hostgroup.New(l.host, l.hostIdx)
			}
			err := l.world.Prepare(c, 0)
			if err == nil {
				// A call's first step: the call number is checked (hostgroup.Group.SetMeta).
				v := l.world.Next()
				l.world.SetMeta(v, 0)
				err = l.world.Step(c, v, 0)
			}
			return c.end(err)
		}
	}
	c.chose("dissemination")
	return c.end(runtime.Barrier(ctx, c.s.comm))
}
