package topo_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/topo"
)

// A neighbourhood under test: the topology, this rank's in-neighbour slots (NoNeighbor
// for an empty one) and its out-neighbour count, and, for each slot, the send block of
// the neighbour that must land in it (src: the MPI rule, derived here from the
// topology's own accessors and the graph the test built, independently of the
// implementation).
type hoodCase struct {
	t   topo.Topology
	in  []int
	out int
	src []int // src[l]: the neighbour's send block that lands in slot l
}

// cartCase returns the hoodCase of Cart c: slot l of each dimension's pair receives the
// neighbour's block l^1, the one it sent towards this rank.
func cartCase(c *topo.Cart) hoodCase {
	var in, src []int
	for d := range c.NDims() {
		lo, hi, _ := c.Shift(d, 1)
		in = append(in, lo, hi)
		src = append(src, 2*d+1, 2*d)
	}
	return hoodCase{t: c, in: in, out: len(in), src: src}
}

// graphCase returns the hoodCase of a topology whose rank me receives from in and whose
// rank p sends to outOf(p): the m-th slot of in naming p receives p's block on its m-th
// edge to me.
func graphCase(t topo.Topology, me int, in []int, out int, outOf func(p int) []int) hoodCase {
	src := make([]int, len(in))
	for l, p := range in {
		m := 0
		for _, q := range in[:l] {
			if q == p {
				m++
			}
		}
		src[l] = -1
		for j, q := range outOf(p) {
			if q == me {
				if m == 0 {
					src[l] = j
					break
				}
				m--
			}
		}
	}
	return hoodCase{t: t, in: in, out: out, src: src}
}

// enc is element j of rank r's send block k in call round.
func enc(round, r, k, j int) int64 { return int64(round*1000000 + r*10000 + k*100 + j) }

const (
	blocking = iota
	nonblocking
	persistent
	modes
)

var modeNames = [modes]string{"blocking", "nonblocking", "persistent"}

// complete runs a call in mode: blocking runs block, the others the Request ireq or
// pinit makes (a persistent one started, waited for and started again for round 2 after
// refill has rewritten send).
func complete(ctx context.Context, mode int, block func() error, ireq, pinit func() (*topo.Request, error), refill func(), check func(round int) error) error {
	switch mode {
	case blocking:
		if err := block(); err != nil {
			return err
		}
		return check(0)
	case nonblocking:
		r, err := ireq()
		if err != nil {
			return err
		}
		if err := r.Wait(ctx); err != nil {
			return err
		}
		if done, err := r.Test(); !done || err != nil {
			return fmt.Errorf("Test after Wait: %v, %v", done, err)
		}
		return check(0)
	}
	r, err := pinit()
	if err != nil {
		return err
	}
	for round := range 2 {
		if round > 0 {
			refill()
		}
		if err := r.Start(); err != nil {
			return err
		}
		if err := r.Wait(ctx); err != nil {
			return err
		}
		if err := check(round); err != nil {
			return err
		}
	}
	return r.Free()
}

// runAll runs the five neighbourhood collectives in the three modes over hc and checks
// every block: an empty slot's recv block keeps its sentinel.
func runAll(ctx context.Context, hc hoodCase) error {
	me := hc.t.World().Rank()
	for mode := range modes {
		for _, f := range []func(context.Context, hoodCase, int, int) error{checkAllgather, checkAllgatherv, checkAlltoall, checkAlltoallv, checkAlltoallw} {
			if err := f(ctx, hc, me, mode); err != nil {
				return fmt.Errorf("rank %d, %s: %w", me, modeNames[mode], err)
			}
		}
	}
	return nil
}

// want checks that recv's block of slot l (at off, n elements) holds what its neighbour
// sent in round with block k = hc.src[l] (or, k < 0, the allgather block) or, for an
// empty slot, the sentinel -1.
func want(hc hoodCase, call string, round int, recv []int64, l, off, n, k int) error {
	for j := range n {
		w := int64(-1)
		if p := hc.in[l]; p != topo.NoNeighbor {
			w = enc(round, p, max(k, 0), j)
		}
		if recv[off+j] != w {
			return fmt.Errorf("%s round %d: slot %d (from %d) element %d is %d, want %d", call, round, l, hc.in[l], j, recv[off+j], w)
		}
	}
	return nil
}

func fill(recv []int64) {
	for i := range recv {
		recv[i] = -1
	}
}

