package collectives

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
)

// pair is the element of the typed tests over communicator kinds: a float64 and an int32
// with 4 bytes of padding after them, which FromStruct's layout skips.
type pair struct {
	F float64
	I int32
}

// typedKind is a layout of count copies over a []pair buffer.
type typedKind struct {
	name  string
	t     datatype.Type
	count int
}

func typedKinds() ([]typedKind, error) {
	contig, err1 := datatype.Contiguous[int64](2)                       // a whole pair, padding included
	vector, err2 := datatype.Vector[float64](3, 1, 2)                   // F of pairs 0, 1, 2
	indexed, err3 := datatype.Indexed[int32]([]int{1, 1}, []int{2, 10}) // I of pairs 0 and 2
	strct, err4 := datatype.FromStruct[pair]()                          // F and I, not the padding
	resized, err5 := strct.Resized(0, 32)                               // every other pair
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return nil, err
	}
	return []typedKind{
		{"contiguous", contig, 3},
		{"vector", vector, 1},
		{"indexed", indexed, 1},
		{"struct", strct, 3},
		{"resized", resized, 2},
	}, nil
}

// pairsFor is the length of a []pair that copies copies of t lie in.
func pairsFor(t datatype.Type, copies int) int {
	_, hi, _ := t.Span(copies)
	return (hi + 15) / 16
}

// filled is rank's data: n pairs that name it and their index.
func filled(rank, n int) []pair {
	b := make([]pair, n)
	for i := range b {
		b[i] = pair{F: float64(1000*rank+i) + 0.5, I: int32(-1000*rank - i)}
	}
	return b
}

// untouched is a buffer that no rank's data matches.
func untouched(n int) []pair {
	b := make([]pair, n)
	for i := range b {
		b[i] = pair{F: -1, I: -1}
	}
	return b
}

// packedOf is count copies of t over buf, packed.
func packedOf(buf []pair, count int, t datatype.Type) []byte {
	n, _ := t.PackSize(count)
	b := make([]byte, n)
	if _, err := datatype.Pack(b, buf, count, t); err != nil {
		panic(err)
	}
	return b
}

// laidOut is an untouched buffer of n pairs with packed data unpacked over it as count
// copies of t: what a receive of data leaves.
func laidOut(n int, data []byte, count int, t datatype.Type) []pair {
	b := untouched(n)
	if _, err := datatype.Unpack(b, data, count, t); err != nil {
		panic(err)
	}
	return b
}

// typedComm is one communicator of the typed tests: c, the World ranks of the ranks this
// rank's blocks come from and go to in rank order (c's own on an intracommunicator, the
// remote group's on an intercommunicator), and the roots to try.
type typedComm struct {
	name  string
	c     *runtime.World
	peers []int
	roots []typedRoot
}

// typedRoot is a rooted call's root argument at this rank, what it makes of the rank, and
// the World rank of the root.
type typedRoot struct {
	arg, world int
	role       interRole
}

// intraComm describes intracommunicator c, whose ranks are the World's peers; the roots
// tried are c's first and last rank.
func intraComm(name string, c *runtime.World, peers []int) typedComm {
	tc := typedComm{name: name, c: c, peers: peers}
	for _, root := range ends(c.Size()) {
		role := roleRemote
		if c.Rank() == root {
			role = roleRoot
		}
		tc.roots = append(tc.roots, typedRoot{root, peers[root], role})
	}
	return tc
}

// ends is the first and the last of n ranks.
func ends(n int) []int {
	if n == 1 {
		return []int{0}
	}
	return []int{0, n - 1}
}

// interComm describes intercommunicator ic over World w, whose remote group is the
// World's ranks remote; the roots tried are the low group's first and last rank, then
// the high group's, at every rank in this order.
func interComm(w, ic *runtime.World, low bool, remote []int) (typedComm, error) {
	tc := typedComm{name: "inter", c: ic, peers: remote}
	mine, err := ic.Local().Group().TranslateRanks(seq(0, ic.Size()), w.Group())
	if err != nil {
		return tc, err
	}
	for _, rootLow := range []bool{true, false} {
		if rootLow != low {
			for _, root := range ends(ic.RemoteSize()) {
				tc.roots = append(tc.roots, typedRoot{root, remote[root], roleRemote})
			}
			continue
		}
		for _, root := range ends(ic.Size()) {
			r := typedRoot{runtime.ProcNull, mine[root], roleIdle}
			if ic.Rank() == root {
				r.arg, r.role = runtime.Root, roleRoot
			}
			tc.roots = append(tc.roots, r)
		}
	}
	return tc, nil
}

