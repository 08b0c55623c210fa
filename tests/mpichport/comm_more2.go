package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// The comm_idup tests: gorma's Dup does not communicate (every rank takes the same
// context by calling it in the same order), so MPI_Comm_idup is Dup, its request
// complete at once. The MPI_Wait or MPI_Waitall that completes it has nothing left to
// wait for. What the tests do while their idups are pending (sends, collectives, other
// communicator constructors, in different orders at different ranks) runs around the
// Dup as MPICH orders it.

func init() {
	register("comm-comm_idup", "comm/comm_idup.c", 2, commIdup)
	register("comm-comm_idup_np4", "comm/comm_idup.c", 4, commIdup)
	register("comm-comm_idup_mul", "comm/comm_idup_mul.c", 2, commIdupMul)
	register("comm-comm_idup_overlap", "comm/comm_idup_overlap.c", 2, commIdupOverlap)
	register("comm-comm_idup_iallreduce", "comm/comm_idup_iallreduce.c", 6, commIdupIallreduce)
	register("comm-comm_idup_nb", "comm/comm_idup_nb.c", 6, commIdupNb)
	register("comm-comm_idup_isend", "comm/comm_idup_isend.c", 6, commIdupIsend)
	register("comm-comm_idup_comm", "comm/comm_idup_comm.c", 6, func(ctx context.Context, w *runtime.World) error {
		return idupComm(ctx, w, w)
	})
	register("comm-comm_idup_comm2", "comm/comm_idup_comm2.c", 6, commIdupComm2)
	register("comm-comm_create_group_idup", "comm/comm_create_group_idup.c", 4, commCreateGroupIdup)
	register("comm-ctxsplit", "comm/ctxsplit.c", 4, commCtxsplit)
	register("comm-cmfree2", "comm/cmfree2.c", 2, commCmfree2)
	register("comm-inactive_reqs", "comm/inactive_reqs.c", 1, commInactiveReqs)
}

// testComm is MTestTestComm: on an intercommunicator testIntercomm; on a World an
// Allreduce (sum) of 0..15 gives 0..15 times the size.
func testComm(ctx context.Context, c *runtime.World) error {
	if c == nil {
		return nil
	}
	if c.IsInter() {
		return testIntercomm(ctx, c)
	}
	out := make([]int32, 16)
	if err := collectives.Allreduce(ctx, c, seq(16, func(i int) int32 { return int32(i) }), out, collectives.Sum[int32]()); err != nil {
		return err
	}
	return same("MTestTestIntracomm allreduce", out, seq(16, func(i int) int32 { return int32(i * c.Size()) }))
}

// testAndFree runs testComm on c (nil: nothing) and frees it.
func testAndFree(ctx context.Context, c *runtime.World, what string) error {
	if c == nil {
		return nil
	}
	if err := testComm(ctx, c); err != nil {
		return errors.Join(fmt.Errorf("%s: %w", what, err), c.Free())
	}
	return c.Free()
}

