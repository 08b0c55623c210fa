//go:build cgo

package mpich

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Partitioned communication (MPI_Psend_init, MPI_Precv_init, MPI_Pready and its range
// and list forms, MPI_Parrived). Requests start with MPI_Start or MPI_Startall and
// complete with MPI_Wait, MPI_Test and the set calls (p2p.go dispatches to partReq).
//
// The messages travel on the communicator's sibling World (substrate.Sibling), so they
// never match the program's own receives. A send request announces itself at init with
// one control message (partCtrlTag): its tag, its partitioning and the tags of its
// partitions. The receiver matches the announcements from a source, in their order, to
// its receive requests of the same tag, in init order, as MPI matches partitioned
// operations. Each partition is then one message, sent at MPI_Pready on its own tag,
// so MPI_Parrived reports a partition once its messages have arrived. Sender and
// receiver may partition differently: a receive partition has arrived once every send
// partition that overlaps its bytes has.
//
// The sibling also carries package collectives' messages, whose tags run over the
// whole tag space with each call's number. A partition message takes a tag of
// [partTagBase, partCtrlTag]; a collective call on the same communicator reaches that
// range after about 2^30 calls of one kind, and only then could two messages meet.

const (
	partCtrlTag  = runtime.MaxTag - 64
	partTagBase  = 1 << 30
	partTagSpan  = partCtrlTag - partTagBase
	partCtrlSize = 4 + 4 + 8 + 4 // user tag, partitions, bytes per partition, first data tag
)

// partKey names the announcements of one source on one communicator.
type partKey struct {
	w   *runtime.World
	src int
}

// partPeer is the receive side's state for one source on one communicator: the
// announcements taken and not matched, and the receive requests not matched yet, in
// init order. pump holds mu while it receives.
type partPeer struct {
	mu      sync.Mutex
	ads     []partAd
	waiting []*partReq
}

// A partAd is a send request's announcement.
type partAd struct {
	tag, parts int
	bytes      int64 // per partition
	first      int   // the tag of partition 0
}

var partState struct {
	mu    sync.Mutex
	peers map[partKey]*partPeer
	next  map[partKey]int // per destination: the next data tag of a send request, from partTagBase
}

// A partReq is a partitioned request. The program's data is parts partitions of
// count copies of t; packed holds them in bytes (the program's buffer itself for a
// contiguous t). mu guards the fields below it: Pready may come from any thread.
type partReq struct {
	send bool
	partSpec

	mu       sync.Mutex
	active   bool
	msgs     []*runtime.Request // this round's messages: a send's by partition, a receive's by send partition
	partSend                    // the send side
	partRecv                    // the receive side
	partEnd                     // the round's end
}

// A partSpec is what the init call fixed: the peer, the partitions and the buffer.
type partSpec struct {
	sib    *runtime.World
	peer   int // in the communicator; runtime.ProcNull for MPI_PROC_NULL
	tag    int
	parts  int
	count  int
	t      *dtype
	base   unsafe.Pointer // the program's buffer
	packed []byte
	pbytes int64 // bytes of one partition
	key    partKey
}

// partSend is a send's round: the first data tag, which partitions are ready, and the
// announcement until it has completed.
type partSend struct {
	first    int
	ready    []bool
	nready   int
	allReady chan struct{} // closed once every partition is ready (this round)
	ctrl     *runtime.Request
}

// partRecv is a receive's round: the matched announcement, which send partitions have
// arrived, and which receive partitions were unpacked.
type partRecv struct {
	ad       *partAd
	arrived  []bool
	unpacked []bool
	posted   bool
	err      error
}

// partEnd is the round's end, once complete has seen it: later calls give it again.
type partEnd struct {
	finished bool
	fst      runtime.Status
	ferr     error
}

// initPart makes the request of MPI_Psend_init (send) or MPI_Precv_init.
func initPart(send bool, buf unsafe.Pointer, parts, count int, d Datatype, peer, tag int, c Comm, h Info, req *Request) error {
	w, err := worldOf(c)
	if err != nil {
		return err
	}
	t, err := typeOf(d)
	if err != nil {
		return err
	}
	if parts < 1 {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("%d partitions: want at least 1", parts))
	}
	if parts > partTagSpan {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("%d partitions: gorma takes at most %d", parts, partTagSpan))
	}
	if count < 0 {
		return errCount(count)
	}
	if h != mpi_INFO_NULL {
		if _, err := infoOf(h); err != nil {
			return err
		}
	}
	if tag < 0 || tag > runtime.MaxTag {
		return mpiErr(mpi_ERR_TAG, fmt.Sprintf("tag %d is not in [0, MPI_TAG_UB] (partitioned calls take no MPI_ANY_TAG)", tag))
	}
	if peer == mpi_ANY_SOURCE {
		return mpiErr(mpi_ERR_RANK, "MPI_Precv_init takes no MPI_ANY_SOURCE: name the sending rank")
	}
	if peer, err = dest(w, peer); err != nil {
		return err
	}
	total := parts * count
	if total/parts != count {
		return errCount(count)
	}
	b, err := spanOf(buf, total, t)
	if err != nil {
		return err
	}
	p := &partReq{send: send, partSpec: partSpec{peer: peer, tag: tag, parts: parts, count: count, t: t, base: buf,
		pbytes: int64(count) * int64(t.size)}}
	if t.contig {
		p.packed = b
	} else {
		p.packed = make([]byte, int64(parts)*p.pbytes)
	}
	if peer != runtime.ProcNull {
		if p.sib, err = substrate.Sibling(w); err != nil {
			return err
		}
		p.key = partKey{w, peer}
		if send {
			if err := p.announce(); err != nil {
				return err
			}
		} else {
			partState.mu.Lock()
			pp := partPeerOf(p.key)
			partState.mu.Unlock()
			pp.mu.Lock()
			pp.waiting = append(pp.waiting, p)
			pp.mu.Unlock()
		}
	}
	addPersistent(&request{part: p}, req)
	return nil
}

