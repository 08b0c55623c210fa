package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("comm-ic1", "comm/ic1.c", 4, commIc1)
	register("comm-icm", "comm/icm.c", 8, commIcm)
	register("comm-dupic", "comm/dupic.c", 4, commDupic)
	register("comm-icgroup", "comm/icgroup.c", 8, commIcgroup)
	register("comm-icsplit", "comm/icsplit.c", 8, commIcsplit)
	register("comm-iccreate", "comm/iccreate.c", 8, commIccreate)
	register("comm-probe_intercomm", "comm/probe_intercomm.c", 2, commProbeIntercomm)
	register("pt2pt-icsend", "pt2pt/icsend.c", 4, pt2ptIcsend)
	register("pt2pt-icprobe", "pt2pt/icprobe.c", 4, pt2ptIcprobe)
	register("pt2pt-icsend_randomize", "pt2pt/icsend.c", 4, randomized(pt2ptIcsend))
	register("pt2pt-icprobe_randomize", "pt2pt/icprobe.c", 4, randomized(pt2ptIcprobe))
}

// randomized runs f as testlist.in's -randomize=1 runs do (MTestCommRandomize): first
// every rank makes 0 to 3 Worlds of itself alone, a number drawn from a generator seeded
// with its rank, and keeps them until f ends, so that the ranks' context allocators
// differ when f's intercommunicators are made. MPICH Dups MPI_COMM_SELF; here
// CreateGroup of the rank's own group does it, as a Dup of a one-rank World takes a
// context of that World's own block and leaves the allocator as it was.
func randomized(f func(ctx context.Context, w *runtime.World) error) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		me, err := selfGroup(w)
		if err != nil {
			return err
		}
		n := rand.New(rand.NewPCG(uint64(w.Rank()), 0)).IntN(4)
		selves := make([]*runtime.World, 0, n)
		for range n {
			s, err := w.CreateGroup(ctx, me, 0)
			if err != nil {
				return err
			}
			selves = append(selves, s)
		}
		errs := []error{f(ctx, w)}
		for _, s := range selves {
			errs = append(errs, s.Free())
		}
		return errors.Join(errs...)
	}
}

// intercommCases is the number of intercommunicators MTestGetIntercomm makes.
const intercommCases = 7

// eachIntercomm runs f on the intercommunicators MPICH's MTestGetIntercomm makes of the
// World w, in its order. They are (0) its two halves, (1) rank 0 and the rest, (2) ranks
// 0-1 and the rest, and (3) a Dup of (0). Then come (4) a Split of (0) with one color, (5)
// the halves without rank 0, joined by CreateIntercomm, and (6) the intercommunicator that
// Create makes of (0) without rank 0 of each group. isLeft is true in the group of w's
// lowest ranks (the part named first). A rank that is in no group of a case (as
// MPI_COMM_NULL) skips it, and every rank skips a case whose two groups have fewer than
// minSize ranks at some rank, or that w is too small for. Every intercommunicator is freed
// after f; f's error ends the walk, naming the case.
func eachIntercomm(ctx context.Context, w *runtime.World, minSize int, f func(ic *runtime.World, isLeft bool) error) error {
	for idx := range intercommCases {
		ic, isLeft, name, err := makeIntercomm(ctx, w, idx)
		if err != nil {
			return fmt.Errorf("intercommunicator %d (%s): %w", idx, name, err)
		}
		// As MTestGetIntercomm: a case runs only if it is large enough at every rank.
		big := []int32{1}
		if ic != nil && ic.Size()+ic.RemoteSize() < minSize {
			big[0] = 0
		}
		all := []int32{0}
		if err := collectives.Allreduce(ctx, w, big, all, collectives.Min[int32]()); err != nil {
			return err
		}
		if ic == nil {
			continue
		}
		if all[0] == 1 {
			err = f(ic, isLeft)
		}
		if err = first(err, ic.Free()); err != nil {
			return fmt.Errorf("intercommunicator %d (%s), left group %v, rank %d of %d, remote size %d: %w",
				idx, name, isLeft, ic.Rank(), ic.Size(), ic.RemoteSize(), err)
		}
	}
	return nil
}