// commIdup: rank 0 Recvs (rank, size+rank) from every other rank before it Dups the World,
// the others Dup it and then Ssend to rank 0; an Allreduce of the ranks on the Dup gives
// size(size-1)/2. Then the even and the odd ranks (Split by rank%2, leaders World ranks 0
// and 1, tag 1234) make an intercommunicator, the odd ranks holding a Dup of their own
// group meanwhile. Each group's rank 0 Recvs from the other ranks of the remote group
// before it Dups the intercommunicator, the others Dup it and Ssend to remote rank 0. An
// Allreduce of the local ranks on the Dup gives each rank the sum of the remote ones,
// rsize(rsize-1)/2. MPICH does not check the received pairs; this port does.
func commIdup(ctx context.Context, w *runtime.World) error {
	rank, size := w.Rank(), w.Size()
	handshake := func(c *runtime.World) (*runtime.World, error) {
		lrank, lsize, peers := c.Rank(), c.Size(), c.Size()
		if c.IsInter() {
			peers = c.RemoteSize()
		}
		if lrank == 0 {
			for i := 1; i < peers; i++ {
				buf := []int32{0x01234567, -0x76543211}
				if _, err := runtime.Recv(ctx, c, buf, i, 0); err != nil {
					return nil, err
				}
				if buf[0] != int32(i) || buf[1] != int32(i+peers) {
					return nil, fmt.Errorf("from rank %d got %v, want [%d %d]", i, buf, i, i+peers)
				}
			}
			return c.Dup()
		}
		d, err := c.Dup()
		if err != nil {
			return nil, err
		}
		return d, runtime.Ssend(ctx, c, []int32{int32(lrank), int32(lsize + lrank)}, 0, 0)
	}
	sum := func(c *runtime.World, mine int) (int32, error) {
		out := []int32{-0x01234567}
		err := collectives.Allreduce(ctx, c, []int32{int32(mine)}, out, collectives.Sum[int32]())
		return out[0], err
	}
	newcomm, err := handshake(w)
	if err != nil {
		return fmt.Errorf("the World: %w", err)
	}
	got, err := sum(newcomm, rank)
	if err != nil {
		return err
	}
	if want := int32(size * (size - 1) / 2); got != want {
		return fmt.Errorf("allreduce on the Dup of the World: %d, want %d", got, want)
	}
	if err := newcomm.Free(); err != nil {
		return err
	}
	local, err := w.Split(ctx, rank%2, rank)
	if err != nil {
		return err
	}
	remoteLeader := 0
	if rank == 0 {
		remoteLeader = 1
	}
	ic, err := local.CreateIntercomm(ctx, 0, w, remoteLeader, 1234)
	if err != nil {
		return err
	}
	var stagger *runtime.World
	if rank%2 == 1 {
		if stagger, err = local.Dup(); err != nil {
			return err
		}
	}
	newcomm, err = handshake(ic)
	if err != nil {
		return fmt.Errorf("intercommunicator: %w", err)
	}
	if got, err = sum(newcomm, ic.Rank()); err != nil {
		return err
	}
	if rsize := ic.RemoteSize(); got != int32(rsize*(rsize-1)/2) {
		return fmt.Errorf("allreduce on the Dup of the intercommunicator: %d, want %d", got, rsize*(rsize-1)/2)
	}
	if err := local.Free(); err != nil {
		return err
	}
	if stagger != nil {
		if err := stagger.Free(); err != nil {
			return err
		}
	}
	return first(newcomm.Free(), ic.Free())
}

// commIdupMul: ten Dups of the World, made one after another and then freed.
func commIdupMul(ctx context.Context, w *runtime.World) error {
	comms := make([]*runtime.World, 10)
	for i := range comms {
		var err error
		if comms[i], err = w.Dup(); err != nil {
			return fmt.Errorf("dup %d: %w", i, err)
		}
	}
	for _, c := range comms {
		if err := c.Free(); err != nil {
			return err
		}
	}
	return nil
}

