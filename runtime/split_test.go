package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// TestSplit: groups by color ordered by key, their own rank numbering in every call,
// NoColor, Barrier, Dup and Sibling of a split World.
func TestSplit(t *testing.T) {
	forEach(t, []int{1, 2, 3, 5}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			r := w.Rank()
			color := r % 2
			if n == 5 && r == 4 {
				color = runtime.NoColor
			}
			g, err := w.Split(ctx, color, -r) // reverse order within a color
			if err != nil {
				return err
			}
			if color == runtime.NoColor {
				if g != nil {
					return errors.New("NoColor gave a World")
				}
				return runtime.Barrier(ctx, w)
			}
			var members []int // job ranks of the group, by group rank
			for x := n - 1; x >= 0; x-- {
				if x%2 == color && !(n == 5 && x == 4) {
					members = append(members, x)
				}
			}
			gr := -1
			for i, x := range members {
				if x == r {
					gr = i
				}
			}
			if g.Size() != len(members) || g.Rank() != gr {
				return fmt.Errorf("group rank %d of %d, want %d of %d", g.Rank(), g.Size(), gr, len(members))
			}
			gn := g.Size()
			for i, x := range members {
				if g.HostOf(i) != w.HostOf(x) || (i != gr && g.Transport(i) != w.Transport(x)) {
					return fmt.Errorf("group rank %d: host %q transport %q, job rank %d: %q %q", i, g.HostOf(i), g.Transport(i), x, w.HostOf(x), w.Transport(x))
				}
			}
			if g.Transport(gn) != "" || g.HostOf(-1) != "" {
				return errors.New("out-of-range group ranks answered")
			}
			if g.LocalSize() != gn || g.LocalRank() != gr { // in-process: one host
				return fmt.Errorf("local %d of %d", g.LocalRank(), g.LocalSize())
			}

			// A ring in group numbering: payload and Status.Source say group ranks.
			next, prev := (gr+1)%gn, (gr+gn-1)%gn
			got := []int64{-1, -1}
			st, err := runtime.Sendrecv(ctx, g, []int64{int64(gr), int64(r)}, next, 5, got, runtime.AnySource, 5)
			if err != nil {
				return err
			}
			if st.Source != prev || got[0] != int64(prev) || got[1] != int64(members[prev]) {
				return fmt.Errorf("ring: got %v from %d, want group rank %d (job rank %d)", got, st.Source, prev, members[prev])
			}
			// Irecv/Wait and Probe report group ranks too.
			req, err := runtime.Irecv(g, got[:1], prev, 6)
			if err != nil {
				return err
			}
			if err := runtime.Send(ctx, g, []int64{int64(gr)}, next, 6); err != nil {
				return err
			}
			if st, err := req.Wait(ctx); err != nil || st.Source != prev || got[0] != int64(prev) {
				return fmt.Errorf("irecv: %+v %v %v", st, got[0], err)
			}
			if err := runtime.Send(ctx, g, []int64{1}, next, 7); err != nil {
				return err
			}
			if st, err := runtime.Probe(ctx, g, runtime.AnySource, 7); err != nil || st.Source != prev {
				return fmt.Errorf("probe: %+v %v", st, err)
			}
			if _, err := runtime.Recv(ctx, g, got[:1], prev, 7); err != nil {
				return err
			}
			if err := runtime.Barrier(ctx, g); err != nil {
				return err
			}

			// A Dup and the Sibling keep the group; their messages never match g's.
			d, err := g.Dup()
			if err != nil {
				return err
			}
			s, err := substrate.Sibling(g)
			if err != nil {
				return err
			}
			for i, x := range []*runtime.World{g, d, s} {
				if x.Size() != gn || x.Rank() != gr {
					return fmt.Errorf("derived World %d: rank %d of %d", i, x.Rank(), x.Size())
				}
				if err := runtime.Send(ctx, x, []int64{int64(100*i + gr)}, next, 9); err != nil {
					return err
				}
			}
			for i, x := range []*runtime.World{s, d, g} { // the other order: no cross-matching
				v := []int64{-1}
				if _, err := runtime.Recv(ctx, x, v, prev, 9); err != nil {
					return err
				}
				if want := int64(100*(2-i) + prev); v[0] != want {
					return fmt.Errorf("derived World %d received %d, want %d", 2-i, v[0], want)
				}
			}
			if _, err := runtime.Recv(ctx, g, got, gn, 0); !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprintf("[0, %d)", gn)) {
				return fmt.Errorf("receive from group rank %d: %v", gn, err)
			}
			return runtime.Barrier(ctx, w)
		})
	})
}

