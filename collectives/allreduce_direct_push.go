package collectives

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// The push form of allreduceDirect, for groups whose members all reach each other
// without zero copy (substrate.ReachZeroCopy absent: tcp, different hosts) and blocks whose
// segments are at most pushMaxSegment: the data of both rounds goes as RDMA writes
// straight into the receivers' scratch, each segment followed by an 8-byte note on the
// same connection, instead of as rendezvous messages.
//
// A rendezvous message over such a pair waits for two frames before its data moves: the
// offer, then the receiver's read request, which the sender's process must be scheduled
// to serve. On loaded links each frame also waits behind the data already queued
// (milliseconds on 1 Gbit/s links), and with more ranks than cores the sender may not run
// for a while. A write moves at once, and the note, which the connection delivers after
// the write's data, tells the receiver the segment is in. scripts/netns-allreduce.sh
// (4 network-namespace hosts; RATE=1gbit shapes the links) measures the gain against the
// bandwidth bound, with PPH=1 (direct) and PPH=2 (lanes, whose step across hosts is this
// algorithm on 1 MiB segments). Segments longer than pushMaxSegment gain nothing there,
// so they keep the rendezvous.
//
// Scratch: each member holds one region of 2(p-1) slots of the largest block, registered
// for remote writes, set up at the first call that needs it (or a larger one) by an
// exchange of descriptions, and kept with the group's state. Slot k-1 of the first half
// receives the contribution of the member k ranks before this one, slot k-1 of the second
// half its finished block. A slot is written again only in a later call, and every member
// has read it by then. A member starts call k+1 only after it received every other
// member's finished block of call k, which each sent after combining the contributions in
// its first-half slots. It writes second-half slots in call k+1 only after receiving the
// first-round contributions of call k+1, which their senders made after copying out their
// second-half slots of call k.
const (
	pushMinBlock   = 64 << 10
	pushMaxSegment = 1 << 20
)

// pushMinBlockBytes is pushMinBlock; tests lower it to push small vectors.
var pushMinBlockBytes = pushMinBlock

// pushable reports whether allreduceDirect on blocks of at most bmaxBytes in segs
// segments takes the push form. Every member decides alike: from the call's count, the
// scratch policy (the push form keeps its scratch, so ScratchFresh keeps the rendezvous)
// and the transports between all members (ReachBetween, the same at every rank).
func pushable(c *call, bmaxBytes, segs int) bool {
	if bmaxBytes < pushMinBlockBytes || bmaxBytes > pushMaxSegment*segs {
		return false
	}
	if fresh, err := freshScratch(); err != nil || fresh {
		return false
	}
	s := c.s
	if s.noZeroCopy == 0 {
		s.noZeroCopy = 1
		for a := 0; a < s.size && s.noZeroCopy == 1; a++ {
			for b := 0; b < s.size; b++ {
				if a != b && substrate.ReachBetween(s.comm, s.world(a), s.world(b)).Has(substrate.ReachZeroCopy) {
					s.noZeroCopy = -1
					break
				}
			}
		}
	}
	return s.noZeroCopy == 1
}

// pushSetup returns the group's push scratch with slots of at least slot bytes, setting
// it up (again) if needed.
func pushSetup(c *call, slot int) (*pushScratch, error) {
	s := c.s
	if ps := s.push; ps != nil && !ps.broken && ps.slot >= slot {
		return ps, nil
	}
	p, r, w := s.size, s.rank, s.comm
	slot = (slot + 63) &^ 63
	reg, err := substrate.AllocRegion(w, 2*(p-1)*slot)
	if err != nil {
		return nil, fmt.Errorf("push scratch: %w", err)
	}
	// Until the exchange below completes, peers may still write into the old scratch;
	// the new one is kept as broken if the exchange fails, as peers may have attached it.
	ps := &pushScratch{region: reg, remotes: make([]*substrate.Remote, p), slot: slot, rs: substrate.NewCounter(w),
		ag: substrate.NewCounter(w), broken: true, prev: s.push}
	s.push = ps
	desc := reg.AppendDesc(nil)
	descs := make([][]byte, p)
	for k := 1; k < p; k++ {
		from := (r - k + p) % p
		descs[from] = make([]byte, 2*len(desc)+64)
		if err := runtime.IrecvWith(c.Req(k-1), w, descs[from], s.world(from), c.tag); err != nil {
			return nil, fmt.Errorf("rank %d receiving a scratch description from rank %d: %w", r, from, err)
		}
	}
	for k := 1; k < p; k++ {
		if err := postSend(c, c.Req(p-1+k-1), desc, (r+k)%p); err != nil {
			return nil, err
		}
	}
	for k := 1; k < p; k++ {
		from := (r - k + p) % p
		st, err := c.Req(k - 1).Wait(c.ctx)
		if err != nil {
			return nil, fmt.Errorf("rank %d receiving a scratch description from rank %d: %w", r, from, err)
		}
		rm, err := substrate.Attach(w, s.world(from), descs[from][:st.Count])
		if err != nil {
			return nil, fmt.Errorf("rank %d attaching rank %d's scratch: %w", r, from, err)
		}
		ps.remotes[from] = rm
		// Members size their slots alike when the calls match.
		if rm.Size() != len(reg.Bytes()) {
			return nil, fmt.Errorf("%w: rank %d's scratch has %d bytes, rank %d's %d (do all ranks pass the same counts?)",
				ErrMismatch, from, rm.Size(), r, len(reg.Bytes()))
		}
	}
	if err := waitSends(c, p-1, p, r); err != nil {
		return nil, err
	}
	// Each peer sent its description after its last write into the older scratch, on
	// the same connection: those writes have landed, and nothing writes there again.
	ps.prev.drop()
	ps.prev, ps.broken = nil, false
	return ps, nil
}

