package collectives

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// SetupDup sets up the shared-memory scratch of dup, a Dup of w, through w's own, so
// that dup's first collective call finds it ready. It is a collective call on w: every
// rank of w calls it, in its order of collective calls on w. It is meant for a library
// that Dups a World for its own traffic within a collective call on the World (package
// window's creation does).
//
// On a job whose ranks are all on this host, each rank allocates its regions for dup's
// groups, and the ranks exchange the regions' descriptions in one step of w's groups
// (the team's, then the heads'): no message, no connection. Otherwise, and on a World of
// one rank, it does nothing and dup's first call sets its scratch up as any World's.
// A rank at another collective call on w fails it with ErrMismatch, naming both calls.
// So does a rank at a collective call whose first step meets this one's.
//
// It takes no number of its own among w's collective calls, and hang reports and
// observation do not show it: it is part of the library's call that makes it (a
// window's creation, which has its number). call is that call's name in hang reports
// ("window creation"), which a mismatch error gives for this rank's call; "" names it
// SetupDup. Every rank must pass the same call.
func SetupDup(ctx context.Context, w, dup *runtime.World, call string) error {
	if w == nil || dup == nil {
		return fmt.Errorf("collectives: SetupDup: %w: nil World", runtime.ErrInvalid)
	}
	if dup.Size() != w.Size() || dup.Rank() != w.Rank() || dup.IsInter() {
		return fmt.Errorf("collectives: SetupDup: %w: rank %d of %d, a Dup of rank %d of %d: want a Dup of w",
			runtime.ErrInvalid, dup.Rank(), dup.Size(), w.Rank(), w.Size())
	}
	c, err := beginPart(ctx, w, call)
	if err != nil {
		return err
	}
	return c.close(setupDup(c, dup), false)
}

// beginPart starts call name (SetupDup's caller's, or "SetupDup") on w as a part of that
// call, which w's numbering counts: as begin does, but without a number, a report or an
// observation of its own. The caller must call c.close(err, false).
func beginPart(ctx context.Context, w *runtime.World, name string) (*call, error) {
	if name == "" {
		name = "SetupDup"
	}
	s, _, _, err := open(ctx, w, name)
	if err != nil {
		return nil, err
	}
	s.cur.kind = shmKind(name)
	s.cur.tag = kindTag(s.cur.tag, s.cur.kind)
	return &s.cur, nil
}

// setupDup is SetupDup's work within call c on w.
func setupDup(c *call, dup *runtime.World) error {
	l := localOf(c.s)
	if c.s.size < 2 || !l.loc.oneHost {
		return nil // the same at every rank: whether the job is on one host is the job's
	}
	ds, err := stateOf(dup)
	if err != nil {
		return err
	}
	dl := localOf(ds)
	fresh, err := freshScratch()
	if err != nil {
		return err
	}
	if l.teamed() {
		if !dl.teamed() {
			return fmt.Errorf("%w: rank %d: a Dup's ranks make no teams where its World's do", runtime.ErrInvalid, c.s.rank)
		}
		if err := adoptGroup(c, l.team, dl.team, ds.comm, fresh); err != nil {
			return err
		}
		if l.heads == nil {
			return nil
		}
		return adoptGroup(c, l.heads, dl.heads, ds.comm, fresh)
	}
	if l.world == nil {
		l.world = &shmGroup{ranks: l.host, me: l.hostIdx}
	}
	if dl.world == nil {
		dl.world = &shmGroup{ranks: dl.host, me: dl.hostIdx}
	}
	return adoptGroup(c, l.world, dl.world, ds.comm, fresh)
}

// adoptGroup sets g up through pg. g is a group of dup's, on dup's collectives' World
// dw; pg is the group of the same ranks on the World of call c. Each member allocates
// g's region, marks in it whether it reads the others' user memory (markReads), and
// writes its description for one step of pg (putDesc), then maps the others'. A member
// reads them before its next call on pg begins. No member writes that flag line or slot
// again before every member has published the step after (they alternate), so one step
// suffices.
func adoptGroup(c *call, pg, g *shmGroup, dw *runtime.World, fresh bool) error {
	if len(pg.ranks) != len(g.ranks) || pg.me != g.me {
		return fmt.Errorf("%w: rank %d: a Dup's group of %d ranks differs from its World's of %d", runtime.ErrInvalid, c.s.rank, len(g.ranks), len(pg.ranks))
	}
	if err := pg.prepare(c, 0); err != nil {
		return err
	}
	r, err := substrate.AllocHostRegion(dw, shmRegionSize(0))
	if err != nil {
		return fmt.Errorf("shared-memory scratch: %w", err)
	}
	if g.region != nil {
		g.old = g.region // set up before: freed once every member has closed its mappings (ready)
	}
	g.initRegion(dw, r, 0, fresh)
	if err := markReads(dw, g.ranks, g.me, r.Bytes()); err != nil { // single_shm.go
		return err
	}
	v := pg.seq + 1
	if err := pg.putDesc(pg.me, v, r.AppendDesc(nil)); err != nil { // shm_maps.go
		return err
	}
	pg.setMeta(c, v, 0) // the call's first step on pg: the ranks' calls are checked
	if err := pg.step(c, v, 0); err != nil {
		return err
	}
	descs := make([][]byte, len(g.ranks))
	for i := range pg.ranks {
		if i != pg.me {
			descs[i] = pg.getDesc(i, v)
		}
	}
	return g.ready(dw, descs)
}