// makeIntercomm makes MTestGetIntercomm's case idx: the intercommunicator (nil at a rank
// outside it, or where w is too small for the case), whether this rank is in the left
// group, and the case's name. The tags are MPICH's.
func makeIntercomm(ctx context.Context, w *runtime.World, idx int) (ic *runtime.World, isLeft bool, name string, err error) {
	rank, size := w.Rank(), w.Size()
	half := func(r int) bool { return r < size/2 }
	switch idx {
	case 0:
		name = "halves"
		if size > 1 {
			ic, err = joinParts(ctx, w, half, -1, 0, size/2, 12345)
		}
		return ic, half(rank), name, err
	case 1:
		name = "1 and the rest"
		if size > 1 {
			ic, err = joinParts(ctx, w, func(r int) bool { return r == 0 }, -1, 0, 1, 12346)
		}
		return ic, rank == 0, name, err
	case 2:
		name = "2 and the rest"
		if size > 3 {
			ic, err = joinParts(ctx, w, func(r int) bool { return r < 2 }, -1, 0, 2, 12347)
		}
		return ic, rank < 2, name, err
	case 3, 4:
		name = "halves, then Dup"
		if idx == 4 {
			name = "halves, then Split of the intercommunicator with one color"
		}
		if size <= 1 {
			return nil, half(rank), name, nil
		}
		orig, err := joinParts(ctx, w, half, -1, 0, size/2, 12345)
		if err != nil {
			return nil, false, name, err
		}
		if idx == 3 {
			ic, err = orig.Dup()
		} else {
			ic, err = orig.Split(ctx, 0, orig.Rank())
		}
		return ic, half(rank), name, first(err, orig.Free())
	case 5:
		name = "halves without rank 0, joined by CreateIntercomm"
		if size >= 4 {
			ic, err = joinParts(ctx, w, half, 0, 1, size/2, 12345)
		}
		return ic, half(rank), name, err
	case 6:
		name = "halves, then Create without rank 0 of each group"
		if size < 4 {
			return nil, half(rank), name, nil
		}
		orig, err := joinParts(ctx, w, half, -1, 0, size/2, 12345)
		if err != nil {
			return nil, false, name, err
		}
		g, err := orig.Group().Excl([]int{0})
		if err == nil {
			ic, err = orig.Create(ctx, g)
		}
		return ic, half(rank), name, first(err, orig.Free())
	}
	return nil, false, "", fmt.Errorf("no intercommunicator case %d", idx)
}

// joinParts splits w into the ranks r with left(r) and the others, leaving out rank
// skip (-1: none), and joins the two parts with CreateIntercomm; their leaders are
// ranks leftLeader and rightLeader of w, which meet on w with tag. The rank left out
// gets nil; the parts' own Worlds are freed.
func joinParts(ctx context.Context, w *runtime.World, left func(int) bool, skip, leftLeader, rightLeader, tag int) (*runtime.World, error) {
	rank := w.Rank()
	color := 0
	if left(rank) {
		color = 1
	}
	if rank == skip {
		color = runtime.NoColor
	}
	part, err := w.Split(ctx, color, rank)
	if err != nil || part == nil {
		return nil, err
	}
	remoteLeader := -1
	switch rank {
	case leftLeader:
		remoteLeader = rightLeader
	case rightLeader:
		remoteLeader = leftLeader
	}
	ic, err := part.CreateIntercomm(ctx, 0, w, remoteLeader, tag)
	return ic, first(err, part.Free())
}

// testIntercomm is MTestTestIntercomm: every rank sends its rank and the destination's
// to every remote rank, and receives from each remote rank j in turn j and its own rank.
func testIntercomm(ctx context.Context, ic *runtime.World) error {
	rank, rsize := ic.Rank(), ic.RemoteSize()
	reqs := make([]*runtime.Request, 0, rsize)
	for j := range rsize {
		q, err := runtime.Isend(ic, []int32{int32(rank), int32(j)}, j, 0)
		if err != nil {
			return err
		}
		reqs = append(reqs, q)
	}
	var bad error
	for j := range rsize {
		b := []int32{-1, -1}
		if _, err := runtime.Recv(ctx, ic, b, j, 0); err != nil {
			return err
		}
		if b[0] != int32(j) || b[1] != int32(rank) {
			bad = errors.Join(bad, fmt.Errorf("from remote rank %d got (rank %d, target %d), want (%d, %d)", j, b[0], b[1], j, rank))
		}
	}
	return first(runtime.WaitAll(ctx, reqs, nil), bad)
}

