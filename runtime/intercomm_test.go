package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// parityIntercomm splits w by rank parity and joins the halves: evens' leader is w's rank
// 0, odds' rank 1, and the leaders meet on w with tag 7. It returns the
// intercommunicator, the local World and the other group's ranks of w, in order.
func parityIntercomm(ctx context.Context, w *runtime.World) (ic, local *runtime.World, remote []int, err error) {
	color := w.Rank() % 2
	local, err = w.Split(ctx, color, w.Rank())
	if err != nil {
		return nil, nil, nil, err
	}
	for r := 1 - color; r < w.Size(); r += 2 {
		remote = append(remote, r)
	}
	ic, err = local.CreateIntercomm(ctx, 0, w, 1-color, 7)
	return ic, local, remote, err
}

// interCases are the layouts intercommunicator tests run on.
var interCases = []struct {
	name string
	n    int
	opts runtimetest.Options
}{
	{"shm", 2, runtimetest.Options{Transport: "shm"}},
	{"shm", 5, runtimetest.Options{Transport: "shm"}},
	{"tcp", 4, runtimetest.Options{Transport: "tcp"}},
	{"hosts", 5, runtimetest.Options{Hosts: []string{"a", "a", "b", "b", "a"}}},
}

func forInter(t *testing.T, f func(ctx context.Context, w *runtime.World) error) {
	for _, c := range interCases {
		t.Run(fmt.Sprintf("%s/n=%d", c.name, c.n), func(t *testing.T) {
			o := c.opts
			o.Timeout = 30 * time.Second
			runtimetest.Run(t, c.n, o, func(w *runtime.World) error {
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
				defer cancel()
				return f(ctx, w)
			})
		})
	}
}

// TestIntercomm: the groups, ranks and point-to-point addressing of an
// intercommunicator, its Barrier, a Dup whose messages stay apart, and Free.
func TestIntercomm(t *testing.T) {
	forInter(t, func(ctx context.Context, w *runtime.World) error {
		ic, local, remote, err := parityIntercomm(ctx, w)
		if err != nil {
			return err
		}
		if !ic.IsInter() || local.IsInter() || ic.Local() == nil || local.Local() != nil {
			return fmt.Errorf("IsInter %v/%v, Local %v/%v", ic.IsInter(), local.IsInter(), ic.Local(), local.Local())
		}
		if ic.Rank() != local.Rank() || ic.Size() != local.Size() || ic.RemoteSize() != len(remote) || local.RemoteSize() != 0 {
			return fmt.Errorf("rank %d size %d remote size %d; want %d %d %d", ic.Rank(), ic.Size(), ic.RemoteSize(), local.Rank(), local.Size(), len(remote))
		}
		if c := ic.Group().Compare(local.Group()); c != runtime.Ident {
			return fmt.Errorf("the local group is %v to the local World's", c)
		}
		want, err := w.Group().Incl(remote)
		if err != nil {
			return err
		}
		if c := ic.RemoteGroup().Compare(want); c != runtime.Ident {
			return fmt.Errorf("the remote group is %v to ranks %v of the World", c, remote)
		}
		// Every rank sends its rank of w to every remote rank; each arrival's Source is a
		// remote rank, whose rank of w is what it carries.
		var reqs []*runtime.Request
		for r := range ic.RemoteSize() {
			q, err := runtime.Isend(ic, []int64{int64(w.Rank())}, r, 5)
			if err != nil {
				return err
			}
			reqs = append(reqs, q)
		}
		for range ic.RemoteSize() {
			got := []int64{-1}
			st, err := runtime.Recv(ctx, ic, got, runtime.AnySource, 5)
			if err != nil {
				return err
			}
			if st.Source < 0 || st.Source >= len(remote) || got[0] != int64(remote[st.Source]) {
				return fmt.Errorf("a message from remote rank %d carries rank %d of the World (remote ranks %v)", st.Source, got[0], remote)
			}
		}
		if err := runtime.WaitAll(ctx, reqs, nil); err != nil {
			return err
		}
		if _, err := runtime.Isend(ic, []int64{0}, len(remote), 5); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("send to remote rank %d of %d: %v, want ErrInvalid", len(remote), len(remote), err)
		}
		if err := runtime.Barrier(ctx, ic); err != nil {
			return err
		}
		// A Dup's message never matches a receive on ic: rank 0 of each group sends on
		// both with one tag, and the other group's rank 0 receives the Dup's first.
		d, err := ic.Dup()
		if err != nil {
			return err
		}
		if !d.IsInter() || d.RemoteSize() != ic.RemoteSize() || d.Rank() != ic.Rank() {
			return fmt.Errorf("Dup: inter %v, remote size %d, rank %d", d.IsInter(), d.RemoteSize(), d.Rank())
		}
		if ic.Rank() == 0 {
			if err := runtime.Send(ctx, ic, []int32{1}, 0, 9); err != nil {
				return err
			}
			if err := runtime.Send(ctx, d, []int32{2}, 0, 9); err != nil {
				return err
			}
			a, b := []int32{0}, []int32{0}
			if _, err := runtime.Recv(ctx, d, b, 0, 9); err != nil {
				return err
			}
			if _, err := runtime.Recv(ctx, ic, a, 0, 9); err != nil {
				return err
			}
			if a[0] != 1 || b[0] != 2 {
				return fmt.Errorf("got %d on the intercommunicator and %d on its Dup, want 1 and 2", a[0], b[0])
			}
		}
		if err := runtime.Barrier(ctx, d); err != nil {
			return err
		}
		if _, err := ic.SplitShared(ctx, 0); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("SplitShared of an intercommunicator: %v, want ErrInvalid", err)
		}
		if _, err := local.Merge(ctx, false); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("Merge of an intracommunicator: %v, want ErrInvalid", err)
		}
		return errors.Join(d.Free(), ic.Free(), local.Free())
	})
}

