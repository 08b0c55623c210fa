package collectives

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// interJob splits the job's ranks into a low group (the first lowN ranks) and the rest,
// and joins them in an intercommunicator; f gets it, whether this rank is low, and the
// World's ranks of the remote group.
func interJob(t *testing.T, n, lowN int, opt runtimetest.Options, f func(ctx context.Context, w, ic *runtime.World, low bool, remote []int) error) {
	t.Helper()
	runJob(t, n, opt, 30*time.Second, func(e rankEnv) error {
		low := e.r < lowN
		color, leader := 0, lowN
		if !low {
			color, leader = 1, 0
		}
		local, err := e.w.Split(e.ctx, color, e.r)
		if err != nil {
			return err
		}
		ic, err := local.CreateIntercomm(e.ctx, 0, e.w, leader, 3)
		if err != nil {
			return err
		}
		var remote []int
		for r := range n {
			if (r < lowN) != low {
				remote = append(remote, r)
			}
		}
		if err := f(e.ctx, e.w, ic, low, remote); err != nil {
			return err
		}
		return errors.Join(ic.Free(), local.Free())
	})
}

var interLayouts = []struct {
	name    string
	n, lowN int
	opt     runtimetest.Options
}{
	{"shm", 5, 2, runtimetest.Options{Transport: "shm"}},
	{"shm", 2, 1, runtimetest.Options{Transport: "shm"}},
	{"tcp", 4, 3, runtimetest.Options{Transport: "tcp"}},
	{"hosts", 5, 3, runtimetest.Options{Hosts: []string{"a", "b", "a", "b", "a"}}},
}

func forInterLayouts(t *testing.T, f func(ctx context.Context, w, ic *runtime.World, low bool, remote []int) error) {
	for _, l := range interLayouts {
		t.Run(fmt.Sprintf("%s/n=%d,low=%d", l.name, l.n, l.lowN), func(t *testing.T) {
			interJob(t, l.n, l.lowN, l.opt, f)
		})
	}
}

// TestInterRooted: Bcast, Reduce, Gather and Scatter with each group's every rank as the
// root in turn: the remote group gets the root's data, the root the remote group's, and
// the root's own group is left alone.
func TestInterRooted(t *testing.T) {
	forInterLayouts(t, func(ctx context.Context, w, ic *runtime.World, low bool, remote []int) error {
		const n = 3
		me := w.Rank()
		for _, rootLow := range []bool{true, false} {
			rootGroupSize := ic.Size()
			if low != rootLow {
				rootGroupSize = ic.RemoteSize()
			}
			for root := range rootGroupSize {
				arg := root
				rootWorld := root // the World's rank of the root
				if low == rootLow {
					arg = runtime.ProcNull
					if ic.Rank() == root {
						arg = runtime.Root
					}
					tr, err := ic.Group().TranslateRanks([]int{root}, w.Group())
					if err != nil {
						return err
					}
					rootWorld = tr[0]
				} else {
					rootWorld = remote[root]
				}
				// Bcast: the root's rank of the World, n times.
				buf := []int64{-1, -1, -1}
				if arg == runtime.Root {
					buf = []int64{int64(me), int64(me), int64(me)}
				}
				if err := Bcast(ctx, ic, buf, arg); err != nil {
					return err
				}
				want := int64(-1)
				if arg != runtime.ProcNull {
					want = int64(rootWorld)
				}
				if buf[0] != want || buf[2] != want {
					return fmt.Errorf("bcast from %d (arg %d): got %v, want %d", rootWorld, arg, buf, want)
				}
				// Reduce: the root gets the sum of the remote group's ranks of the World.
				sum := make([]int64, n)
				if err := Reduce(ctx, ic, []int64{int64(me), 1, 2}, sum, Sum[int64](), arg); err != nil {
					return err
				}
				if arg == runtime.Root {
					var s int64
					for _, r := range remote {
						s += int64(r)
					}
					if !slices.Equal(sum, []int64{s, int64(len(remote)), 2 * int64(len(remote))}) {
						return fmt.Errorf("reduce at root %d: got %v, want [%d %d %d]", me, sum, s, len(remote), 2*len(remote))
					}
				}
				// Gather: the root gets the remote group's ranks of the World, in order.
				var all []int64
				if arg == runtime.Root {
					all = make([]int64, len(remote))
				}
				if err := Gather(ctx, ic, []int64{int64(me)}, all, arg); err != nil {
					return err
				}
				if arg == runtime.Root && !slices.Equal(all, toInt64(remote)) {
					return fmt.Errorf("gather at root %d: got %v, want %v", me, all, remote)
				}
				// Scatter: remote rank i gets 100*root + i.
				var out []int64
				if arg == runtime.Root {
					for i := range remote {
						out = append(out, int64(100*me+i))
					}
				}
				got := []int64{-1}
				if err := Scatter(ctx, ic, out, got, arg); err != nil {
					return err
				}
				if arg >= 0 && got[0] != int64(100*rootWorld+ic.Rank()) {
					return fmt.Errorf("scatter from %d: rank %d got %d, want %d", rootWorld, ic.Rank(), got[0], 100*rootWorld+ic.Rank())
				}
			}
		}
		return nil
	})
}