// commIc1: World ranks 0 and 1 each join their own one-rank World into an
// intercommunicator (leaders meeting on the World with tag 27) and Sendrecv their World
// ranks on it: each gets the other's. Left out: its MPI_Intercomm_create_from_groups
// half, which gorma lacks.
func commIc1(ctx context.Context, w *runtime.World) error {
	self, err := selfWorld(ctx, w)
	if err != nil {
		return err
	}
	rank := w.Rank()
	if rank < 2 {
		remote := 1 - rank
		ic, err := self.CreateIntercomm(ctx, 0, w, remote, 27)
		if err != nil {
			return err
		}
		got := []int32{-1}
		st, err := runtime.Sendrecv(ctx, ic, []int32{int32(rank)}, 0, 13, got, 0, 13)
		if err != nil {
			return err
		}
		if got[0] != int32(remote) || st.Source != 0 {
			return fmt.Errorf("sendrecv on the intercommunicator: got %d from remote rank %d, want %d from 0", got[0], st.Source, remote)
		}
		if err := ic.Free(); err != nil {
			return err
		}
	}
	return self.Free()
}

// commIcm: on each intercommunicator, Merge with the left group high puts the right
// group's ranks first (left rank r becomes RemoteSize+r, right rank r stays r), Merge
// with the right group high the reverse; the merged size is both groups'. Merges with
// high the same in both groups (false, then true) have that size too. MPICH's file
// tests the ranks only inside its size-mismatch branch and reads the first merge twice;
// this port checks both merges' ranks as its comments describe.
func commIcm(ctx context.Context, w *runtime.World) error {
	return eachIntercomm(ctx, w, 2, func(ic *runtime.World, isLeft bool) error {
		rank, size, rsize := ic.Rank(), ic.Size(), ic.RemoteSize()
		check := func(m *runtime.World, leftHigh bool, what string) error {
			if m.Size() != size+rsize {
				return fmt.Errorf("%s: merged size %d, want %d", what, m.Size(), size+rsize)
			}
			want := rank
			if isLeft == leftHigh {
				want = rsize + rank
			}
			if m.Rank() != want {
				return fmt.Errorf("%s: merged rank %d, want %d (high group %v)", what, m.Rank(), want, isLeft == leftHigh)
			}
			return nil
		}
		var ms []*runtime.World
		defer func() {
			for _, m := range ms {
				_ = m.Free()
			}
		}()
		for i, high := range []bool{isLeft, !isLeft, false, true} {
			m, err := ic.Merge(ctx, high)
			if err != nil {
				return err
			}
			ms = append(ms, m)
			switch i {
			case 0:
				err = check(m, true, "merge, left high")
			case 1:
				err = check(m, false, "merge, right high")
			default:
				if m.Size() != size+rsize {
					err = fmt.Errorf("merge, high %v in both groups: size %d, want %d", high, m.Size(), size+rsize)
				}
			}
			if err != nil {
				return err
			}
		}
		var errs []error
		for _, m := range ms {
			errs = append(errs, m.Free())
		}
		ms = nil
		return errors.Join(errs...)
	})
}

// commDupic: rank 0 of each group posts receives from the other's rank 0 on a Dup and
// on the intercommunicator and sends on the intercommunicator: WaitSome completes the
// intercommunicator's receive alone. After a zero-length Sendrecv between the two, it
// sends on the Dup, whose receive gets it. A Dup of the Dup is made and freed.
func commDupic(ctx context.Context, w *runtime.World) error {
	return eachIntercomm(ctx, w, 2, func(ic *runtime.World, isLeft bool) error {
		dup, err := ic.Dup()
		if err != nil {
			return err
		}
		if ic.Rank() == 0 {
			if err := dupicExchange(ctx, ic, dup); err != nil {
				return err
			}
		}
		dup2, err := dup.Dup()
		if err != nil {
			return err
		}
		return first(dup2.Free(), dup.Free())
	})
}

// dupicExchange is commDupic's part at rank 0 of each group.
func dupicExchange(ctx context.Context, ic, dup *runtime.World) error {
	r1, r2 := []int32{-1}, []int32{-1}
	q1, err := runtime.Irecv(dup, r1, 0, 0)
	if err != nil {
		return err
	}
	q2, err := runtime.Irecv(ic, r2, 0, 0)
	if err != nil {
		return err
	}
	if err := runtime.Send(ctx, ic, []int32{17}, 0, 0); err != nil {
		return err
	}
	done, err := runtime.WaitSome(ctx, []*runtime.Request{q1, q2}, nil)
	if err != nil {
		return err
	}
	if len(done) != 1 || done[0] != 1 {
		return fmt.Errorf("WaitSome on the receives of the Dup and the intercommunicator completed %v, want [1] (the intercommunicator's alone)", done)
	}
	if _, err := runtime.Sendrecv(ctx, ic, []byte{}, 0, 37, []byte{}, 0, 37); err != nil {
		return err
	}
	if err := runtime.Send(ctx, dup, []int32{456}, 0, 0); err != nil {
		return err
	}
	if _, err := q1.Wait(ctx); err != nil {
		return err
	}
	if r1[0] != 456 || r2[0] != 17 {
		return fmt.Errorf("got %d on the Dup and %d on the intercommunicator, want 456 and 17", r1[0], r2[0])
	}
	return nil
}