// TestIntercommMerge: Merge orders the group that passes high false first, and for
// equal flags the group holding the World's rank 0; the merged World works.
func TestIntercommMerge(t *testing.T) {
	forInter(t, func(ctx context.Context, w *runtime.World) error {
		ic, local, remote, err := parityIntercomm(ctx, w)
		if err != nil {
			return err
		}
		odd := w.Rank()%2 == 1
		nEven := (w.Size() + 1) / 2
		for _, c := range []struct {
			name      string
			high      bool
			oddsFirst bool
		}{
			{"odds high", odd, false},
			{"evens high", !odd, true},
			{"both low", false, false},
			{"both high", true, false},
		} {
			m, err := ic.Merge(ctx, c.high)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			var want int
			switch {
			case c.oddsFirst && odd:
				want = local.Rank()
			case c.oddsFirst:
				want = w.Size() - nEven + local.Rank()
			case odd:
				want = nEven + local.Rank()
			default:
				want = local.Rank()
			}
			if m.IsInter() || m.Size() != w.Size() || m.Rank() != want {
				return fmt.Errorf("%s: merged rank %d of %d (inter %v), want %d of %d", c.name, m.Rank(), m.Size(), m.IsInter(), want, w.Size())
			}
			if err := ringCheck(ctx, m); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			if err := m.Free(); err != nil {
				return err
			}
		}
		_ = remote
		return errors.Join(ic.Free(), local.Free())
	})
}

// TestIntercommOverlapRefused: groups that overlap fail CreateIntercomm at every rank
// with ErrInvalid, the leader naming why and the others pointing at it, and nothing
// hangs.
func TestIntercommOverlapRefused(t *testing.T) {
	forEach(t, []int{1, 3}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			// Every rank's local group is w, whose leader names itself as the remote one.
			_, err := w.CreateIntercomm(ctx, 0, w, 0, 1)
			if !errors.Is(err, runtime.ErrInvalid) {
				return fmt.Errorf("CreateIntercomm with one group on both sides: %v, want ErrInvalid", err)
			}
			// The World is still good.
			return runtime.Barrier(ctx, w)
		})
	})
}

// TestIntercommTwoIntercomms: two intercommunicators over the same groups made one after
// the other, and one between groups of unequal size made from Init's World, keep their
// messages apart.
func TestIntercommTwoIntercomms(t *testing.T) {
	forInter(t, func(ctx context.Context, w *runtime.World) error {
		a, local, _, err := parityIntercomm(ctx, w)
		if err != nil {
			return err
		}
		b, err := local.CreateIntercomm(ctx, 0, w, 1-w.Rank()%2, 8)
		if err != nil {
			return err
		}
		if local.Rank() == 0 {
			for i, ic := range []*runtime.World{a, b} {
				if err := runtime.Send(ctx, ic, []int32{int32(i)}, 0, 1); err != nil {
					return err
				}
			}
			for i, ic := range slices.Backward([]*runtime.World{a, b}) {
				got := []int32{-1}
				if _, err := runtime.Recv(ctx, ic, got, 0, 1); err != nil {
					return err
				}
				if got[0] != int32(i) {
					return fmt.Errorf("intercommunicator %d received %d", i, got[0])
				}
			}
		}
		return errors.Join(runtime.Barrier(ctx, a), runtime.Barrier(ctx, b), a.Free(), b.Free(), local.Free())
	})
}

