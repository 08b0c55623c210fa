package runtime

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/datatype"
)

// Layout offers: the rendezvous of a non-contiguous layout between two ranks of one host.
//
// A SendType or SendrecvType may offer the layout itself rather than a packed copy of
// it. That takes a layout that is not one run, longer than the peer's eager limit, to a
// connected peer whose memory the ranks may read (peer.cma). msgRTSL then carries
// the address of the send buffer in the sender's process and the layout's blocks as
// strided runs (datatype.Run, at most the few that fit a message slot). The receiver
// reads those runs with process_vm_readv straight into its receive buffer, iovecs on
// both sides: into its own layout's runs when the receive is typed (RecvType, IrecvType,
// SendrecvType) and its layout has at most maxLocalRuns of them, else into its
// contiguous buffer (a plain receive's, or a typed receive's pooled one, unpacked as for
// any message). Then it answers FIN, as for any offer. Some layouts are packed: one to
// tcp peers, a small one, one of too many runs or of short blocks, and IsendType's
// (whose buffer is the caller's again at once). A matrix column of 8-byte elements packs
// faster than the kernel reads its blocks one by one (minOfferBlock). A receive layout
// of short blocks (minLocalBlock) is read into the pooled buffer and unpacked.
//
// The offer names raw addresses, not a registered key: only the sender's own memory is
// at stake, the receiver reads it only between RTS and FIN (the send's Request holds
// the buffer until FIN), and an address the sender got wrong fails the read (EFAULT),
// which fails the peer, as a refused RDMA read does. The sender still registers the
// bytes the runs cover through the registration cache, as a contiguous offer's buffer:
// the shm provider then backs a large buffer with huge pages (transport/verbs/shm
// huge.go), which saves process_vm_readv most of its page walks.

const (
	maxOfferRuns = 256  // runs a layout offer carries at most (a message slot bounds it too)
	maxLocalRuns = 4096 // runs of a receive layout read into directly, at most
	// The kernel pins the sender's pages once per remote iovec, a cost of the order of a
	// page's copy, and walks the receiver's iovecs at a few tens of nanoseconds each:
	// below these mean block lengths packing is the cheaper (BenchmarkReadRuns).
	minOfferBlock = 4096 // bytes a send layout's blocks hold on average, at least
	minLocalBlock = 512  // bytes a receive layout's blocks hold on average, at least
	iovBatch      = 1024 // iovecs per process_vm_readv on each side (the kernel's IOV_MAX)
	runLen        = 32   // an encoded run: off u64, len u64, count u64, stride i64
	offerLen      = hdrLen + 32
)

// layIO is a typed call's layout on the rendezvous path: the runs a send offers, or
// those a receive is read into. It belongs to the call that made it; the Request refers
// to it (Request.lay) until it completes.
type layIO struct {
	runs   []datatype.Run
	base   []byte // the buffer the runs' offsets index
	lo, hi int    // send: the bytes of base the runs cover
	size   int    // the layout's packed bytes
	direct bool   // receive: a layout offer was read into runs (nothing to unpack)
}

var layPool = sync.Pool{New: func() any { return new(layIO) }}

// layoutReads counts the layout offers this process read straight into their receive
// buffers (tests check that the path is taken).
var layoutReads atomic.Int64

// newLay returns a layIO of l's runs, or nil when l needs more than most of them or its
// blocks hold fewer than minBlock bytes on average.
func newLay(l *datatype.Laid, most, minBlock int) *layIO {
	lay := layPool.Get().(*layIO)
	runs, ok := l.Runs(lay.runs[:0], most)
	lay.runs = runs
	blocks, lo, hi := 0, len(l.Bytes()), 0
	for _, r := range runs {
		blocks += r.Count
		first, last := r.Off, r.Off+(r.Count-1)*r.Stride
		lo, hi = min(lo, first, last), max(hi, first+r.Len, last+r.Len)
	}
	if !ok || blocks == 0 || l.Size()/blocks < minBlock {
		putLay(lay)
		return nil
	}
	lay.lo, lay.hi = lo, hi
	lay.base, lay.size, lay.direct = l.Bytes(), l.Size(), false
	return lay
}

func putLay(lay *layIO) {
	if lay == nil {
		return
	}
	lay.base = nil
	if cap(lay.runs) > maxLocalRuns {
		lay.runs = nil
	}
	layPool.Put(lay)
}