// checkPairs compares bytes: a layout of int32 or float64 copies one extent apart may
// lay an int32 over half of a float64 (a NaN, which == never matches).
func checkPairs(what string, got, want []pair) error {
	g, _ := datatype.AsBytes(got)
	w, _ := datatype.AsBytes(want)
	if !bytes.Equal(g, w) {
		return fmt.Errorf("%s: got %v, want %v", what, got, want)
	}
	return nil
}

// checkBcastType: the root's buffer and the idle ranks' stay as they are, the others get
// the root's copies over their own buffer.
func checkBcastType(ctx context.Context, me int, tc typedComm, k typedKind, r typedRoot) error {
	n := pairsFor(k.t, k.count)
	buf, want := untouched(n), untouched(n)
	switch r.role {
	case roleRoot:
		buf, want = filled(me, n), filled(me, n)
	case roleRemote:
		want = laidOut(n, packedOf(filled(r.world, n), k.count, k.t), k.count, k.t)
	}
	if err := BcastType(ctx, tc.c, buf, k.count, k.t, r.arg); err != nil {
		return err
	}
	return checkPairs("bcast", buf, want)
}

// checkGatherType: the root gets each peer's copies in order; the idle ranks' buffers
// stay as they are.
func checkGatherType(ctx context.Context, me int, tc typedComm, k typedKind, r typedRoot) error {
	m, n := len(tc.peers), pairsFor(k.t, k.count)
	rn := pairsFor(k.t, k.count*m)
	send, recv, want := filled(me, n), untouched(rn), untouched(rn)
	if r.role == roleIdle {
		send = untouched(n)
	}
	if r.role == roleRoot {
		var all []byte
		for _, q := range tc.peers {
			all = append(all, packedOf(filled(q, n), k.count, k.t)...)
		}
		want = laidOut(rn, all, k.count*m, k.t)
	}
	if err := GatherType(ctx, tc.c, send, k.count, k.t, recv, k.count, k.t, r.arg); err != nil {
		return err
	}
	return checkPairs("gather recv", recv, want)
}

// checkScatterType: peer j gets the root's copies j*count to (j+1)*count-1; the root's
// send and the idle ranks' buffers stay as they are.
func checkScatterType(ctx context.Context, me, at int, tc typedComm, k typedKind, r typedRoot) error {
	m, n := len(tc.peers), pairsFor(k.t, k.count)
	sn := pairsFor(k.t, k.count*m)
	send, recv, want := untouched(sn), untouched(n), untouched(n)
	if r.role == roleRoot {
		send = filled(me, sn)
	}
	if r.role == roleRemote || r.role == roleRoot && !tc.c.IsInter() {
		// The root's send holds a block for each rank of this rank's group.
		g := tc.c.Size()
		all := packedOf(filled(r.world, pairsFor(k.t, k.count*g)), k.count*g, k.t)
		sz := len(all) / g
		want = laidOut(n, all[at*sz:(at+1)*sz], k.count, k.t)
	}
	if err := ScatterType(ctx, tc.c, send, k.count, k.t, recv, k.count, k.t, r.arg); err != nil {
		return err
	}
	if r.role == roleRoot {
		if err := checkPairs("scatter send at root", send, filled(me, sn)); err != nil {
			return err
		}
	}
	return checkPairs("scatter recv", recv, want)
}

// checkAllgatherAlltoallType: every rank gets each peer's copies, and from Alltoall its
// own block of each peer's.
func checkAllgatherAlltoallType(ctx context.Context, me, at int, tc typedComm, k typedKind) error {
	m, n := len(tc.peers), pairsFor(k.t, k.count)
	rn := pairsFor(k.t, k.count*m)
	recv := untouched(rn)
	var all []byte
	for _, q := range tc.peers {
		all = append(all, packedOf(filled(q, n), k.count, k.t)...)
	}
	if err := AllgatherType(ctx, tc.c, filled(me, n), k.count, k.t, recv, k.count, k.t); err != nil {
		return err
	}
	if err := checkPairs("allgather", recv, laidOut(rn, all, k.count*m, k.t)); err != nil {
		return err
	}
	recv = untouched(rn)
	all = all[:0]
	g := tc.c.Size() // each peer's send holds a block per rank of this rank's group
	for _, q := range tc.peers {
		theirs := packedOf(filled(q, pairsFor(k.t, k.count*g)), k.count*g, k.t)
		sz := len(theirs) / g
		all = append(all, theirs[at*sz:(at+1)*sz]...)
	}
	if err := AlltoallType(ctx, tc.c, filled(me, rn), k.count, k.t, recv, k.count, k.t); err != nil {
		return err
	}
	return checkPairs("alltoall", recv, laidOut(rn, all, k.count*m, k.t))
}