// TestIntercommSplitCreate: Split of an intercommunicator pairs each color's ranks of
// one group with the other group's, and a color that only one group passes gives nil;
// Create with each group dropping its rank 0 gives the intercommunicator of the rest.
func TestIntercommSplitCreate(t *testing.T) {
	forInter(t, func(ctx context.Context, w *runtime.World) error {
		ic, local, remote, err := parityIntercomm(ctx, w)
		if err != nil {
			return err
		}
		// Color: the local rank's parity, and an odd-only color 5 for the evens' rank 1.
		color := ic.Rank() % 2
		even := w.Rank()%2 == 0
		if even && ic.Rank() == 1 {
			color = 5
		}
		s, err := ic.Split(ctx, color, -ic.Rank())
		if err != nil {
			return err
		}
		var wantRemote []int
		for i, r := range remote {
			rc := i % 2
			if !even && i == 1 {
				rc = 5
			}
			if rc == color {
				wantRemote = append(wantRemote, r)
			}
		}
		slices.Reverse(wantRemote) // keys are minus the rank
		switch {
		case len(wantRemote) == 0:
			if s != nil {
				return fmt.Errorf("color %d, which no remote rank passed, got an intercommunicator", color)
			}
		case s == nil:
			return fmt.Errorf("color %d got no intercommunicator (remote ranks %v pass it)", color, wantRemote)
		default:
			want, err := w.Group().Incl(wantRemote)
			if err != nil {
				return err
			}
			if c := s.RemoteGroup().Compare(want); c != runtime.Ident || !s.IsInter() {
				return fmt.Errorf("color %d: remote group %v to ranks %v", color, c, wantRemote)
			}
			if err := runtime.Barrier(ctx, s); err != nil {
				return err
			}
			if err := s.Free(); err != nil {
				return err
			}
		}
		// Create: every rank but rank 0 of each group.
		var rest []int
		for r := 1; r < ic.Size(); r++ {
			rest = append(rest, r)
		}
		g, err := ic.Group().Incl(rest)
		if err != nil {
			return err
		}
		c, err := ic.Create(ctx, g)
		if err != nil {
			return err
		}
		if ic.Rank() == 0 || ic.Size() == 1 || ic.RemoteSize() == 1 {
			if c != nil {
				return fmt.Errorf("Create gave rank %d of %d (remote %d) an intercommunicator", ic.Rank(), ic.Size(), ic.RemoteSize())
			}
		} else {
			if c == nil || c.Rank() != ic.Rank()-1 || c.RemoteSize() != ic.RemoteSize()-1 {
				return fmt.Errorf("Create: got %v", c)
			}
			if err := c.Free(); err != nil {
				return err
			}
		}
		return errors.Join(ic.Free(), local.Free())
	})
}

// TestIntercommManyDups: more Dups of an intercommunicator alive at once than its block
// holds: past the block, Dup agrees on another one with both groups; every Dup keeps its
// messages apart.
func TestIntercommManyDups(t *testing.T) {
	forInter(t, func(ctx context.Context, w *runtime.World) error {
		ic, local, _, err := parityIntercomm(ctx, w)
		if err != nil {
			return err
		}
		dups := []*runtime.World{ic}
		for i := range 6 {
			d, err := dups[len(dups)-1].Dup()
			if err != nil {
				return fmt.Errorf("Dup %d: %w", i, err)
			}
			if !d.IsInter() || d.RemoteSize() != ic.RemoteSize() || d.Rank() != ic.Rank() {
				return fmt.Errorf("Dup %d: inter %v, remote size %d, rank %d", i, d.IsInter(), d.RemoteSize(), d.Rank())
			}
			dups = append(dups, d)
		}
		// Rank 0 of each group sends its index on every Dup, newest first; the other
		// group's rank 0 receives them oldest first.
		if ic.Rank() == 0 {
			for i := len(dups) - 1; i >= 0; i-- {
				if err := runtime.Send(ctx, dups[i], []int32{int32(i)}, 0, 3); err != nil {
					return err
				}
			}
			for i, d := range dups {
				got := []int32{-1}
				if _, err := runtime.Recv(ctx, d, got, 0, 3); err != nil || got[0] != int32(i) {
					return fmt.Errorf("Dup %d received %d, %v", i, got[0], err)
				}
			}
		}
		for _, d := range dups[1:] {
			if err := errors.Join(runtime.Barrier(ctx, d), d.Free()); err != nil {
				return err
			}
		}
		return errors.Join(ic.Free(), local.Free())
	})
}