// partPeerOf returns key's receive state; partState.mu is held.
func partPeerOf(key partKey) *partPeer {
	if partState.peers == nil {
		partState.peers = map[partKey]*partPeer{}
		partState.next = map[partKey]int{}
	}
	pp := partState.peers[key]
	if pp == nil {
		pp = &partPeer{}
		partState.peers[key] = pp
	}
	return pp
}

// announce takes the send request's data tags and sends its announcement.
func (p *partReq) announce() error {
	partState.mu.Lock()
	partPeerOf(p.key)
	n := partState.next[p.key]
	if n+p.parts > partTagSpan {
		n = 0 // the tags wrap; a request 2^30 partitions older shares them
	}
	partState.next[p.key] = n + p.parts
	partState.mu.Unlock()
	p.first = partTagBase + n
	msg := make([]byte, 0, partCtrlSize)
	msg = binary.LittleEndian.AppendUint32(msg, uint32(p.tag))
	msg = binary.LittleEndian.AppendUint32(msg, uint32(p.parts))
	msg = binary.LittleEndian.AppendUint64(msg, uint64(p.pbytes))
	msg = binary.LittleEndian.AppendUint32(msg, uint32(p.first))
	r, err := runtime.Isend(p.sib, msg, p.peer, partCtrlTag)
	p.ctrl = r
	return err
}

// pump takes the announcements that have come from pp's source, waiting for one if
// block and none has come, and matches them to the receive requests waiting. It
// returns when p is matched or, if !block, when no announcement is left.
func (pp *partPeer) pump(ctx context.Context, p *partReq, block bool) error {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	for {
		pp.match()
		if p.matched() {
			return nil
		}
		ok, _, err := runtime.Iprobe(p.sib, p.peer, partCtrlTag)
		if err != nil {
			return err
		}
		if !ok && !block {
			return nil
		}
		var buf [partCtrlSize]byte
		if _, err := runtime.Recv(ctx, p.sib, buf[:], p.peer, partCtrlTag); err != nil {
			return err
		}
		pp.ads = append(pp.ads, partAd{
			tag:   int(binary.LittleEndian.Uint32(buf[0:])),
			parts: int(binary.LittleEndian.Uint32(buf[4:])),
			bytes: int64(binary.LittleEndian.Uint64(buf[8:])),
			first: int(binary.LittleEndian.Uint32(buf[16:])),
		})
	}
}