func toInt64(rs []int) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = int64(r)
	}
	return out
}

// TestInterAll: Allreduce, Allgather and Alltoall give each group the remote group's
// data, and Barrier returns at every rank.
func TestInterAll(t *testing.T) {
	forInterLayouts(t, func(ctx context.Context, w, ic *runtime.World, low bool, remote []int) error {
		me := w.Rank()
		got := make([]int64, 2)
		if err := Allreduce(ctx, ic, []int64{int64(me), 1}, got, Sum[int64]()); err != nil {
			return err
		}
		var s int64
		for _, r := range remote {
			s += int64(r)
		}
		if !slices.Equal(got, []int64{s, int64(len(remote))}) {
			return fmt.Errorf("allreduce: got %v, want [%d %d]", got, s, len(remote))
		}
		all := make([]int64, 2*len(remote))
		if err := Allgather(ctx, ic, []int64{int64(me), int64(-me)}, all); err != nil {
			return err
		}
		for i, r := range remote {
			if all[2*i] != int64(r) || all[2*i+1] != int64(-r) {
				return fmt.Errorf("allgather: got %v from remote ranks %v", all, remote)
			}
		}
		// Alltoall: the block for remote rank i is 1000*me + i.
		send := make([]int64, len(remote))
		for i := range send {
			send[i] = int64(1000*me + i)
		}
		recv := make([]int64, len(remote))
		if err := Alltoall(ctx, ic, send, recv); err != nil {
			return err
		}
		for i, r := range remote {
			if recv[i] != int64(1000*r+ic.Rank()) {
				return fmt.Errorf("alltoall: got %v from remote ranks %v", recv, remote)
			}
		}
		if err := Barrier(ctx, ic); err != nil {
			return err
		}
		// A call with no intercommunicator form says so; the next call still works.
		if err := Scan(ctx, ic, []int64{1}, make([]int64, 1), Sum[int64]()); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("Scan on an intercommunicator: %v, want ErrInvalid", err)
		}
		if r := Iscan(ctx, ic, []int64{1}, make([]int64, 1), Sum[int64]()); !errors.Is(r.Wait(ctx), runtime.ErrInvalid) {
			return fmt.Errorf("Iscan on an intercommunicator: want ErrInvalid")
		}
		// A wrong root argument fails at once, naming it.
		if err := Bcast(ctx, ic, []int64{0}, ic.RemoteSize()); !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("Bcast with root %d of %d remote ranks: %v, want ErrInvalid", ic.RemoteSize(), ic.RemoteSize(), err)
		}
		return Allreduce(ctx, ic, []int64{1}, got[:1], Sum[int64]())
	})
}

