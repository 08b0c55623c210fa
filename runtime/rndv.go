package runtime

import (
	"fmt"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Rendezvous protocol, for messages above the receiver's eager limit:
//
//	sender                                     receiver
//	expose buf (registration cache, or a
//	private arena copy where the peer may not
//	read our memory), table slot  ── RTS ──>   match (now, or when the receive is posted)
//	                                           RDMA read straight into the receive buffer
//	                                           (in chunks of readChunk)
//	complete, release               <── FIN ── complete
//
// The receive buffer is never registered: providers accept plain Go memory as the local
// side of an RDMA read. A receive buffer shorter than the message gets the message's first
// bytes and ErrTruncated. RTS and FIN carry a cookie (table slot and generation), so a
// stale or forged FIN finds nothing and is treated as a protocol violation of the peer.

// offerLocked starts a rendezvous send: it exposes r's buffer and sends RTS.
func (v *rendezvous) offerLocked(p *peer, r *Request) {
	if !v.exposeLocked(p, r) {
		return
	}
	if p.out.n == 0 && p.canSend() {
		v.postRTSLocked(p, r)
		return
	}
	p.out.push(outOp{kind: opRTS, r: r})
	r.outQueued = true
}

// exposeLocked exposes r's buffer to p for a rendezvous and enters r in the table. On
// failure it completes r with the error and returns false.
func (v *rendezvous) exposeLocked(p *peer, r *Request) bool {
	e := v.e
	if len(r.buf) == 0 {
		e.match.table.add(r) // an empty synchronous send: nothing to read, the receiver answers FIN
		return true
	}
	mr, off, owned, err := exposeBuffer(p, r.buf)
	if err != nil {
		e.completeLocked(r, fmt.Errorf("%w: expose %d-byte send buffer to rank %d: %w", ErrTransport, len(r.buf), p.rank, err))
		return false
	}
	r.mr, r.mrOwned, r.mrOff = mr, owned, off
	if !owned {
		r.mrCache = p.dev.regs
	}
	e.match.table.add(r)
	return true
}

// exposeBuffer returns a memory region that peer p may RDMA-read buf from, with buf's
// offset in it. owned is true for a private copy, to be deregistered at completion;
// otherwise the region is a reference on p.dev.regs, put back at completion. A provider
// that reaches user memory with cross-memory reads (verbs.CapCMA) gets the copy when the
// kernel does not let p read this process (peer.cma).
func exposeBuffer(p *peer, buf []byte) (verbs.MR, uint64, bool, error) {
	if p.dev.caps.Has(verbs.CapCMA) && !p.cma {
		mr, err := p.dev.pd.AllocMR(len(buf), verbs.RemoteRead)
		if err != nil {
			return nil, 0, false, err
		}
		copy(mr.Bytes(), buf)
		return mr, 0, true, nil
	}
	mr, err := p.dev.regs.Get(buf, verbs.RemoteRead)
	if err != nil {
		return nil, 0, false, err
	}
	off, ok := verbs.SliceOffset(mr.Bytes(), buf)
	if !ok {
		p.dev.regs.Put(mr)
		return nil, 0, false, fmt.Errorf("registration cache returned a region that does not cover the buffer")
	}
	return mr, uint64(off), false, nil
}

func (v *rendezvous) postRTSLocked(p *peer, r *Request) {
	e := v.e
	if r.lay != nil {
		v.postOfferLocked(p, r)
		return
	}
	var rkey uint64
	if r.mr != nil {
		rkey = r.mr.RKey()
	}
	i := p.takeSlot()
	putRTS(p.txBuf(i), r.ctx, int32(r.tag), r.cookie(), rkey, r.mrOff, uint64(len(r.buf)))
	p.qsent++
	if err := p.postMessage(i, rtsLen, false); err != nil {
		e.peerFailedLocked(p, err)
	}
}

// startReadLocked starts receive r of a rendezvous offer from src: RDMA reads of the
// offered buffer into r.buf, then FIN. A layout offer (layout, its encoded runs, not
// nil; rkey is then the sender's address) is read at once by readOfferLocked.
func (v *rendezvous) startReadLocked(r *Request, src int, tag int32, cookie, rkey, off, length uint64, layout []byte) {
	e := v.e
	p := e.links.peers[src]
	n := min(length, uint64(len(r.buf)))
	r.status = Status{Source: src, Tag: int(tag), Bytes: int(n), Count: elems(int(n), r.esize)}
	if length > n {
		r.truncTo = int(length)
	}
	if p.failed != nil {
		e.completeLocked(r, p.failed)
		return
	}
	r.fin = cookie
	if n == 0 {
		e.links.queueFINLocked(p, cookie)
		e.completeLocked(r, r.truncErr())
		return
	}
	if layout != nil {
		v.readOfferLocked(p, r, rkey, layout, int(n))
		return
	}
	r.rkey, r.roff, r.rlen = rkey, off, int(n)
	e.match.table.add(r)
	chunks := (r.rlen + readChunk - 1) / readChunk
	r.reads = chunks
	for c := 0; c < chunks; c++ {
		if p.out.n == 0 && p.sqFree > 0 {
			v.postReadLocked(p, r, c)
		} else {
			p.out.push(outOp{kind: opRead, r: r, chunk: c})
		}
	}
}

func (v *rendezvous) postReadLocked(p *peer, r *Request, chunk int) {
	e := v.e
	lo := chunk * readChunk
	hi := min(lo+readChunk, r.rlen)
	p.swr = verbs.SendWR{WRID: wrid(wrRead, p.rank, r.slot), Op: verbs.OpRDMARead, Flags: verbs.Signaled,
		Local: r.buf[lo:hi], Remote: verbs.RemoteAddr{RKey: r.rkey, Offset: r.roff + uint64(lo)}}
	p.sqFree--
	if err := p.qp.PostSend(&p.swr); err != nil {
		e.peerFailedLocked(p, err)
	}
}

// truncErr returns the ErrTruncated error of receive r whose message did not fit, or nil.
func (r *Request) truncErr() error {
	if r.truncTo < 0 {
		return nil
	}
	return r.truncated(r.truncTo)
}

// truncated returns the ErrTruncated error of receive r, whose Status names the message,
// for a message of msg bytes: its source and tag, and the buffer it needs.
func (r *Request) truncated(msg int) error {
	st := r.statusOut()
	return fmt.Errorf("%w: a %d-byte message from rank %d (tag %d) into a %d-byte buffer "+
		"(receive it into %d bytes or more, or Probe first for its length)", ErrTruncated, msg, st.Source, st.Tag, len(r.buf), msg)
}