func checkAllgather(ctx context.Context, hc hoodCase, me, mode int) error {
	const n = 3
	send, recv := make([]int64, n), make([]int64, n*len(hc.in))
	round := 0
	refill := func() {
		round++
		for j := range send {
			send[j] = enc(round, me, 0, j)
		}
		fill(recv)
	}
	round = -1
	refill()
	return complete(ctx, mode,
		func() error { return topo.NeighborAllgather(ctx, hc.t, send, recv) },
		func() (*topo.Request, error) { return topo.IneighborAllgather(hc.t, send, recv) },
		func() (*topo.Request, error) { return topo.NeighborAllgatherInit(hc.t, send, recv) },
		refill,
		func(round int) error {
			for l := range hc.in {
				if err := want(hc, "allgather", round, recv, l, l*n, n, -1); err != nil {
					return err
				}
			}
			return nil
		})
}

// checkAllgatherv places the slots' blocks in reverse order with a gap after each.
func checkAllgatherv(ctx context.Context, hc hoodCase, me, mode int) error {
	const n = 2
	in := len(hc.in)
	send, recv := make([]int64, n), make([]int64, (n+1)*in)
	counts, displs := make([]int, in), make([]int, in)
	for l := range in {
		counts[l], displs[l] = n, (in-1-l)*(n+1)
	}
	round := -1
	refill := func() {
		round++
		for j := range send {
			send[j] = enc(round, me, 0, j)
		}
		fill(recv)
	}
	refill()
	return complete(ctx, mode,
		func() error { return topo.NeighborAllgatherv(ctx, hc.t, send, recv, counts, displs) },
		func() (*topo.Request, error) { return topo.IneighborAllgatherv(hc.t, send, recv, counts, displs) },
		func() (*topo.Request, error) {
			return topo.NeighborAllgathervInit(hc.t, send, recv, counts, displs)
		},
		refill,
		func(round int) error {
			for l := range in {
				if err := want(hc, "allgatherv", round, recv, l, displs[l], n, -1); err != nil {
					return err
				}
				if recv[displs[l]+n] != -1 {
					return fmt.Errorf("allgatherv: the gap after slot %d was written", l)
				}
			}
			return nil
		})
}

// sendBlocks fills send with this rank's blocks of round, block k of count(k) elements at
// displs[k].
func sendBlocks(send []int64, round, me int, counts, displs []int) {
	for k := range counts {
		for j := range counts[k] {
			send[displs[k]+j] = enc(round, me, k, j)
		}
	}
}

func checkAlltoall(ctx context.Context, hc hoodCase, me, mode int) error {
	const n = 4
	send, recv := make([]int64, n*hc.out), make([]int64, n*len(hc.in))
	counts, displs := make([]int, hc.out), make([]int, hc.out)
	for k := range counts {
		counts[k], displs[k] = n, k*n
	}
	round := -1
	refill := func() {
		round++
		sendBlocks(send, round, me, counts, displs)
		fill(recv)
	}
	refill()
	return complete(ctx, mode,
		func() error { return topo.NeighborAlltoall(ctx, hc.t, send, recv) },
		func() (*topo.Request, error) { return topo.IneighborAlltoall(hc.t, send, recv) },
		func() (*topo.Request, error) { return topo.NeighborAlltoallInit(hc.t, send, recv) },
		refill,
		func(round int) error {
			for l := range hc.in {
				if err := want(hc, "alltoall", round, recv, l, l*n, n, hc.src[l]); err != nil {
					return err
				}
			}
			return nil
		})
}

// count is the length of send block k: 1 to 3 elements, so that a block landing in the
// wrong slot shows as a length mismatch too.
func count(k int) int { return 1 + k%3 }

