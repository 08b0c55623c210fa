package hostgroup

import (
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Adopt sets g up through pg. g is a group of a Dup's, on the Dup's World dw; pg is the
// group of the same ranks on the World of call c. Each member allocates g's region, marks
// in it whether it reads the others' user memory (markReads), and writes its description
// for one step of pg (putDesc), then maps the others'. A member reads them before its
// next call on pg begins. No member writes that flag line or slot again before every
// member has published the step after (they alternate), so one step suffices.
func (g *Group) Adopt(c Call, pg *Group, dw *runtime.World, fresh bool) error {
	if len(pg.Ranks) != len(g.Ranks) || pg.Me != g.Me {
		return fmt.Errorf("%w: rank %d: a Dup's group of %d ranks differs from its World's of %d", runtime.ErrInvalid, dw.Rank(), len(g.Ranks), len(pg.Ranks))
	}
	if err := pg.Prepare(c, 0); err != nil {
		return err
	}
	r, err := substrate.AllocHostRegion(dw, regionSize(0))
	if err != nil {
		return fmt.Errorf("shared-memory scratch: %w", err)
	}
	if g.region != nil {
		g.old = g.region // set up before: freed once every member has closed its mappings (ready)
	}
	g.initRegion(dw, r, 0, fresh)
	if err := markReads(dw, g.Ranks, g.Me, r.Bytes()); err != nil {
		return err
	}
	v := pg.Next()
	if err := pg.putDesc(pg.Me, v, r.AppendDesc(nil)); err != nil {
		return err
	}
	pg.SetMeta(v, 0) // the call's first step on pg: the ranks' calls are checked
	if err := pg.Step(c, v, 0); err != nil {
		return err
	}
	descs := make([][]byte, len(g.Ranks))
	for i := range pg.Ranks {
		if i != pg.Me {
			descs[i] = pg.getDesc(i, v)
		}
	}
	return g.ready(dw, descs)
}