// commIcgroup: an intercommunicator's Group has its Rank and Size.
func commIcgroup(ctx context.Context, w *runtime.World) error {
	return eachIntercomm(ctx, w, 2, func(ic *runtime.World, isLeft bool) error {
		g := ic.Group()
		if g.Rank() != ic.Rank() || g.Size() != ic.Size() {
			return fmt.Errorf("group rank %d size %d, want the intercommunicator's %d %d", g.Rank(), g.Size(), ic.Rank(), ic.Size())
		}
		return nil
	})
}

// commIcsplit: Split of each intercommunicator by the parity of the local rank (key the
// rank) gives an intercommunicator of (n+1)/2 local ranks for color 0 and n/2 for color
// 1 (n the local size), and as many remote ranks of the remote size. On it every rank
// exchanges messages with every remote rank (MTestTestComm). A rank whose color the
// remote group lacks gets nil. MPICH's file checks the old intercommunicator's IsInter
// and only one case of nil; this port checks the new one, and nil exactly when the
// remote group has no rank of the color.
func commIcsplit(ctx context.Context, w *runtime.World) error {
	if w.Size() < 4 {
		return fmt.Errorf("needs at least 4 ranks, has %d", w.Size())
	}
	return eachIntercomm(ctx, w, 2, func(ic *runtime.World, isLeft bool) error {
		key := ic.Rank()
		color := key % 2
		nc, err := ic.Split(ctx, color, key)
		if err != nil {
			return err
		}
		even := 1 - color
		wantSize, wantRsize := (ic.Size()+even)/2, (ic.RemoteSize()+even)/2
		if nc == nil {
			if wantRsize != 0 {
				return fmt.Errorf("split with color %d gave no intercommunicator; want one with %d remote ranks", color, wantRsize)
			}
			return nil
		}
		if wantRsize == 0 {
			err = fmt.Errorf("split with color %d gave an intercommunicator, though the remote group has no rank of that color", color)
		} else if !nc.IsInter() {
			err = fmt.Errorf("split with color %d gave an intracommunicator", color)
		} else if nc.Size() != wantSize || nc.RemoteSize() != wantRsize {
			err = fmt.Errorf("split with color %d: size %d remote size %d, want %d %d", color, nc.Size(), nc.RemoteSize(), wantSize, wantRsize)
		} else {
			err = testIntercomm(ctx, nc)
		}
		return first(err, nc.Free())
	})
}

// commIccreate: Create of each intercommunicator with its local rank 0 in each group
// gives rank 0 of each an intercommunicator of one rank and one remote rank (the others
// nil), on which they exchange messages (MTestTestComm). Create with the whole local
// group gives a congruent intercommunicator (the same groups, another context), tested
// the same way. And Create with an empty group in the right group gives nil everywhere.
func commIccreate(ctx context.Context, w *runtime.World) error {
	if w.Size() < 4 {
		return fmt.Errorf("needs at least 4 ranks, has %d", w.Size())
	}
	return eachIntercomm(ctx, w, 2, func(ic *runtime.World, isLeft bool) error {
		old := ic.Group()
		zero, err := old.Incl([]int{0})
		if err != nil {
			return err
		}
		nc, err := ic.Create(ctx, zero)
		if err != nil {
			return err
		}
		switch {
		case ic.Rank() != 0 && nc != nil:
			return fmt.Errorf("create of local ranks {0} gave local rank %d an intercommunicator", ic.Rank())
		case ic.Rank() == 0 && nc == nil:
			return fmt.Errorf("create of local ranks {0} gave rank 0 nil")
		case nc != nil:
			if !nc.IsInter() || nc.Size() != 1 || nc.RemoteSize() != 1 {
				err = fmt.Errorf("create of local ranks {0}: inter %v, size %d, remote size %d; want an intercommunicator of 1 and 1", nc.IsInter(), nc.Size(), nc.RemoteSize())
			} else {
				err = testIntercomm(ctx, nc)
			}
			if err = first(err, nc.Free()); err != nil {
				return err
			}
		}
		// A manual Dup, from the whole local group.
		nc, err = ic.Create(ctx, old)
		if err != nil {
			return err
		}
		if nc == nil {
			return fmt.Errorf("create of the whole local group gave nil")
		}
		if !nc.IsInter() || nc.Group().Compare(old) != runtime.Ident || nc.RemoteGroup().Compare(ic.RemoteGroup()) != runtime.Ident {
			err = fmt.Errorf("create of the whole local group is not congruent: inter %v, local group %v, remote group %v", nc.IsInter(), nc.Group().Compare(old), nc.RemoteGroup().Compare(ic.RemoteGroup()))
		} else {
			err = testIntercomm(ctx, nc)
		}
		if err = first(err, nc.Free()); err != nil {
			return err
		}
		g := old
		if !isLeft {
			g = runtime.Group{}
		}
		if nc, err = ic.Create(ctx, g); err != nil {
			return err
		}
		if nc != nil {
			return first(fmt.Errorf("create with an empty group in the right group gave an intercommunicator, want nil"), nc.Free())
		}
		return nil
	})
}