// offerLayLocked returns the layIO of a layout offer of l to job rank dest, or nil when
// the message goes packed.
func (v *rendezvous) offerLayLocked(dest int, l *datatype.Laid) *layIO {
	e := v.e
	if dest == e.rank || dest < 0 || dest >= len(e.links.peers) {
		return nil
	}
	p := e.links.peers[dest]
	if p == nil || !p.ready || p.failed != nil || !p.cma || l.Size() <= p.eagerMax {
		return nil
	}
	if most := min(maxOfferRuns, (p.txSize-offerLen)/runLen); most >= 1 {
		return newLay(l, most, minOfferBlock)
	}
	return nil
}

// recvLay returns the layIO a typed receive of l is read into, or nil when l is too
// small for a rendezvous (at most eagerSHM bytes), has too many runs or too short blocks.
func recvLay(l *datatype.Laid, eagerSHM int) *layIO {
	if l.Size() <= eagerSHM {
		return nil
	}
	return newLay(l, maxLocalRuns, minLocalBlock)
}

// sendLaid sends the layout l as a layout offer when it can (see offerLayLocked), and
// reports whether it did, with the send's error; it leaves every other case, errors of
// the arguments included, to SendType's packing path.
func (w *World) sendLaid(ctx context.Context, l *datatype.Laid, dest, tag int) (bool, error) {
	e := w.e
	if l.Size() <= e.cfg.eagerSHM {
		return false, nil
	}
	d, err := destArg(w, dest)
	if err != nil {
		return false, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.checkArgsLocked(d, tag, false) != nil {
		return false, nil
	}
	lay := e.rndv.offerLayLocked(d, l)
	if lay == nil {
		return false, nil
	}
	r := e.rndv.startOfferLocked(w.ctx, lay, d, tag)
	err = e.finishSendLocked(ctx, r)
	if err == nil || ctx.Err() == nil {
		putLay(lay) // else the offer may still be read: leave it to the collector
	}
	e.poll.handoffLocked()
	return true, withOp("send", err)
}

// startOfferLocked starts the layout offer of lay to dest, a connected peer
// (offerLayLocked), and returns its engine Request.
func (v *rendezvous) startOfferLocked(ctxID uint16, lay *layIO, dest, tag int) *Request {
	e := v.e
	r := e.match.newRequestLocked(e, reqSend)
	r.ctx, r.peer, r.tag, r.buf, r.esize, r.lay = ctxID, dest, tag, lay.base[lay.lo:lay.hi], 1, lay
	t := e.obs.numberLocked(ctxID, dest, lay.size)
	v.offerLocked(e.links.peers[dest], r)
	e.obs.sentLocked(t, ctxID, dest, tag, lay.size)
	return r
}

// recvLaid is Recv into buf (a typed receive's pooled buffer) with lay, the receive's
// layout, on the Request: a layout offer is read into lay's runs. It reports false,
// having done nothing, for the arguments that Recv handles (ProcNull, errors).
func (w *World) recvLaid(ctx context.Context, buf []byte, lay *layIO, src, tag int) (Status, bool, error) {
	s, err := srcArg(w, src)
	if err != nil {
		return Status{}, false, nil
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.checkArgsLocked(s, tag, true) != nil {
		return Status{}, false, nil
	}
	r := e.match.newRequestLocked(e, reqRecv)
	r.ctx, r.peer, r.tag, r.buf, r.esize, r.anyFail, r.lay = w.ctx, s, tag, buf, 1, w.sibling, lay
	e.receiveLocked(r)
	st, err := e.finishRecvLocked(ctx, r, nil)
	e.poll.handoffLocked()
	return outStatus(w, st), true, withOp("recv", err)
}

// irecvLaid is Irecv into buf with lay on the Request, as recvLaid; r is new.
func (w *World) irecvLaid(r *Request, buf []byte, lay *layIO, src, tag int) (bool, error) {
	s, err := srcArg(w, src)
	if err != nil {
		return false, nil
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.checkArgsLocked(s, tag, true) != nil {
		return false, nil
	}
	if err := r.resetLocked(e); err != nil {
		return true, withOp("irecv", err)
	}
	r.kind, r.ctx, r.peer, r.tag, r.buf, r.esize, r.lay = reqRecv, w.ctx, s, tag, buf, 1, lay
	r.anyFail, r.grp, r.call = w.sibling, w.g, callIrecv
	e.receiveLocked(r)
	return true, nil
}

// sendrecvLaid is Sendrecv of a typed send and a typed receive: the send offers the
// layout sl when sl is not nil, else sends out (packed, or in place); in is the receive
// buffer and ro, if not nil, its layout. It reports false, having done nothing, for the
// arguments that Sendrecv handles (ProcNull, errors) and for a layout offer that cannot
// go (then the caller packs). so is the offer's layIO, the caller's once the call is
// over.
func (w *World) sendrecvLaid(ctx context.Context, out []byte, sl *datatype.Laid, dest, stag int,
	in []byte, ro *layIO, src, rtag int) (st Status, ok bool, so *layIO, err error) {
	d, s, err := pairArgs(w, dest, src)
	if err != nil || d == ProcNull || s == ProcNull {
		return Status{}, false, nil, nil
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pairArgsLocked(d, stag, s, rtag) != nil {
		return Status{}, false, nil, nil
	}
	if sl != nil {
		if so = e.rndv.offerLayLocked(d, sl); so == nil {
			return Status{}, false, nil, nil
		}
	}
	rr := e.match.newRequestLocked(e, reqRecv)
	rr.ctx, rr.peer, rr.tag, rr.buf, rr.esize, rr.anyFail, rr.lay = w.ctx, s, rtag, in, 1, w.sibling, ro
	rr.call = callSendrecv
	e.receiveLocked(rr)
	var sr *Request
	if so != nil {
		sr = e.rndv.startOfferLocked(w.ctx, so, d, stag)
	} else {
		sr = e.startSendLocked(w.ctx, out, 1, d, stag)
	}
	if sr != nil {
		sr.call = callSendrecv
	}
	st, rerr := e.finishRecvLocked(ctx, rr, nil)
	var serr error
	if sr != nil {
		serr = e.finishSendLocked(ctx, sr)
	}
	e.poll.handoffLocked()
	if rerr == nil {
		rerr = serr
	}
	return outStatus(w, st), true, so, withOp("sendrecv", rerr)
}

// putOffer writes msgRTSL into b, the offer of size bytes in runs over the memory at
// addr, and returns its length.
func putOffer(b []byte, ctx uint16, tag int32, cookie, addr uint64, size int, runs []datatype.Run) int {
	putHeader(b, msgRTSL, ctx, tag)
	le.PutUint64(b[8:], cookie)
	le.PutUint64(b[16:], addr)
	le.PutUint64(b[24:], uint64(size))
	le.PutUint64(b[32:], uint64(len(runs)))
	o := offerLen
	for _, run := range runs {
		le.PutUint64(b[o:], uint64(run.Off))
		le.PutUint64(b[o+8:], uint64(run.Len))
		le.PutUint64(b[o+16:], uint64(run.Count))
		le.PutUint64(b[o+24:], uint64(run.Stride))
		o += runLen
	}
	return o
}

func (v *rendezvous) postOfferLocked(p *peer, r *Request) {
	e := v.e
	i := p.takeSlot()
	addr := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(r.lay.base))))
	n := putOffer(p.txBuf(i), r.ctx, int32(r.tag), r.cookie(), addr, r.lay.size, r.lay.runs)
	p.qsent++
	if err := p.postMessage(i, n, false); err != nil {
		e.peerFailedLocked(p, err)
	}
}

// decodeOffer decodes msgRTSL into h: kind msgRTS, rkey the send buffer's address, off
// 0, and layout set: the encoded runs follow offerLen bytes in (offerRuns). The runs
// must hold length bytes in all.
func decodeOffer(msg []byte, h header) (header, error) {
	if len(msg) < offerLen {
		return h, &errWire{fmt.Sprintf("layout offer of %d bytes, shorter than %d", len(msg), offerLen)}
	}
	h.cookie, h.rkey, h.length = le.Uint64(msg[8:]), le.Uint64(msg[16:]), le.Uint64(msg[24:])
	n := le.Uint64(msg[32:])
	if n == 0 || n > uint64(len(msg)-offerLen)/runLen || uint64(len(msg)-offerLen) != n*runLen {
		return h, &errWire{fmt.Sprintf("layout offer of %d bytes announces %d runs", len(msg), n)}
	}
	var sum uint64
	for o := offerLen; o < len(msg); o += runLen {
		l, c := le.Uint64(msg[o+8:]), le.Uint64(msg[o+16:])
		if l == 0 || c == 0 || l > 1<<50 || c > 1<<50 || l*c > 1<<50 || sum+l*c > 1<<50 {
			return h, &errWire{fmt.Sprintf("layout offer run of %d blocks of %d bytes", c, l)}
		}
		sum += l * c
	}
	if sum != h.length {
		return h, &errWire{fmt.Sprintf("layout offer of %d bytes whose runs hold %d", h.length, sum)}
	}
	h.kind, h.off, h.layout = msgRTS, 0, true
	return h, nil
}

// offerRuns returns the encoded runs of a layout offer whose payload (the message after
// its header) is payload, or nil if h is no layout offer.
func offerRuns(h *header, payload []byte) []byte {
	if !h.layout {
		return nil
	}
	return payload[offerLen-hdrLen:]
}

// readOfferLocked reads the first n bytes of a layout offer at addr in p's process,
// whose encoded runs are layout, into receive r, and completes it (FIN to p first).
func (v *rendezvous) readOfferLocked(p *peer, r *Request, addr uint64, layout []byte, n int) {
	e := v.e
	if !p.cma {
		e.peerFailedLocked(p, &errWire{"a layout offer from a peer whose memory this rank cannot read"})
		e.completeLocked(r, p.failed)
		return
	}
	remote := runCursor{enc: layout, n: len(layout) / runLen}
	var local runCursor
	var base []byte
	if r.lay != nil {
		local, base = runCursor{runs: r.lay.runs, n: len(r.lay.runs)}, r.lay.base
	} else {
		local, base = runCursor{one: datatype.Run{Len: n, Count: 1}, n: 1}, r.buf
	}
	if err := readRuns(int(p.card.pid), addr, &remote, base, &local, n); err != nil {
		e.peerFailedLocked(p, fmt.Errorf("%w: read a %d-byte layout offer of rank %d: %w", ErrTransport, n, p.rank, err))
		e.completeLocked(r, p.failed)
		return
	}
	if r.lay != nil {
		r.lay.direct = true
	}
	layoutReads.Add(1)
	e.links.queueFINLocked(p, r.fin)
	e.completeLocked(r, r.truncErr())
}

// runCursor walks the bytes of a list of runs in order: runs, encoded runs (enc), or
// the single run one.
type runCursor struct {
	runs []datatype.Run
	enc  []byte
	one  datatype.Run
	n    int // runs in all
	i, j int // the run and its block
	at   int // bytes of the block taken
}

func (c *runCursor) run(i int) datatype.Run {
	switch {
	case c.runs != nil:
		return c.runs[i]
	case c.enc != nil:
		b := c.enc[i*runLen:]
		return datatype.Run{Off: int(le.Uint64(b)), Len: int(le.Uint64(b[8:])), Count: int(le.Uint64(b[16:])), Stride: int(le.Uint64(b[24:]))}
	}
	return c.one
}

// take returns the next piece of at most most bytes, at offset off: n is 0 at the end.
func (c *runCursor) take(most int) (off, n int) {
	if c.i >= c.n {
		return 0, 0
	}
	r := c.run(c.i)
	off = r.Off + c.j*r.Stride + c.at
	n = min(r.Len-c.at, most)
	if c.at += n; c.at == r.Len {
		c.at = 0
		if c.j++; c.j == r.Count {
			c.i, c.j = c.i+1, 0
		}
	}
	return off, n
}

// readRuns copies n bytes from the runs of remote at addr in process pid into the runs
// of local over base, in order, with process_vm_readv: up to iovBatch iovecs a side per
// call, pieces that continue each other joined.
func readRuns(pid int, addr uint64, remote *runCursor, base []byte, local *runCursor, n int) error {
	var liov [iovBatch]unix.Iovec
	var riov [iovBatch]unix.RemoteIovec
	var lo, ln, ro, rn int // the current local and remote pieces not yet read
	for n > 0 {
		nl, nr, batch := 0, 0, 0
		lend, llen, rend := -1, 0, uint64(0)
		for n > 0 && nl < iovBatch && nr < iovBatch {
			if ln == 0 {
				if lo, ln = local.take(n); ln == 0 {
					return fmt.Errorf("the receive layout ends %d bytes early", n)
				}
				if lo < 0 || lo+ln > len(base) {
					return fmt.Errorf("receive layout piece [%d, %d) outside its %d-byte buffer", lo, lo+ln, len(base))
				}
			}
			if rn == 0 {
				if ro, rn = remote.take(n); rn == 0 {
					return fmt.Errorf("the offered layout ends %d bytes early", n)
				}
			}
			k := min(ln, rn)
			if nl > 0 && lend == lo {
				llen += k
				liov[nl-1].SetLen(llen)
			} else {
				liov[nl] = unix.Iovec{Base: &base[lo]}
				llen = k
				liov[nl].SetLen(k)
				nl++
			}
			if ra := addr + uint64(ro); nr > 0 && rend == ra {
				riov[nr-1].Len += k
			} else {
				riov[nr] = unix.RemoteIovec{Base: uintptr(ra), Len: k}
				nr++
			}
			lend, rend = lo+k, addr+uint64(ro+k)
			lo, ln, ro, rn = lo+k, ln-k, ro+k, rn-k
			n, batch = n-k, batch+k
		}
		for {
			got, err := unix.ProcessVMReadv(pid, liov[:nl], riov[:nr], 0)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return err
			}
			if got != batch {
				return fmt.Errorf("process_vm_readv read %d of %d bytes", got, batch)
			}
			break
		}
	}
	return nil
}
