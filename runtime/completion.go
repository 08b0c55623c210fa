package runtime

import (
	"errors"
	"fmt"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

var errDropped = errors.New("send canceled before it was posted")

// handleLocked handles one work completion.
func (e *engine) handleLocked(wc *verbs.WC) {
	kind, rank, idx := splitWRID(wc.WRID)
	if rank >= len(e.links.peers) || e.links.peers[rank] == nil {
		return
	}
	p := e.links.peers[rank]
	if kind == wrRMA {
		e.rma.rmaDoneLocked(p, idx, wc) // rma_ops.go
		return
	}
	if p.failed != nil {
		return // late completions of a failed connection
	}
	if wc.Status != verbs.Success {
		e.peerFailedLocked(p, statusCause(p.dev.name, wc))
		return
	}
	switch kind {
	case wrTx:
		p.txDone(idx)
	case wrRead:
		p.sqFree++
		if r := e.match.readDoneLocked(idx); r != nil {
			e.links.queueFINLocked(p, r.fin)
			e.completeLocked(r, r.truncErr())
		}
	case wrRx:
		e.messageLocked(p, p.rxBuf(idx)[:wc.ByteLen])
		if p.failed == nil {
			e.links.repostLaterLocked(p, idx)
		}
	}
	if p.out.n > 0 {
		e.pumpLocked(p)
	}
}

// messageLocked handles a message that arrived from p in a receive slot.
func (e *engine) messageLocked(p *peer, msg []byte) {
	h, err := decodeHeader(msg)
	if err != nil {
		e.peerFailedLocked(p, err)
		return
	}
	switch h.kind {
	case msgFIN, msgWithdrawn:
		// FIN, or msgWithdrawn at this rank's request (msgCancel), completes the
		// rendezvous send of the cookie.
		r := e.match.answeredLocked(p.rank, h.kind, h.cookie)
		if r == nil {
			what := "FIN for"
			if h.kind == msgWithdrawn {
				what = "withdrawal of"
			}
			e.peerFailedLocked(p, &errWire{fmt.Sprintf("%s unknown rendezvous %#x", what, h.cookie)})
			return
		}
		e.completeLocked(r, nil)
	case msgCancel:
		// p asks to withdraw its offer: one still unexpected here is dropped and p told
		// msgWithdrawn; one already matched is being read, or was, and its FIN answers p.
		if e.match.withdrawOfferLocked(p.rank, h.cookie) && p.failed == nil {
			e.queueCookieLocked(p, msgWithdrawn, h.cookie)
		}
	case msgNop:
	case msgEager, msgRTS:
		// Fast box messages sent before this one go first, and those that waited for it
		// follow it (fastbox.go).
		e.drainFastboxLocked(p)
		if p.failed != nil {
			return
		}
		e.incomingLocked(p.rank, &h, msg[hdrLen:])
		p.qrecv++
		if p.fin.box != nil {
			p.fin.gate.Store(p.qrecv)
			e.drainFastboxLocked(p)
		}
	}
}

// statusCause explains an error completion on a peer's connection.
func statusCause(provider string, wc *verbs.WC) error {
	what := "the connection failed"
	switch wc.Status {
	case verbs.RetryExcErr:
		what = "the peer stopped answering (it died, closed its transport, or the network failed)"
	case verbs.WRFlushErr:
		what = "the connection was closed (the peer died or closed its transport)"
	case verbs.RemAccessErr:
		what = "the peer refused a memory access (a stale key, or the kernel forbids reading its memory)"
	case verbs.LocLenErr:
		what = "the peer sent a message larger than the receive slot (mismatched GORMA_EAGER_LIMIT?)"
	}
	return fmt.Errorf("%s: %s: %w", provider, what, wc.Err())
}