// allreduceDirectPush is allreduceDirect in its push form (see above), in segs segments
// per block as allreduceDirectPipelined: a member combines segment s as soon as every
// contribution to it is in and writes the finished segment on at once. Requests: for the
// member k ranks away and segment s, index (k-1)·segs + s in four ranges of (p-1)·segs:
// first-round notes in, first-round notes out, second-round notes in, second-round notes
// out. A note carries the segment's element count, checked against the receiver's.
func allreduceDirectPush[T runtime.Elem](c *call, src, buf []T, op Op[T], segs int) error {
	p, r, n, es := c.s.size, c.s.rank, len(buf), elemSize[T]()
	bmax := (n + p - 1) / p
	ps, err := pushSetup(c, bmax*es)
	if err != nil {
		return err
	}
	mem := ps.region.Bytes()
	per := ps.slot / es // elements of a slot
	rsIn := unsafe.Slice((*T)(unsafe.Pointer(&mem[0])), (p-1)*per)
	agIn := unsafe.Slice((*T)(unsafe.Pointer(&mem[(p-1)*ps.slot])), (p-1)*per)
	lo, hi := block(n, p, r)
	own := buf[lo:hi]
	span := (p - 1) * segs
	if len(ps.notes) < 4*span {
		ps.notes = make([][8]byte, 4*span)
	}
	rsRecv, rsSend, agRecv, agSend := 0, span, 2*span, 3*span
	idx := func(k, s int) int { return (k-1)*segs + s }
	for _, first := range []int{rsRecv, agRecv} {
		for k := 1; k < p; k++ {
			for s := range segs {
				i := first + idx(k, s)
				if err := postRecv(c, c.Req(i), ps.notes[i][:], (r-k+p)%p); err != nil {
					return err
				}
			}
		}
	}
	push := func(ctr *substrate.Counter, i, k, half, a int, seg []T) error {
		d := (r + k) % p
		off := uint64(half*(p-1)*ps.slot + (k-1)*ps.slot + a*es)
		if err := ps.remotes[d].Write(ctr, off, bytesOf(seg)); err != nil {
			return fmt.Errorf("rank %d writing %d elements to rank %d: %w", r, len(seg), d, err)
		}
		binary.LittleEndian.PutUint64(ps.notes[i][:], uint64(len(seg)))
		return postSend(c, c.Req(i), ps.notes[i][:], d)
	}
	note := func(i, from, want int) error {
		st, err := c.Req(i).Wait(c.ctx)
		if err == nil && st.Count == 8 {
			st.Count = int(binary.LittleEndian.Uint64(ps.notes[i][:]))
		}
		return c.checkStatus(st, err, from, want)
	}
	for k := 1; k < p; k++ {
		dlo, dhi := block(n, p, (r+k)%p)
		for s := range segs {
			a, b := block(dhi-dlo, segs, s)
			if err := push(ps.rs, rsSend+idx(k, s), k, 0, a, src[dlo+a:dlo+b]); err != nil {
				return err
			}
		}
	}
	for s := range segs {
		a, b := block(hi-lo, segs, s)
		for k := 1; k < p; k++ {
			if err := note(rsRecv+idx(k, s), (r-k+p)%p, b-a); err != nil {
				return err
			}
		}
		combineDirect(op, own, src[lo:hi], rsIn, per, p, a, b)
		for k := 1; k < p; k++ {
			if err := push(ps.ag, agSend+idx(k, s), k, 1, a, own[a:b]); err != nil {
				return err
			}
		}
	}
	// In place, the second round's blocks land where the first round's writes read.
	if err := ps.rs.Wait(c.ctx); err != nil {
		return fmt.Errorf("rank %d writing its contributions: %w", r, err)
	}
	for k := 1; k < p; k++ {
		from := (r - k + p) % p
		flo, fhi := block(n, p, from)
		for s := range segs {
			a, b := block(fhi-flo, segs, s)
			if err := note(agRecv+idx(k, s), from, b-a); err != nil {
				return err
			}
			copy(buf[flo+a:flo+b], agIn[(k-1)*per+a:(k-1)*per+b])
		}
	}
	if err := ps.ag.Wait(c.ctx); err != nil {
		return fmt.Errorf("rank %d writing its block: %w", r, err)
	}
	for _, first := range []int{rsSend, agSend} {
		for k := 1; k < p; k++ {
			for s := range segs {
				if _, err := c.Req(first + idx(k, s)).Wait(c.ctx); err != nil {
					return fmt.Errorf("rank %d sending to rank %d: %w", r, (r+k)%p, err)
				}
			}
		}
	}
	return nil
}