// match gives each waiting receive request, in init order, the first announcement of
// its tag. pp.mu is held.
func (pp *partPeer) match() {
	for i := 0; i < len(pp.waiting); {
		r := pp.waiting[i]
		j := 0
		for j < len(pp.ads) && pp.ads[j].tag != r.tag {
			j++
		}
		if j == len(pp.ads) {
			i++
			continue
		}
		ad := pp.ads[j]
		pp.ads = append(pp.ads[:j], pp.ads[j+1:]...)
		pp.waiting = append(pp.waiting[:i], pp.waiting[i+1:]...)
		r.mu.Lock()
		r.ad = &ad
		r.mu.Unlock()
	}
}

func (p *partReq) matched() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ad != nil
}

// start begins a round: a send waits for MPI_Pready; a receive posts its receives
// once its announcement has come.
func (p *partReq) start() error {
	p.mu.Lock()
	p.active, p.err, p.posted, p.finished = true, nil, false, false
	p.ready = make([]bool, p.parts)
	p.nready = 0
	p.allReady = make(chan struct{})
	if p.peer == runtime.ProcNull {
		p.nready = p.parts
		close(p.allReady)
	}
	p.msgs, p.arrived, p.unpacked = nil, make([]bool, p.parts), make([]bool, p.parts)
	p.mu.Unlock()
	if !p.send && p.peer != runtime.ProcNull {
		return p.progress(bg, false)
	}
	return nil
}

// progress matches a receive request and posts its receives (waiting for the
// announcement if block).
func (p *partReq) progress(ctx context.Context, block bool) error {
	if !p.matched() {
		partState.mu.Lock()
		pp := partPeerOf(p.key)
		partState.mu.Unlock()
		if err := pp.pump(ctx, p, block); err != nil {
			return err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ad == nil || p.posted {
		return nil
	}
	ad := p.ad
	if int64(ad.parts)*ad.bytes != int64(p.parts)*p.pbytes {
		p.err = mpiErr(mpi_ERR_TRUNCATE, fmt.Sprintf("the partitioned send of tag %d carries %d partitions of %d bytes, this receive takes %d of %d: the totals must match",
			p.tag, ad.parts, ad.bytes, p.parts, p.pbytes))
		p.posted = true
		return nil
	}
	p.msgs = make([]*runtime.Request, ad.parts)
	for i := range p.msgs {
		b := p.packed[int64(i)*ad.bytes : int64(i+1)*ad.bytes]
		r, err := runtime.Irecv(p.sib, b, p.peer, ad.first+i)
		if err != nil {
			return err
		}
		p.msgs[i] = r
	}
	p.posted = true
	return nil
}

// checkPart checks partition i of p.
func (p *partReq) checkPart(i int) error {
	if i < 0 || i >= p.parts {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("partition %d is not in [0, %d)", i, p.parts))
	}
	return nil
}

// part returns the program's bytes of partition i.
func (p *partReq) part(i int) []byte {
	at := unsafe.Add(p.base, i*p.count*p.t.extent)
	b, _ := spanOf(at, p.count, p.t) // initPart checked the whole span
	return b
}

// markReady sends partition i of an active send request.
func (p *partReq) markReady(i int) error {
	if !p.send {
		return mpiErr(mpi_ERR_REQUEST, "MPI_Pready takes a partitioned send request (MPI_Psend_init)")
	}
	if err := p.checkPart(i); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.active {
		return mpiErr(mpi_ERR_REQUEST, "the request is not active: call MPI_Start before MPI_Pready")
	}
	if p.ready[i] {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("partition %d was marked ready already in this round", i))
	}
	if p.peer != runtime.ProcNull {
		b := p.packed[int64(i)*p.pbytes : int64(i+1)*p.pbytes]
		if !p.t.contig {
			if _, err := datatype.Pack(b, p.part(i), p.count, p.t.layout); err != nil {
				return err
			}
		}
		r, err := runtime.Isend(p.sib, b, p.peer, p.first+i)
		if err != nil {
			return err
		}
		if p.msgs == nil {
			p.msgs = make([]*runtime.Request, p.parts)
		}
		p.msgs[i] = r
	}
	p.ready[i] = true
	p.nready++
	if p.nready == p.parts {
		close(p.allReady)
	}
	return nil
}

