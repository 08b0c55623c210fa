package runtime

import (
	"context"

	"github.com/gorma-hpc/gorma/internal/prof"
)

// Send modes beside the standard one (MPI_Ssend, MPI_Rsend) and the combined nonblocking
// send and receive (MPI_Isendrecv, MPI_Sendrecv_replace).

// Ssend sends buf to dest with tag and returns once the receiver has matched it (MPI_Ssend):
// it always goes by rendezvous. ctx ending behaves as for Send.
func Ssend[T Elem](ctx context.Context, w *World, buf []T, dest, tag int) error {
	if err := w.live(); err != nil {
		return withOp("ssend", err)
	}
	d, err := destArg(w, dest)
	if err != nil {
		if dest == ProcNull {
			return withOp("ssend", nullCheck(w, tag, false))
		}
		return withOp("ssend", err)
	}
	b, size := asBytes(buf)
	return withOp("ssend", w.e.ssend(ctx, w.ctx, b, size, d, tag))
}

func (e *engine) ssend(ctx context.Context, ctxID uint16, buf []byte, esize, dest, tag int) error {
	c := e.obs.begin(ctxID, prof.CallSend)
	var flow uint64
	e.mu.Lock()
	defer e.mu.Unlock()
	defer func() { e.obs.endSend(c, ctxID, lSsend, dest, tag, len(buf), flow) }() // before the unlock
	if err := e.checkArgsLocked(dest, tag, false); err != nil {
		return err
	}
	r := e.match.newRequestLocked(e, reqSend)
	r.ctx, r.peer, r.tag, r.buf, r.esize, r.synchronous = ctxID, dest, tag, buf, esize, true
	r.inCall, r.call = c.On(), callSsend
	e.obs.carryLocked()
	e.sendLocked(r)
	flow = e.obs.flowLocked()
	err := e.finishSendLocked(ctx, r)
	e.poll.handoffLocked()
	return err
}

// Issend starts a synchronous send (MPI_Issend): its Request completes once the receiver
// has matched the message (see Ssend).
func Issend[T Elem](w *World, buf []T, dest, tag int) (*Request, error) {
	r := new(Request)
	b, size := asBytes(buf)
	if err := w.isend(r, b, size, dest, tag, callIssend); err != nil {
		return nil, withOp("issend", err)
	}
	return r, nil
}

// Rsend is a ready send (MPI_Rsend): MPI lets it assume the receive is posted; gorma
// sends it as Send does, which is correct whether or not it is.
func Rsend[T Elem](ctx context.Context, w *World, buf []T, dest, tag int) error {
	return withOp("rsend", sendBlocking(ctx, callRsend, w, buf, dest, tag))
}

// Irsend is the nonblocking ready send (MPI_Irsend), sent as Isend.
func Irsend[T Elem](w *World, buf []T, dest, tag int) (*Request, error) {
	r := new(Request)
	b, size := asBytes(buf)
	if err := w.isend(r, b, size, dest, tag, callIrsend); err != nil {
		return nil, withOp("irsend", err)
	}
	return r, nil
}

// Isendrecv starts Sendrecv (MPI_Isendrecv). Its Request completes when both parts have; its
// Status and first error are the receive's. Either rank may be ProcNull.
func Isendrecv[S, R Elem](w *World, sbuf []S, dest, stag int, rbuf []R, src, rtag int) (*Request, error) {
	sb, ssize := asBytes(sbuf)
	rb, rsize := asBytes(rbuf)
	r := new(Request)
	if err := isendrecv(w, r, callIsendrecv, sb, ssize, dest, stag, rb, rsize, src, rtag); err != nil {
		return nil, withOp("isendrecv", err)
	}
	return r, nil
}

// isendrecv starts the Isendrecv r for the user's call. It returns errors without the
// operation's name.
func isendrecv(w *World, r *Request, call opCall, sb []byte, ssize, dest, stag int, rb []byte, rsize, src, rtag int) error {
	d, s, err := pairArgs(w, dest, src)
	if err != nil {
		return err
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.pairArgsLocked(d, stag, s, rtag); err != nil {
		return err
	}
	if err := r.resetLocked(e); err != nil {
		return err
	}
	r.kind, r.grp, r.call = reqPair, w.g, call
	recv, send := new(Request), new(Request)
	if err := e.irecvLocked(w, recv, rb, rsize, s, rtag, call); err != nil {
		return err
	}
	if err := e.isendLocked(w, send, sb, ssize, d, stag, call); err != nil {
		return err // not reached: pairArgsLocked checked what isendLocked checks
	}
	// Parts that completed while starting are seen here, later ones when they complete.
	recv.parent, send.parent = r, r
	r.parts = [2]*Request{recv, send}
	e.match.partDoneLocked(r)
	return nil
}

// SendrecvReplace is Sendrecv with one buffer (MPI_Sendrecv_replace): it sends a copy of buf
// taken at the call and receives up to len(buf) elements into buf.
func SendrecvReplace[T Elem](ctx context.Context, w *World, buf []T, dest, stag, src, rtag int) (Status, error) {
	st, err := sendrecvAs(ctx, callSendrecvReplace, w, append([]T(nil), buf...), dest, stag, buf, src, rtag)
	return st, withOp("sendrecv_replace", err)
}

// IsendrecvReplace is the nonblocking SendrecvReplace (MPI_Isendrecv_replace): buf
// belongs to the runtime until the Request completes.
func IsendrecvReplace[T Elem](w *World, buf []T, dest, stag, src, rtag int) (*Request, error) {
	sb, ssize := asBytes(append([]T(nil), buf...))
	rb, rsize := asBytes(buf)
	r := new(Request)
	if err := isendrecv(w, r, callIsendrecvReplace, sb, ssize, dest, stag, rb, rsize, src, rtag); err != nil {
		return nil, withOp("isendrecv_replace", err)
	}
	return r, nil
}
