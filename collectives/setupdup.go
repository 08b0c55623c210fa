package collectives

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
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
	s.cur.kind = hostgroup.Kind(name)
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
		if err := dl.team.Adopt(c, l.team, ds.comm, fresh); err != nil {
			return err
		}
		if l.heads == nil {
			return nil
		}
		return dl.heads.Adopt(c, l.heads, ds.comm, fresh)
	}
	if l.world == nil {
		l.world = hostgroup.New(l.host, l.hostIdx)
	}
	if dl.world == nil {
		dl.world = hostgroup.New(dl.host, dl.hostIdx)
	}
	return dl.world.Adopt(c, l.world, ds.comm, fresh)
}