// checkAlltoallv sends blocks of count(k) elements from send in reverse order and
// receives them in reverse order with a gap after each.
func checkAlltoallv(ctx context.Context, hc hoodCase, me, mode int) error {
	in, out := len(hc.in), hc.out
	sc, sd := make([]int, out), make([]int, out)
	at := 0
	for k := out - 1; k >= 0; k-- {
		sc[k], sd[k] = count(k), at
		at += count(k)
	}
	send := make([]int64, at)
	rc, rd := make([]int, in), make([]int, in)
	at = 0
	for l := in - 1; l >= 0; l-- {
		rc[l], rd[l] = count(max(hc.src[l], 0)), at
		at += rc[l] + 1
	}
	recv := make([]int64, at)
	round := -1
	refill := func() {
		round++
		sendBlocks(send, round, me, sc, sd)
		fill(recv)
	}
	refill()
	return complete(ctx, mode,
		func() error { return topo.NeighborAlltoallv(ctx, hc.t, send, sc, sd, recv, rc, rd) },
		func() (*topo.Request, error) { return topo.IneighborAlltoallv(hc.t, send, sc, sd, recv, rc, rd) },
		func() (*topo.Request, error) { return topo.NeighborAlltoallvInit(hc.t, send, sc, sd, recv, rc, rd) },
		refill,
		func(round int) error {
			for l := range in {
				if err := want(hc, "alltoallv", round, recv, l, rd[l], rc[l], hc.src[l]); err != nil {
					return err
				}
				if recv[rd[l]+rc[l]] != -1 {
					return fmt.Errorf("alltoallv: the gap after slot %d was written", l)
				}
			}
			return nil
		})
}

// checkAlltoallw sends the blocks of checkAlltoallv as bytes, send's described in int64
// elements and recv's in 4-byte halves (MPI's datatypes may differ so long as the bytes
// agree), recv's in slot order at displacements of 8 bytes past each block.
func checkAlltoallw(ctx context.Context, hc hoodCase, me, mode int) error {
	in, out := len(hc.in), hc.out
	sbl := topo.ByteBlocks{Counts: make([]int, out), Displs: make([]int, out), Sizes: make([]int, out)}
	at := 0
	for k := out - 1; k >= 0; k-- {
		sbl.Counts[k], sbl.Displs[k], sbl.Sizes[k] = count(k), at, 8
		at += 8 * count(k)
	}
	send := make([]byte, at)
	rbl := topo.ByteBlocks{Counts: make([]int, in), Displs: make([]int, in), Sizes: make([]int, in)}
	at = 0
	for l := range in {
		rbl.Counts[l], rbl.Displs[l], rbl.Sizes[l] = 2*count(max(hc.src[l], 0)), at, 4
		at += 8*count(max(hc.src[l], 0)) + 8
	}
	recv := make([]byte, at)
	round := -1
	refill := func() {
		round++
		for k := range out {
			for j := range count(k) {
				binary.LittleEndian.PutUint64(send[sbl.Displs[k]+8*j:], uint64(enc(round, me, k, j)))
			}
		}
		for i := range recv {
			recv[i] = 0xff
		}
	}
	refill()
	return complete(ctx, mode,
		func() error { return topo.NeighborAlltoallw(ctx, hc.t, send, sbl, recv, rbl) },
		func() (*topo.Request, error) { return topo.IneighborAlltoallw(hc.t, send, sbl, recv, rbl) },
		func() (*topo.Request, error) { return topo.NeighborAlltoallwInit(hc.t, send, sbl, recv, rbl) },
		refill,
		func(round int) error {
			got := make([]int64, len(recv)/8)
			for i := range got {
				got[i] = int64(binary.LittleEndian.Uint64(recv[8*i:]))
			}
			for l := range in {
				n := rbl.Counts[l] / 2
				if err := want(hc, "alltoallw", round, got, l, rbl.Displs[l]/8, n, hc.src[l]); err != nil {
					return err
				}
				if got[rbl.Displs[l]/8+n] != -1 {
					return fmt.Errorf("alltoallw: the gap after slot %d was written", l)
				}
			}
			return nil
		})
}

// ring returns the ranks d steps around a ring of n from r.
func ring(r, d, n int) int { return ((r+d)%n + n) % n }

// forEachHood runs f as forEach does, and on one more job: the ranks in two blocks on two
// hosts (a, a, b, b for four), so that a rank has neighbours over shm and over tcp in one
// call.
func forEachHood(t *testing.T, sizes []int, f func(ctx context.Context, w *runtime.World) error) {
	forEach(t, sizes, f)
	for _, n := range sizes {
		hosts := make([]string, n)
		for r := range hosts {
			hosts[r] = string(rune('a' + 2*r/n))
		}
		t.Run(fmt.Sprintf("host-blocks/n=%d", n), func(t *testing.T) {
			runtimetest.Run(t, n, runtimetest.Options{Hosts: hosts, Timeout: 30 * time.Second}, func(w *runtime.World) error {
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
				defer cancel()
				return f(ctx, w)
			})
		})
	}
}