// arrivedLocked reports whether receive partition j has arrived, testing the
// messages of the send partitions over its bytes and unpacking it once they have.
// p.mu is held.
func (p *partReq) arrivedLocked(j int) (bool, error) {
	if p.unpacked[j] {
		return true, nil
	}
	if !p.posted || p.err != nil {
		return p.err != nil, p.err
	}
	lo, hi := 0, len(p.msgs)
	if b := p.ad.bytes; b > 0 {
		lo, hi = int(int64(j)*p.pbytes/b), int((int64(j+1)*p.pbytes+b-1)/b)
	}
	for i := lo; i < hi; i++ {
		if p.arrived[i] {
			continue
		}
		done, _, err := p.msgs[i].Test()
		if err != nil {
			return false, err
		}
		if !done {
			return false, nil
		}
		p.arrived[i] = true
	}
	if !p.t.contig {
		src := p.packed[int64(j)*p.pbytes : int64(j+1)*p.pbytes]
		if _, err := datatype.Unpack(p.part(j), src, p.count, p.t.layout); err != nil {
			return false, err
		}
	}
	p.unpacked[j] = true
	return true, nil
}

// complete tests or waits for (block) the round's end: every partition sent, or
// received and unpacked.
func (p *partReq) complete(ctx context.Context, block bool) (bool, runtime.Status, error) {
	p.mu.Lock()
	if p.finished {
		p.mu.Unlock()
		return true, p.fst, p.ferr
	}
	p.mu.Unlock()
	done, st, err := p.round(ctx, block)
	if done {
		p.mu.Lock()
		p.finished, p.fst, p.ferr = true, st, err
		p.mu.Unlock()
	}
	return done, st, err
}