// commIdupOverlap: for each World rank i, ranks i and i+1 (mod size) make a World of the
// two by Split, in which rank i calls it its primary and rank i+1 its secondary. Each
// rank then Dups its primary, then its secondary, so that the two ranks of a pair Dup
// their two Worlds in opposite orders (with a blocking MPI_Comm_dup, a deadlock). MPICH
// only makes and frees the Dups; this port also sends each rank's World rank on each Dup
// to the other rank of its pair, which receives it on its Dup of the same World.
func commIdupOverlap(ctx context.Context, w *runtime.World) error {
	rank, size := w.Rank(), w.Size()
	var primary, secondary [2]*runtime.World
	for i := range size {
		color := 1
		if rank == i || rank == (i+1)%size {
			color = 0
		}
		c, err := w.Split(ctx, color, 0)
		if err != nil {
			return err
		}
		switch {
		case rank == i:
			primary[0] = c
		case rank == (i+1)%size:
			secondary[0] = c
		default:
			if err := c.Free(); err != nil {
				return err
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
	}
	var err error
	if primary[1], err = primary[0].Dup(); err != nil {
		return err
	}
	if secondary[1], err = secondary[0].Dup(); err != nil {
		return err
	}
	fromNext, fromPrev := []int32{-1}, []int32{-1}
	var reqs []*runtime.Request
	for _, op := range []func() (*runtime.Request, error){
		func() (*runtime.Request, error) {
			return runtime.Isend(primary[1], []int32{int32(rank)}, 1-primary[1].Rank(), 0)
		},
		func() (*runtime.Request, error) {
			return runtime.Isend(secondary[1], []int32{int32(rank)}, 1-secondary[1].Rank(), 0)
		},
		func() (*runtime.Request, error) { return runtime.Irecv(primary[1], fromNext, 1-primary[1].Rank(), 0) },
		func() (*runtime.Request, error) {
			return runtime.Irecv(secondary[1], fromPrev, 1-secondary[1].Rank(), 0)
		},
	} {
		r, err := op()
		if err != nil {
			return err
		}
		reqs = append(reqs, r)
	}
	if err := runtime.WaitAll(ctx, reqs, nil); err != nil {
		return err
	}
	if fromNext[0] != int32((rank+1)%size) || fromPrev[0] != int32((rank+size-1)%size) {
		return fmt.Errorf("on the Dups of the primary and secondary Worlds got World ranks %d and %d, want %d and %d",
			fromNext[0], fromPrev[0], (rank+1)%size, (rank+size-1)%size)
	}
	return first(primary[0].Free(), secondary[0].Free(), primary[1].Free(), secondary[1].Free())
}

// iallreduceOnes starts an Iallreduce (sum) of one 1 per rank on c into out.
func iallreduceOnes(ctx context.Context, c *runtime.World, out []int32) *collectives.Request {
	return collectives.Iallreduce(ctx, c, []int32{1}, out, collectives.Sum[int32]())
}

// overlapDup starts an Iallreduce of ones on red and Dups dup, in that order at the
// ranks where redFirst holds and in the other elsewhere, waits for the Iallreduce,
// checks that it gave want, tests the Dup (testComm) and frees it.
func overlapDup(ctx context.Context, red, dup *runtime.World, redFirst bool, want int, what string) error {
	out := []int32{-1}
	var req *collectives.Request
	if redFirst {
		req = iallreduceOnes(ctx, red, out)
	}
	d, err := dup.Dup()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !redFirst {
		req = iallreduceOnes(ctx, red, out)
	}
	if err := req.Wait(ctx); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if out[0] != int32(want) {
		return errors.Join(fmt.Errorf("%s: iallreduce gave %d, want %d", what, out[0], want), d.Free())
	}
	return testAndFree(ctx, d, what+": the Dup")
}

// commIdupIallreduce: Iallreduces of ones (giving the size) overlapped with Dups: (1) a
// Dup of the World during one on the World. (2) ten of each, started alternately, every
// Iallreduce giving the size (MPICH does not check these). (3) on the World while a Dup
// of the World is Dup'ed, rank 0 starting the Iallreduce first and the others the Dup.
// (4) on the halves of a Split by rank%2 while the World is Dup'ed, and (5) on the World
// while the half is. (6) on the intercommunicator of the two halves (leaders World ranks
// 0 and 1, tag 1234) and its Dup, giving the remote size. (7) on the half while the
// intercommunicator is Dup'ed. (8) on the World while the Merge of the intercommunicator
// (odd ranks high) is Dup'ed and (9) on the Merge while the World is, giving the Merge's
// size (MPICH computes it but does not check it; this port does). Every Dup passes
// testComm. gorma has no nonblocking collectives on an intercommunicator (docs/api.md),
// so (6) runs the blocking Allreduce after the Dup: its result is checked, the overlap
// left out.
func commIdupIallreduce(ctx context.Context, w *runtime.World) error {
	rank, size := w.Rank(), w.Size()
	if err := overlapDup(ctx, w, w, false, size, "(1) World"); err != nil {
		return err
	}
	dups := make([]*runtime.World, 10)
	reqs := make([]*collectives.Request, 10)
	outs := make([][]int32, 10)
	for i := range dups {
		var err error
		if dups[i], err = w.Dup(); err != nil {
			return err
		}
		outs[i] = []int32{-1}
		reqs[i] = iallreduceOnes(ctx, w, outs[i])
	}
	if err := collectives.WaitAll(ctx, reqs); err != nil {
		return err
	}
	for i, d := range dups {
		if outs[i][0] != int32(size) {
			return fmt.Errorf("(2) iallreduce %d gave %d, want %d", i, outs[i][0], size)
		}
		if err := testAndFree(ctx, d, fmt.Sprint("(2) Dup ", i)); err != nil {
			return err
		}
	}
	dw, err := w.Dup()
	if err != nil {
		return err
	}
	if err := first(overlapDup(ctx, w, dw, rank == 0, size, "(3) World, Dup of a Dup"), dw.Free()); err != nil {
		return err
	}
	split, err := w.Split(ctx, rank%2, rank)
	if err != nil {
		return err
	}
	lrank, lsize := split.Rank(), split.Size()
	if err := overlapDup(ctx, split, w, lrank == 0, lsize, "(4) half, Dup of the World"); err != nil {
		return err
	}
	if err := overlapDup(ctx, w, split, lrank == 0, size, "(5) World, Dup of the half"); err != nil {
		return err
	}
	remoteLeader := 0
	if rank == 0 {
		remoteLeader = 1
	}
	ic, err := split.CreateIntercomm(ctx, 0, w, remoteLeader, 1234)
	if err != nil {
		return err
	}
	d, err := ic.Dup()
	if err != nil {
		return err
	}
	out := []int32{-1}
	if err := collectives.Allreduce(ctx, ic, []int32{1}, out, collectives.Sum[int32]()); err != nil {
		return err
	}
	if out[0] != int32(ic.RemoteSize()) {
		return fmt.Errorf("(6) allreduce on the intercommunicator gave %d, want %d", out[0], ic.RemoteSize())
	}
	if err := testAndFree(ctx, d, "(6) Dup of the intercommunicator"); err != nil {
		return err
	}
	if err := overlapDup(ctx, split, ic, lrank == 0, lsize, "(7) half, Dup of the intercommunicator"); err != nil {
		return err
	}
	merge, err := ic.Merge(ctx, rank%2 == 1)
	if err != nil {
		return err
	}
	if err := overlapDup(ctx, w, merge, rank == 0, size, "(8) World, Dup of the Merge"); err != nil {
		return err
	}
	if err := overlapDup(ctx, merge, w, rank == 0, merge.Size(), "(9) Merge, Dup of the World"); err != nil {
		return err
	}
	return first(merge.Free(), split.Free(), ic.Free())
}

// commIdupNb: on each World of eachComm, five times each, a nonblocking collective is
// started and the World Dup'ed: Ibarrier. Ibcast of 815 from rank 0 (the others hold 10).
// Iallreduce of ones (the size). Iscan of the ranks (rank(rank+1)/2). Ibcast again. After
// each five, the collectives' results are checked and every Dup passes testComm and is
// freed. On each intercommunicator of eachIntercomm: Barrier, Bcast of 815 from rank 0 of
// the left group (the right group holds 213) and Allreduce of ones (the remote size),
// five times each with a Dup each, checked the same way. gorma has no nonblocking
// collectives on an intercommunicator (docs/api.md): there the blocking calls run before
// each Dup, their results checked, the overlap left out.
func commIdupNb(ctx context.Context, w *runtime.World) error {
	const iters = 5
	type step struct {
		what  string
		start func(c *runtime.World, i int) *collectives.Request
		check func(c *runtime.World, i int) error
	}
	in, out := make([]int32, iters), make([]int32, iters)
	val := func(what string, got []int32, want int32) error {
		return same(what, got, fill(len(got), want))
	}
	intra := []step{
		{"ibarrier", func(c *runtime.World, i int) *collectives.Request { return collectives.Ibarrier(ctx, c) }, nil},
		{"ibcast", func(c *runtime.World, i int) *collectives.Request {
			in[i] = 10
			if c.Rank() == 0 {
				in[i] = 815
			}
			return collectives.Ibcast(ctx, c, in[i:i+1], 0)
		}, func(c *runtime.World, _ int) error { return val("ibcast", in, 815) }},
		{"iallreduce", func(c *runtime.World, i int) *collectives.Request {
			in[i] = 1
			return collectives.Iallreduce(ctx, c, in[i:i+1], out[i:i+1], collectives.Sum[int32]())
		}, func(c *runtime.World, _ int) error { return val("iallreduce", out, int32(c.Size())) }},
		{"iscan", func(c *runtime.World, i int) *collectives.Request {
			return collectives.Iscan(ctx, c, []int32{int32(c.Rank())}, out[i:i+1], collectives.Sum[int32]())
		}, func(c *runtime.World, _ int) error { return val("iscan", out, int32(c.Rank()*(c.Rank()+1)/2)) }},
	}
	intra = append(intra, intra[1])
	err := eachComm(ctx, w, 1, func(c *runtime.World, name string) error {
		for _, st := range intra {
			reqs := make([]*collectives.Request, iters)
			dups := make([]*runtime.World, iters)
			for i := range iters {
				reqs[i] = st.start(c, i)
				var err error
				if dups[i], err = c.Dup(); err != nil {
					return fmt.Errorf("%s, %s %d: %w", name, st.what, i, err)
				}
			}
			if err := collectives.WaitAll(ctx, reqs); err != nil {
				return fmt.Errorf("%s, %s: %w", name, st.what, err)
			}
			if st.check != nil {
				if err := st.check(c, 0); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
			}
			for i, d := range dups {
				if err := testAndFree(ctx, d, fmt.Sprintf("%s, %s, Dup %d", name, st.what, i)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return eachIntercomm(ctx, w, 1, func(ic *runtime.World, isLeft bool) error {
		calls := []struct {
			what string
			run  func(i int) error
		}{
			{"barrier", func(int) error { return runtime.Barrier(ctx, ic) }},
			{"bcast", func(i int) error {
				root := 0
				in[i] = 213
				switch {
				case isLeft && ic.Rank() == 0:
					root, in[i] = runtime.Root, 815
				case isLeft:
					root, in[i] = runtime.ProcNull, 815
				}
				return collectives.Bcast(ctx, ic, in[i:i+1], root)
			}},
			{"allreduce", func(i int) error {
				return collectives.Allreduce(ctx, ic, []int32{1}, out[i:i+1], collectives.Sum[int32]())
			}},
		}
		for _, call := range calls {
			dups := make([]*runtime.World, iters)
			for i := range iters {
				if err := call.run(i); err != nil {
					return fmt.Errorf("%s %d: %w", call.what, i, err)
				}
				var err error
				if dups[i], err = ic.Dup(); err != nil {
					return fmt.Errorf("%s, Dup %d: %w", call.what, i, err)
				}
			}
			var err error
			switch call.what {
			case "bcast":
				err = val("bcast", in, 815)
			case "allreduce":
				err = val("allreduce", out, int32(ic.RemoteSize()))
			}
			if err != nil {
				return err
			}
			for i, d := range dups {
				if err := testAndFree(ctx, d, fmt.Sprintf("%s, Dup %d", call.what, i)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// commIdupIsend: on each World of eachComm, four times, rank 0 Isends 815 to every other
// rank and Dups the World, the others Dup it and Irecv from rank 0. After waiting for
// all, every receive holds 815 and every Dup passes testComm. The same runs on each
// intercommunicator of eachIntercomm, rank 0 of each group sending to remote ranks 1 and
// up, which receive from remote rank 0.
func commIdupIsend(ctx context.Context, w *runtime.World) error {
	const iters = 4
	run := func(c *runtime.World, name string) error {
		peers := c.Size()
		if c.IsInter() {
			peers = c.RemoteSize()
		}
		in := make([]int32, iters)
		var reqs []*runtime.Request
		dups := make([]*runtime.World, iters)
		for j := range iters {
			var err error
			if c.Rank() == 0 {
				in[j] = 815
				for i := 1; i < peers; i++ {
					r, err := runtime.Isend(c, []int32{815}, i, 0)
					if err != nil {
						return err
					}
					reqs = append(reqs, r)
				}
				if dups[j], err = c.Dup(); err != nil {
					return fmt.Errorf("%s, Dup %d: %w", name, j, err)
				}
			} else {
				if dups[j], err = c.Dup(); err != nil {
					return fmt.Errorf("%s, Dup %d: %w", name, j, err)
				}
				r, err := runtime.Irecv(c, in[j:j+1], 0, 0)
				if err != nil {
					return err
				}
				reqs = append(reqs, r)
			}
		}
		if err := runtime.WaitAll(ctx, reqs, nil); err != nil {
			return err
		}
		if err := same(name+": received", in, fill(iters, int32(815))); err != nil {
			return err
		}
		for j, d := range dups {
			if err := testAndFree(ctx, d, fmt.Sprintf("%s, Dup %d", name, j)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := eachComm(ctx, w, 1, run); err != nil {
		return err
	}
	return eachIntercomm(ctx, w, 1, func(ic *runtime.World, _ bool) error { return run(ic, "intercommunicator") })
}

// commIdupComm2: idupComm over a Dup of the World.
func commIdupComm2(ctx context.Context, w *runtime.World) error {
	d, err := w.Dup()
	if err != nil {
		return err
	}
	return first(idupComm(ctx, w, d), d.Free())
}

// idupComm is comm_idup_comm.c with parent the World, and comm_idup_comm2.c with parent a
// Dup of it: five Dups of the World are made. Then, each tested (testComm) and freed, a
// Dup of parent, its Split by rank%2 with keys reversed, its Create of the upper half,
// its even ranks' CreateGroup, the intercommunicator of its halves (leaders ranks 0 and
// size/2, tag 99) and that intercommunicator's Merge (the lower half high). last the five
// Dups pass testComm and are freed.
func idupComm(ctx context.Context, w, parent *runtime.World) error {
	rank, size := parent.Rank(), parent.Size()
	idups := make([]*runtime.World, 5)
	for i := range idups {
		var err error
		if idups[i], err = w.Dup(); err != nil {
			return err
		}
	}
	out, err := parent.Dup()
	if err != nil {
		return err
	}
	if err := testAndFree(ctx, out, "Dup"); err != nil {
		return err
	}
	if out, err = parent.Split(ctx, rank%2, size-rank); err != nil {
		return err
	}
	if err := testAndFree(ctx, out, "Split"); err != nil {
		return err
	}
	high, err := parent.Group().RangeIncl([][3]int{{size / 2, size - 1, 1}})
	if err != nil {
		return err
	}
	if out, err = parent.Create(ctx, high); err != nil {
		return err
	}
	if err := testAndFree(ctx, out, "Create of the upper half"); err != nil {
		return err
	}
	even, err := parent.Group().Excl(seq(size/2, func(i int) int { return 2*i + 1 }))
	if err != nil {
		return err
	}
	if rank%2 == 0 {
		if out, err = parent.CreateGroup(ctx, even, 0); err != nil {
			return err
		}
		if err := testAndFree(ctx, out, "CreateGroup of the even ranks"); err != nil {
			return err
		}
	}
	isLeft := rank < size/2
	local, err := parent.Split(ctx, b2i(isLeft), rank)
	if err != nil {
		return err
	}
	rleader := -1
	switch rank {
	case 0:
		rleader = size / 2
	case size / 2:
		rleader = 0
	}
	ic, err := local.CreateIntercomm(ctx, 0, parent, rleader, 99)
	if err != nil {
		return err
	}
	merged, err := ic.Merge(ctx, isLeft)
	if err != nil {
		return err
	}
	if err := local.Free(); err != nil {
		return err
	}
	if err := first(testAndFree(ctx, ic, "intercommunicator"), testAndFree(ctx, merged, "Merge")); err != nil {
		return err
	}
	for i, d := range idups {
		if err := testAndFree(ctx, d, fmt.Sprint("Dup of the World ", i)); err != nil {
			return err
		}
	}
	return nil
}

// commCreateGroupIdup: the even ranks call CreateGroup of the World's whole group and
// then Dup the World, the odd ranks the other way round; a Barrier on each of the two
// Worlds returns.
func commCreateGroupIdup(ctx context.Context, w *runtime.World) error {
	if w.Size()%2 != 0 {
		return fmt.Errorf("comm_create_group_idup needs an even rank count, not %d", w.Size())
	}
	var group, dup *runtime.World
	var err error
	if w.Rank()%2 == 0 {
		if group, err = w.CreateGroup(ctx, w.Group(), 0); err == nil {
			dup, err = w.Dup()
		}
	} else {
		if dup, err = w.Dup(); err == nil {
			group, err = w.CreateGroup(ctx, w.Group(), 0)
		}
	}
	if err != nil {
		return err
	}
	if err := runtime.Barrier(ctx, dup); err != nil {
		return fmt.Errorf("barrier on the Dup: %w", err)
	}
	if err := runtime.Barrier(ctx, group); err != nil {
		return fmt.Errorf("barrier on the CreateGroup World: %w", err)
	}
	return first(dup.Free(), group.Free())
}

// commCtxsplit: 100000 Splits of the World, a leak of contexts failing one: at each,
// every rank draws from a generator seeded alike at every rank (C's unseeded rand()). A
// draw that rank+2 divides splits with color 1 and frees the World it gets, any other
// with no color, which must give none.
func commCtxsplit(ctx context.Context, w *runtime.World) error {
	const loops = 100000
	rank := w.Rank()
	rng := rand.New(rand.NewSource(1))
	for i := range loops {
		if rng.Int31()%int32(rank+2) == 0 {
			c, err := w.Split(ctx, 1, rank)
			if err != nil {
				return fmt.Errorf("split %d: %w", i, err)
			}
			if err := c.Free(); err != nil {
				return fmt.Errorf("free %d: %w", i, err)
			}
		} else {
			c, err := w.Split(ctx, runtime.NoColor, rank)
			if err != nil {
				return fmt.Errorf("split %d: %w", i, err)
			}
			if c != nil {
				return fmt.Errorf("split %d with no color gave a World", i)
			}
		}
	}
	return nil
}

// commCmfree2: rank 1 posts an empty receive from rank 0 on a Dup of the World and frees
// the Dup. After a Barrier of the World, rank 0 Ssends the empty message on the Dup and
// frees it, and rank 1's receive completes (a World is freed only when its pending
// operations are done). The other ranks free the Dup and Barrier.
func commCmfree2(ctx context.Context, w *runtime.World) error {
	c, err := w.Dup()
	if err != nil {
		return err
	}
	switch w.Rank() {
	case 0:
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		if err := runtime.Ssend(ctx, c, []int32(nil), 1, 0); err != nil {
			return err
		}
		return c.Free()
	case 1:
		r, err := runtime.Irecv(c, []int32(nil), 0, 0)
		if err != nil {
			return err
		}
		if err := c.Free(); err != nil {
			return fmt.Errorf("free with a receive pending: %w", err)
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		_, err = r.Wait(ctx)
		return err
	default:
		return first(c.Free(), runtime.Barrier(ctx, w))
	}
}

// commInactiveReqs: persistent Requests left in every state at the end: an empty
// SendInit to the next rank on the World, started and freed. An inactive SendInit on a
// one-rank World (MPI_COMM_SELF), never freed. A SendInit on a Dup of the World, freed
// unstarted. A RecvInit from the previous rank on the World, started and completed (by
// the first send). inactive RecvInits on the one-rank World and on the Dup and an
// inactive BarrierInit on the Dup, none freed. The Dup is then freed (gorma has no
// MPI_Comm_disconnect; Free is it with nothing pending) and Finalize, after the
// scenario, must succeed with the inactive Requests left.
func commInactiveReqs(ctx context.Context, w *runtime.World) error {
	rank, size := w.Rank(), w.Size()
	dst, src := (rank+1)%size, (rank+size-1)%size
	comm, err := w.Dup()
	if err != nil {
		return err
	}
	self, err := selfWorld(ctx, w)
	if err != nil {
		return err
	}
	empty := []int32(nil)
	req, err := runtime.SendInit(w, empty, dst, 0)
	if err != nil {
		return err
	}
	if err := first(runtime.Start(req), req.Free()); err != nil {
		return fmt.Errorf("started send on the World: %w", err)
	}
	if _, err := runtime.SendInit(self, empty, 0, 0); err != nil {
		return err
	}
	if req, err = runtime.SendInit(comm, empty, dst, 0); err != nil {
		return err
	}
	if err := req.Free(); err != nil {
		return fmt.Errorf("free of an inactive send: %w", err)
	}
	if req, err = runtime.RecvInit(w, empty, src, 0); err != nil {
		return err
	}
	if err := runtime.Start(req); err != nil {
		return err
	}
	if _, err := req.Wait(ctx); err != nil {
		return fmt.Errorf("started receive on the World: %w", err)
	}
	if _, err := runtime.RecvInit(self, empty, 0, 0); err != nil {
		return err
	}
	if _, err := runtime.RecvInit(comm, empty, src, 0); err != nil {
		return err
	}
	_ = collectives.BarrierInit(comm)
	return comm.Free()
}