// TestInterV: Gatherv and Scatterv with unequal blocks at displacements, and Allgatherv:
// remote rank i's block is i+1 elements long.
func TestInterV(t *testing.T) {
	forInterLayouts(t, func(ctx context.Context, w, ic *runtime.World, low bool, remote []int) error {
		me, m := w.Rank(), len(remote)
		counts, displs := make([]int, m), make([]int, m)
		total := 0
		for i := range m {
			counts[i], displs[i] = i+1, total+1 // a gap of one before each block
			total += i + 2
		}
		mine := make([]int64, ic.Rank()+1)
		for i := range mine {
			mine[i] = int64(100*me + i)
		}
		for _, rootLow := range []bool{true, false} {
			arg := 0 // the root is rank 0 of its group
			if low == rootLow {
				arg = runtime.ProcNull
				if ic.Rank() == 0 {
					arg = runtime.Root
				}
			}
			var recv []int64
			if arg == runtime.Root {
				recv = make([]int64, total)
				for i := range recv {
					recv[i] = -7
				}
			}
			if err := Gatherv(ctx, ic, mine, recv, counts, displs, arg); err != nil {
				return err
			}
			if arg == runtime.Root {
				for i, r := range remote {
					if recv[displs[i]-1] != -7 || recv[displs[i]] != int64(100*r) || recv[displs[i]+i] != int64(100*r+i) {
						return fmt.Errorf("gatherv: got %v", recv)
					}
				}
			}
			// Scatterv back: remote rank i gets the block Gatherv took from it.
			got := make([]int64, ic.Rank()+1)
			if err := Scatterv(ctx, ic, recv, counts, displs, got, arg); err != nil {
				return err
			}
			if arg >= 0 && !slices.Equal(got, mine) {
				return fmt.Errorf("scatterv: got %v, want %v", got, mine)
			}
		}
		all := make([]int64, m*(m+1)/2)
		if err := Allgatherv(ctx, ic, mine, all, seq(1, m)); err != nil {
			return err
		}
		at := 0
		for i, r := range remote {
			if all[at] != int64(100*r) || all[at+i] != int64(100*r+i) {
				return fmt.Errorf("allgatherv: got %v from remote ranks %v", all, remote)
			}
			at += i + 1
		}
		return nil
	})
}