// round is complete's work.
func (p *partReq) round(ctx context.Context, block bool) (bool, runtime.Status, error) {
	st := noStatus
	if p.peer == runtime.ProcNull {
		st.Source, st.Tag = runtime.ProcNull, runtime.AnyTag
		return true, st, nil
	}
	if p.send {
		if block {
			select {
			case <-p.allReady:
			case <-ctx.Done():
				return false, st, ctx.Err()
			}
		}
		p.mu.Lock()
		rs, n := p.msgs, p.nready
		if p.ctrl != nil {
			rs = append(slices.Clip(rs), p.ctrl) // the announcement, until it has completed once
		}
		p.mu.Unlock()
		if n < p.parts {
			return false, st, nil
		}
		for _, r := range rs {
			if r == nil {
				continue
			}
			if block {
				if _, err := r.Wait(ctx); err != nil {
					return false, st, err
				}
			} else if done, _, err := r.Test(); err != nil || !done {
				return false, st, err
			}
		}
		p.mu.Lock()
		p.ctrl = nil
		p.mu.Unlock()
		return true, st, nil
	}
	if err := p.progress(ctx, block); err != nil {
		return false, st, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.posted {
		return false, st, nil
	}
	if p.err == nil && block {
		for i, r := range p.msgs {
			if p.arrived[i] {
				continue
			}
			p.mu.Unlock()
			_, err := r.Wait(ctx)
			p.mu.Lock()
			if err != nil {
				return false, st, err
			}
		}
	}
	for j := range p.parts {
		done, err := p.arrivedLocked(j)
		if err != nil {
			return true, st, err
		}
		if !done {
			return false, st, nil
		}
	}
	st.Source, st.Tag, st.Bytes = p.peer, p.tag, int(int64(p.parts)*p.pbytes)
	return true, st, nil
}

// settled ends the round, whose completion was taken.
func (p *partReq) settled() {
	p.mu.Lock()
	p.active = false
	p.mu.Unlock()
}

// partOf returns the partitioned request of handle h.
func partOf(h Request) (*request, *partReq, error) {
	r, ok := reqs.get(int32(h))
	if !ok {
		return nil, nil, errHandle("request", int32(h))
	}
	if r.part == nil {
		return nil, nil, mpiErr(mpi_ERR_REQUEST, fmt.Sprintf("request %#x is not a partitioned request (MPI_Psend_init, MPI_Precv_init)", uint32(h)))
	}
	return r, r.part, nil
}

// doPsendInit is MPI_Psend_init. info's hints are accepted and none is acted on.
func doPsendInit(buf unsafe.Pointer, parts, count int, d Datatype, to, tag int, c Comm, h Info, req *Request) error {
	return initPart(true, buf, parts, count, d, to, tag, c, h, req)
}

// doPrecvInit is MPI_Precv_init. info's hints are accepted and none is acted on.
func doPrecvInit(buf unsafe.Pointer, parts, count int, d Datatype, from, tag int, c Comm, h Info, req *Request) error {
	return initPart(false, buf, parts, count, d, from, tag, c, h, req)
}

// doPready is MPI_Pready.
func doPready(i int, h Request) error {
	_, p, err := partOf(h)
	if err != nil {
		return err
	}
	return p.markReady(i)
}

// doPreadyRange is MPI_Pready_range: partitions lo to hi, both included.
func doPreadyRange(lo, hi int, h Request) error {
	_, p, err := partOf(h)
	if err != nil {
		return err
	}
	if lo > hi {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("partition range [%d, %d] is empty: partition_low must not exceed partition_high", lo, hi))
	}
	if err := p.checkPart(lo); err != nil {
		return err
	}
	if err := p.checkPart(hi); err != nil {
		return err
	}
	for i := lo; i <= hi; i++ {
		if err := p.markReady(i); err != nil {
			return err
		}
	}
	return nil
}

// doPreadyList is MPI_Pready_list.
func doPreadyList(n int, list *int32, h Request) error {
	_, p, err := partOf(h)
	if err != nil {
		return err
	}
	if n < 0 {
		return errCount(n)
	}
	if n == 0 {
		return nil
	}
	ps := unsafe.Slice(list, n)
	for _, i := range ps {
		if err := p.checkPart(int(i)); err != nil {
			return err
		}
	}
	for _, i := range ps {
		if err := p.markReady(int(i)); err != nil {
			return err
		}
	}
	return nil
}

// doParrived is MPI_Parrived: flag is 1 once partition i of the receive request has
// arrived in the program's buffer. An inactive request's partitions have all arrived.
func doParrived(h Request, i int, flag *int32) error {
	r, p, err := partOf(h)
	if err != nil {
		return err
	}
	if p.send {
		return mpiErr(mpi_ERR_REQUEST, "MPI_Parrived takes a partitioned receive request (MPI_Precv_init)")
	}
	if err := p.checkPart(i); err != nil {
		return err
	}
	if r.inactive || r.held != nil || p.peer == runtime.ProcNull {
		*flag = 1
		return nil
	}
	if err := p.progress(bg, false); err != nil {
		return err
	}
	p.mu.Lock()
	done, err := p.arrivedLocked(i)
	p.mu.Unlock()
	*flag = b2i(done)
	return err
}

// free drops the request: a receive not yet matched leaves its source's queue.
func (p *partReq) free() {
	if p.send || p.peer == runtime.ProcNull {
		return
	}
	partState.mu.Lock()
	pp := partPeerOf(p.key)
	partState.mu.Unlock()
	pp.mu.Lock()
	defer pp.mu.Unlock()
	for i, r := range pp.waiting {
		if r == p {
			pp.waiting = append(pp.waiting[:i], pp.waiting[i+1:]...)
			return
		}
	}
}