// commProbeIntercomm: rank 0 of the right group sends "test\0" to rank 0 of the left
// group, which probes it (5 bytes from remote rank 0) and receives it.
func commProbeIntercomm(ctx context.Context, w *runtime.World) error {
	const msg = "test\x00"
	return eachIntercomm(ctx, w, 2, func(ic *runtime.World, isLeft bool) error {
		if ic.Rank() != 0 {
			return nil
		}
		if !isLeft {
			return runtime.Send(ctx, ic, []byte(msg), 0, 0)
		}
		st, err := runtime.Probe(ctx, ic, 0, 0)
		if err != nil {
			return err
		}
		n := runtime.CountOf[byte](st)
		if n != len(msg) {
			return fmt.Errorf("probe: %d bytes, want %d", n, len(msg))
		}
		buf := make([]byte, n)
		if _, err := runtime.Recv(ctx, ic, buf, 0, 0); err != nil {
			return err
		}
		if string(buf) != msg {
			return fmt.Errorf("received %q, want %q", buf, msg)
		}
		return nil
	})
}

// pt2ptIcsend: every rank of the left group sends its rank to remote rank 0, which
// receives from each remote rank i in turn the value i; then the same from right to
// left.
func pt2ptIcsend(ctx context.Context, w *runtime.World) error {
	return eachIntercomm(ctx, w, 4, func(ic *runtime.World, isLeft bool) error {
		for _, sender := range []bool{true, false} {
			if isLeft == sender {
				if err := runtime.Send(ctx, ic, []int32{int32(ic.Rank())}, 0, 0); err != nil {
					return err
				}
				continue
			}
			if ic.Rank() != 0 {
				continue
			}
			for i := range ic.RemoteSize() {
				b := []int32{-1}
				if _, err := runtime.Recv(ctx, ic, b, i, 0); err != nil {
					return err
				}
				if b[0] != int32(i) {
					return fmt.Errorf("from remote rank %d got %d", i, b[0])
				}
			}
		}
		return nil
	})
}

// pt2ptIcprobe: as pt2ptIcsend, but remote rank 0 probes for any source and tag and
// receives the probed message, which carries its Source.
func pt2ptIcprobe(ctx context.Context, w *runtime.World) error {
	return eachIntercomm(ctx, w, 4, func(ic *runtime.World, isLeft bool) error {
		for _, sender := range []bool{true, false} {
			if isLeft == sender {
				if err := runtime.Send(ctx, ic, []int32{int32(ic.Rank())}, 0, 0); err != nil {
					return err
				}
				continue
			}
			if ic.Rank() != 0 {
				continue
			}
			for range ic.RemoteSize() {
				st, err := runtime.Probe(ctx, ic, runtime.AnySource, runtime.AnyTag)
				if err != nil {
					return err
				}
				b := []int32{-1}
				if st, err = runtime.Recv(ctx, ic, b, st.Source, st.Tag); err != nil {
					return err
				}
				if b[0] != int32(st.Source) {
					return fmt.Errorf("from remote rank %d got %d", st.Source, b[0])
				}
			}
		}
		return nil
	})
}