// seq returns from, from+1, ..., n of them.
func seq(from, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

// TestInterAsymmetric: the groups' counts differ (MPI matches each group's send count
// with the other's receive count): Allgather and Alltoall where only the low group
// sends, and Alltoallv with remote rank i's block i+1 long.
func TestInterAsymmetric(t *testing.T) {
	forInterLayouts(t, func(ctx context.Context, w, ic *runtime.World, low bool, remote []int) error {
		me, m := w.Rank(), len(remote)
		var send, recv []int64
		if low {
			send = []int64{int64(me)}
		} else {
			recv = make([]int64, m)
		}
		if err := Allgather(ctx, ic, send, recv); err != nil {
			return err
		}
		if !low && !slices.Equal(recv, toInt64(remote)) {
			return fmt.Errorf("one-way allgather: got %v, want %v", recv, remote)
		}
		send, recv = nil, nil
		if low {
			send = make([]int64, 2*m)
			for i := range send {
				send[i] = int64(100*me + i)
			}
		} else {
			recv = make([]int64, 2*m)
		}
		if err := Alltoall(ctx, ic, send, recv); err != nil {
			return err
		}
		if !low {
			for i, r := range remote {
				if recv[2*i] != int64(100*r+2*ic.Rank()) || recv[2*i+1] != int64(100*r+2*ic.Rank()+1) {
					return fmt.Errorf("one-way alltoall: got %v from remote ranks %v", recv, remote)
				}
			}
		}
		// Alltoallv: this rank sends remote rank i a block of i+1 copies of its rank, and
		// receives from remote rank i a block as long as its own rank in its group plus 1.
		sc, rc := seq(1, m), make([]int, m)
		for i := range rc {
			rc[i] = ic.Rank() + 1
		}
		send = make([]int64, m*(m+1)/2)
		for i := range send {
			send[i] = int64(me)
		}
		recv = make([]int64, m*(ic.Rank()+1))
		if err := Alltoallv(ctx, ic, send, sc, recv, rc); err != nil {
			return err
		}
		for i, r := range remote {
			for j := range ic.Rank() + 1 {
				if recv[i*(ic.Rank()+1)+j] != int64(r) {
					return fmt.Errorf("alltoallv: got %v from remote ranks %v", recv, remote)
				}
			}
		}
		return nil
	})
}

// TestInterReduceScatterAlltoallw: ReduceScatter and ReduceScatterV give each group's
// ranks their blocks of the other group's sum; Alltoallw moves byte blocks of per-rank
// sizes between the groups.
func TestInterReduceScatterAlltoallw(t *testing.T) {
	forInterLayouts(t, func(ctx context.Context, w, ic *runtime.World, low bool, remote []int) error {
		me, n, m := ic.Rank(), ic.Size(), len(remote)
		// ReduceScatter: blocks of 2; the other group's send vectors have 2*n elements,
		// element k of world rank r being 100*r + k.
		send := make([]int64, 2*m)
		for k := range send {
			send[k] = int64(100*w.Rank() + k)
		}
		recv := make([]int64, 2)
		if err := ReduceScatter(ctx, ic, send, recv, Sum[int64]()); err != nil {
			return err
		}
		sumR := int64(0)
		for _, r := range remote {
			sumR += int64(100 * r)
		}
		for j := range recv {
			if want := sumR + int64(m*(2*me+j)); recv[j] != want {
				return fmt.Errorf("reduce_scatter: block of rank %d: %v, want element %d = %d", me, recv, j, want)
			}
		}
		// ReduceScatterV: local rank i gets i+1 elements; the other group sends the sum.
		counts := seq(1, n)
		total := n * (n + 1) / 2
		remoteTotal := m * (m + 1) / 2
		vs := make([]int64, remoteTotal)
		for k := range vs {
			vs[k] = int64(k + 1)
		}
		vr := make([]int64, me+1)
		if err := ReduceScatterV(ctx, ic, vs, vr, counts, Sum[int64]()); err != nil {
			return err
		}
		off := me * (me + 1) / 2
		for j := range vr {
			if want := int64(m * (off + j + 1)); vr[j] != want {
				return fmt.Errorf("reduce_scatter_v: rank %d got %v, want element %d = %d (local total %d)", me, vr, j, want, total)
			}
		}
		// Alltoallw: to remote rank r, 4*(r+1) bytes of this rank's world rank; from
		// remote rank r, 4*(me+1) bytes of r's.
		sb := ByteBlocks{Counts: make([]int, m), Displs: make([]int, m), Sizes: make([]int, m)}
		var sbuf []byte
		for r := range m {
			sb.Counts[r], sb.Displs[r], sb.Sizes[r] = r+1, len(sbuf), 4
			for range 4 * (r + 1) {
				sbuf = append(sbuf, byte(w.Rank()))
			}
		}
		rb := ByteBlocks{Counts: make([]int, m), Displs: make([]int, m), Sizes: make([]int, m)}
		rbuf := make([]byte, 4*(me+1)*m)
		for r := range m {
			rb.Counts[r], rb.Displs[r], rb.Sizes[r] = me+1, 4*(me+1)*r, 4
		}
		if err := Alltoallw(ctx, ic, sbuf, sb, rbuf, rb); err != nil {
			return err
		}
		for r, wr := range remote {
			for _, b := range rbuf[rb.Displs[r] : rb.Displs[r]+4*(me+1)] {
				if b != byte(wr) {
					return fmt.Errorf("alltoallw: block from remote rank %d holds %d, want %d", r, b, wr)
				}
			}
		}
		return nil
	})
}

// TestInterNonblockingPersistent: the nonblocking and persistent forms of the
// intercommunicator collectives: Ibcast and Iallreduce in flight together, and a
// persistent Allreduce started three times.
func TestInterNonblockingPersistent(t *testing.T) {
	forInterLayouts(t, func(ctx context.Context, w, ic *runtime.World, low bool, remote []int) error {
		me := w.Rank()
		var sumR int64
		for _, r := range remote {
			sumR += int64(r)
		}
		arg := 0 // the low group's rank 0 broadcasts
		if low {
			arg = runtime.ProcNull
			if ic.Rank() == 0 {
				arg = runtime.Root
			}
		}
		buf := []int64{-1}
		if arg == runtime.Root {
			buf[0] = 77
		}
		sum := []int64{0}
		rb := Ibcast(ctx, ic, buf, arg)
		ra := Iallreduce(ctx, ic, []int64{int64(me)}, sum, Sum[int64]())
		if err := WaitAll(ctx, []*Request{rb, ra}); err != nil {
			return err
		}
		if (arg >= 0 && buf[0] != 77) || sum[0] != sumR {
			return fmt.Errorf("ibcast %d (arg %d), iallreduce %d (want %d)", buf[0], arg, sum[0], sumR)
		}
		in, out := []int64{0}, []int64{0}
		p := AllreduceInit(ic, in, out, Sum[int64]())
		for round := range 3 {
			in[0] = int64(me * (round + 1))
			if err := p.Start(ctx); err != nil {
				return err
			}
			if err := p.Wait(ctx); err != nil {
				return err
			}
			if out[0] != sumR*int64(round+1) {
				return fmt.Errorf("persistent allreduce round %d: %d, want %d", round, out[0], sumR*int64(round+1))
			}
		}
		return p.Free()
	})
}