// TestSplitContexts: Worlds made at different times, by Split of the job's World, of a
// split World, and by Dup on either side, all carry the same tag at once without any
// message landing on another World, also after the two groups made different numbers of
// Dups (which must not shift the contexts of later Dups of the job's World).
func TestSplitContexts(t *testing.T) {
	forEach(t, []int{4}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			r := w.Rank()
			half, err := w.Split(ctx, r/2, r) // {0,1} and {2,3}
			if err != nil {
				return err
			}
			// Only the first group Dups, three times.
			var extra []*runtime.World
			if r < 2 {
				for range 3 {
					d, err := half.Dup()
					if err != nil {
						return err
					}
					extra = append(extra, d)
				}
			}
			wd, err := w.Dup() // every rank: the same context everywhere
			if err != nil {
				return err
			}
			odd, err := w.Split(ctx, r%2, 0) // {0,2} and {1,3}
			if err != nil {
				return err
			}
			quarter, err := half.Split(ctx, r%2, 0) // singletons
			if err != nil {
				return err
			}
			worlds := append([]*runtime.World{w, half, wd, odd, quarter}, extra...)
			for i, x := range worlds {
				if err := runtime.Send(ctx, x, []int64{int64(1000*i + r)}, (x.Rank()+1)%x.Size(), 1); err != nil {
					return fmt.Errorf("world %d: %w", i, err)
				}
			}
			for i := len(worlds) - 1; i >= 0; i-- {
				x := worlds[i]
				v := []int64{-1}
				st, err := runtime.Recv(ctx, x, v, runtime.AnySource, runtime.AnyTag)
				if err != nil {
					return fmt.Errorf("world %d: %w", i, err)
				}
				if v[0]/1000 != int64(i) || st.Source != (x.Rank()+x.Size()-1)%x.Size() {
					return fmt.Errorf("world %d received %d from %d", i, v[0], st.Source)
				}
			}
			return runtime.Barrier(ctx, wd)
		})
	})
}

// TestSplitErrors: bad colors, a split World's Dups past its block (a new block, the
// same group), Split after Finalize.
func TestSplitErrors(t *testing.T) {
	run(t, "shm", 2, func(ctx context.Context, w *runtime.World) error {
		if _, err := w.Split(ctx, -2, 0); !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "color -2") {
			return fmt.Errorf("color -2: %v", err)
		}
		var nilWorld *runtime.World
		if _, err := nilWorld.Split(ctx, 0, 0); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("nil World: %v", err)
		}
		g, err := w.Split(ctx, 0, 0)
		if err != nil {
			return err
		}
		d := g
		for i := range 7 {
			if d, err = d.Dup(); err != nil {
				return fmt.Errorf("dup %d: %w", i, err)
			}
		}
		e8, err := g.Dup() // the block is full: the group again, on a block of its own
		if err != nil {
			return fmt.Errorf("eighth Dup: %w", err)
		}
		if e8.Rank() != g.Rank() || e8.Size() != g.Size() || e8.Group().Compare(g.Group()) != runtime.Ident {
			return fmt.Errorf("eighth Dup: rank %d of %d, want %d of %d", e8.Rank(), e8.Size(), g.Rank(), g.Size())
		}
		if err := ringCheck(ctx, e8); err != nil {
			return fmt.Errorf("eighth Dup: %w", err)
		}
		if err := runtime.Barrier(ctx, d); err != nil {
			return err
		}
		if err := w.Finalize(ctx); err != nil {
			return err
		}
		if _, err := g.Split(ctx, 0, 0); !errors.Is(err, runtime.ErrFinalized) {
			return fmt.Errorf("split after Finalize: %v", err)
		}
		return nil
	})
}