// TestTypedCommKinds runs BcastType, GatherType, ScatterType, AllgatherType and
// AlltoallType over contiguous, vector, indexed, struct and resized layouts on the
// World, on a split World, and on an intercommunicator with each group's first and last
// rank as the root. The root's own buffer and the buffers of the root's group's other
// ranks (runtime.ProcNull) must stay as they are.
func TestTypedCommKinds(t *testing.T) {
	forInterLayouts(t, func(ctx context.Context, w, ic *runtime.World, low bool, remote []int) error {
		kinds, err := typedKinds()
		if err != nil {
			return err
		}
		me, p := w.Rank(), w.Size()
		half, err := w.Split(ctx, me%2, me)
		if err != nil {
			return err
		}
		var halfPeers []int
		for q := me % 2; q < p; q += 2 {
			halfPeers = append(halfPeers, q)
		}
		inter, err := interComm(w, ic, low, remote)
		if err != nil {
			return err
		}
		comms := []typedComm{intraComm("world", w, seq(0, p)), intraComm("split", half, halfPeers), inter}
		for _, tc := range comms {
			at := tc.c.Rank() // this rank's block in the peers' buffers
			for _, k := range kinds {
				if pairsFor(k.t, k.count) == 0 || bytes.Equal(packedOf(filled(me, 3), k.count, k.t), packedOf(untouched(3), k.count, k.t)) {
					return fmt.Errorf("%s: the layout moves nothing", k.name)
				}
				for _, r := range tc.roots {
					what := fmt.Sprintf("%s, %s layout, root %d (arg %d) at World rank %d", tc.name, k.name, r.world, r.arg, me)
					if err := checkBcastType(ctx, me, tc, k, r); err != nil {
						return fmt.Errorf("%s: %w", what, err)
					}
					if err := checkGatherType(ctx, me, tc, k, r); err != nil {
						return fmt.Errorf("%s: %w", what, err)
					}
					if err := checkScatterType(ctx, me, at, tc, k, r); err != nil {
						return fmt.Errorf("%s: %w", what, err)
					}
				}
				if err := checkAllgatherAlltoallType(ctx, me, at, tc, k); err != nil {
					return fmt.Errorf("%s, %s layout at World rank %d: %w", tc.name, k.name, me, err)
				}
			}
		}
		return half.Free()
	})
}

// TestTypedInterMisuse: a nil buffer, which means in place on an intracommunicator, and a
// root argument outside MPI's three forms fail on an intercommunicator with
// runtime.ErrInvalid naming the rank; the next call works.
func TestTypedInterMisuse(t *testing.T) {
	interJob(t, 3, 1, interLayouts[0].opt, func(ctx context.Context, w, ic *runtime.World, low bool, remote []int) error {
		strct, err := datatype.FromStruct[pair]()
		if err != nil {
			return err
		}
		buf := make([]pair, 3*ic.RemoteSize())
		cases := []struct {
			name string
			err  error
		}{
			{"allgather nil send", AllgatherType[pair](ctx, ic, nil, 3, strct, buf, 3, strct)},
			{"alltoall nil send", AlltoallType[pair](ctx, ic, nil, 1, strct, buf, 1, strct)},
			{"bcast root out of range", BcastType(ctx, ic, buf, 1, strct, ic.RemoteSize())},
		}
		for _, c := range cases {
			if !errors.Is(c.err, runtime.ErrInvalid) {
				return fmt.Errorf("%s: %v, want ErrInvalid", c.name, c.err)
			}
			if want := fmt.Sprintf("rank %d of its local group", ic.Rank()); !bytes.Contains([]byte(c.err.Error()), []byte(want)) {
				return fmt.Errorf("%s: %v does not say %q", c.name, c.err, want)
			}
		}
		return checkAllgatherAlltoallType(ctx, w.Rank(), ic.Rank(), typedComm{c: ic, peers: remote}, typedKind{"struct", strct, 3})
	})
}
