package runtime

import (
	"context"
	"unsafe"

	"github.com/gorma-hpc/gorma/internal/prof"
)

// Elem is the element type of a message: fixed-size numbers, whose bytes are the message.
// int, uint and uintptr are left out (their size depends on the platform).
type Elem interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 |
		~float32 | ~float64 | ~complex64 | ~complex128
}

// asBytes returns buf's memory as bytes, and the element size.
func asBytes[T Elem](buf []T) ([]byte, int) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if len(buf) == 0 {
		return nil, size
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(buf))), len(buf)*size), size
}

// Send sends buf to rank dest with tag (0..MaxTag) and returns when buf may be reused: at
// once for an eager message (it was copied), after the receiver has read a larger one
// (rendezvous). A send to this rank itself never blocks. If ctx ends while a rendezvous waits,
// Send returns ctx's error and the offer stands: buf must stay as it is. If ctx ends before
// the message left, it is never sent.
func Send[T Elem](ctx context.Context, w *World, buf []T, dest, tag int) error {
	return withOp("send", sendBlocking(ctx, callSend, w, buf, dest, tag))
}

// sendBlocking is Send for the user's call (Send, Rsend). It returns errors without the
// operation's name.
func sendBlocking[T Elem](ctx context.Context, call opCall, w *World, buf []T, dest, tag int) error {
	if err := w.live(); err != nil {
		return err
	}
	d, err := destArg(w, dest)
	if err != nil {
		if dest == ProcNull {
			return nullCheck(w, tag, false)
		}
		return err
	}
	b, size := asBytes(buf)
	return w.e.send(ctx, call, w.ctx, b, size, d, tag)
}

// Recv receives a message from rank src (or AnySource) with tag (or AnyTag) into buf, and
// returns its Status. A longer message fills buf and fails with ErrTruncated. If ctx ends
// before a message matched, the receive is withdrawn; once a rendezvous matched, Recv waits
// for its data.
func Recv[T Elem](ctx context.Context, w *World, buf []T, src, tag int) (Status, error) {
	if err := w.live(); err != nil {
		return Status{}, withOp("recv", err)
	}
	s, err := srcArg(w, src)
	if err != nil {
		if src == ProcNull {
			if err := nullCheck(w, tag, true); err != nil {
				return Status{}, withOp("recv", err)
			}
			return nullStatus(), nil
		}
		return Status{}, withOp("recv", err)
	}
	b, size := asBytes(buf)
	st, err := w.e.recv(ctx, w.ctx, b, size, s, tag, w.sibling)
	return outStatus(w, st), withOp("recv", err)
}

// Isend starts sending buf to dest with tag and returns its Request; buf belongs to the
// runtime until it completes. Bad arguments fail at once, a failed peer through the Request.
// IsendWith reuses a Request.
func Isend[T Elem](w *World, buf []T, dest, tag int) (*Request, error) {
	r := new(Request)
	if err := IsendWith(r, w, buf, dest, tag); err != nil {
		return nil, err
	}
	return r, nil
}

// IsendWith is Isend into r, a Request that is new or has completed, so that a loop of
// sends allocates nothing. Reusing one that has not completed fails with ErrInvalid.
func IsendWith[T Elem](r *Request, w *World, buf []T, dest, tag int) error {
	b, size := asBytes(buf)
	return withOp("isend", w.isend(r, b, size, dest, tag, callIsend))
}

// isend starts send r of b (elements of esize bytes) to dest for the user's call, which
// tells whether it is synchronous. It returns errors without the operation's name.
func (w *World) isend(r *Request, b []byte, esize, dest, tag int, call opCall) error {
	if err := w.live(); err != nil {
		return err
	}
	d, err := destOrNull(w, dest)
	if err != nil {
		return err
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.isendLocked(w, r, b, esize, d, tag, call)
}

// isendLocked is isend with dest a job rank or ProcNull.
func (e *engine) isendLocked(w *World, r *Request, b []byte, esize, dest, tag int, call opCall) error {
	if dest == ProcNull {
		return e.nullRequestLocked(r, reqSend, tag)
	}
	if err := e.checkArgsLocked(dest, tag, false); err != nil {
		return err
	}
	if err := r.resetLocked(e); err != nil {
		return err
	}
	r.kind, r.ctx, r.peer, r.tag, r.buf, r.esize, r.synchronous = reqSend, w.ctx, dest, tag, b, esize, call.synchronous()
	r.call = call
	c := e.obs.beginLaterLocked(w.ctx, prof.CallSend) // it never waits
	e.obs.carryLocked()
	e.sendLocked(r)
	e.obs.endSend(c, w.ctx, lIsend, dest, tag, len(b), e.obs.flowLocked())
	return nil
}

// Irecv starts receiving into buf from src with tag and returns its Request; buf belongs to
// the runtime until it completes. IrecvWith reuses a Request.
func Irecv[T Elem](w *World, buf []T, src, tag int) (*Request, error) {
	r := new(Request)
	if err := IrecvWith(r, w, buf, src, tag); err != nil {
		return nil, err
	}
	return r, nil
}

// IrecvWith is Irecv into r, a Request that is new or has completed (see IsendWith).
func IrecvWith[T Elem](r *Request, w *World, buf []T, src, tag int) error {
	b, size := asBytes(buf)
	return withOp("irecv", w.irecv(r, b, size, src, tag, callIrecv))
}

// irecv starts receive r into b (elements of esize bytes) from src for the user's call.
// It returns errors without the operation's name.
func (w *World) irecv(r *Request, b []byte, esize, src, tag int, call opCall) error {
	if err := w.live(); err != nil {
		return err
	}
	s, err := srcOrNull(w, src)
	if err != nil {
		return err
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.irecvLocked(w, r, b, esize, s, tag, call)
}

// irecvLocked is irecv with src a job rank, AnySource or ProcNull.
func (e *engine) irecvLocked(w *World, r *Request, b []byte, esize, src, tag int, call opCall) error {
	if src == ProcNull {
		return e.nullRequestLocked(r, reqRecv, tag)
	}
	if err := e.checkArgsLocked(src, tag, true); err != nil {
		return err
	}
	if err := r.resetLocked(e); err != nil {
		return err
	}
	r.kind, r.ctx, r.peer, r.tag, r.buf, r.esize, r.call = reqRecv, w.ctx, src, tag, b, esize, call
	r.anyFail = w.sibling // see Sibling
	r.grp = w.g
	c := e.obs.beginLaterLocked(w.ctx, prof.CallRecv) // it never waits
	e.receiveLocked(r)
	e.obs.endRecv(c, w.ctx, lIrecv, src, tag, len(b), recvMark{})
	return nil
}

// resetLocked readies a user's Request for a new operation of e.
func (r *Request) resetLocked(e *engine) error {
	if r == nil {
		return invalidf("nil Request")
	}
	if r.e != nil && !r.done {
		return invalidf("the Request is still in use (reuse a Request only once it has completed)")
	}
	if r.e != nil && r.e != e {
		return invalidf("the Request belongs to another World's job")
	}
	if r.parked || len(r.watchers) > 0 {
		return invalidf("a goroutine is still waiting for the Request")
	}
	if r.pers != nil {
		return invalidf("the Request is persistent (SendInit, RecvInit): run it again with Start")
	}
	wake := r.wake
	*r = Request{e: e, waiter: waiter{wake: wake}, rndvState: rndvState{rndvRead: rndvRead{truncTo: -1}}}
	return nil
}

// Probe blocks until a message from src with tag can be received, and returns its Status
// without receiving it; Count and Bytes both hold its length in bytes (see CountOf).
func Probe(ctx context.Context, w *World, src, tag int) (Status, error) {
	if err := w.live(); err != nil {
		return Status{}, withOp("probe", err)
	}
	src0 := src
	src, err := srcArg(w, src)
	if err != nil {
		if src0 == ProcNull {
			if err := nullCheck(w, tag, true); err != nil {
				return Status{}, withOp("probe", err)
			}
			return nullStatus(), nil
		}
		return Status{}, withOp("probe", err)
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkArgsLocked(src, tag, true); err != nil {
		return Status{}, withOp("probe", err)
	}
	r := e.match.newRequestLocked(e, reqProbe)
	r.ctx, r.peer, r.tag = w.ctx, src, tag
	e.probeLocked(r)
	err = e.waitLocked(ctx, r)
	if err != nil {
		e.match.probes.Remove(&r.link)
	} else {
		err = r.err
	}
	st := outStatus(w, r.status)
	e.match.recycleLocked(r)
	e.poll.handoffLocked()
	return st, withOp("probe", err)
}

// Iprobe reports whether a message from src (or AnySource) with tag (or AnyTag) can be
// received now, and its Status if so (lengths in bytes, as Probe). It never blocks.
func Iprobe(w *World, src, tag int) (bool, Status, error) {
	if err := w.live(); err != nil {
		return false, Status{}, withOp("iprobe", err)
	}
	src0 := src
	src, err := srcArg(w, src)
	if err != nil {
		if src0 == ProcNull {
			if err := nullCheck(w, tag, true); err != nil {
				return false, Status{}, withOp("iprobe", err)
			}
			return true, nullStatus(), nil
		}
		return false, Status{}, withOp("iprobe", err)
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkArgsLocked(src, tag, true); err != nil {
		return false, Status{}, withOp("iprobe", err)
	}
	if !e.poll.active {
		e.progressLocked()
	}
	r := Request{ctx: w.ctx, peer: src, tag: tag}
	if m := e.match.ux.Match(r.want()); m != nil {
		return true, outStatus(w, Status{Source: m.src, Tag: int(m.tag), Bytes: m.size(), Count: m.size()}), nil
	}
	if err := e.sourceFailedLocked(&r); err != nil {
		return false, Status{}, withOp("iprobe", err)
	}
	return false, Status{}, nil
}

// CountOf returns how many elements of type T the message of s holds (the Status of a
// Probe counts bytes).
func CountOf[T Elem](s Status) int {
	var zero T
	return s.Bytes / int(unsafe.Sizeof(zero))
}

// checkArgsLocked validates a peer rank and tag; recv allows the wildcards.
func (e *engine) checkArgsLocked(rank, tag int, recv bool) error {
	if err := e.checkLocked(); err != nil {
		return err
	}
	if n := len(e.links.peers); (rank < 0 || rank >= n) && !(recv && rank == AnySource) {
		return rankRangeErr(rank, n, true)
	}
	if (tag < 0 || tag > MaxTag) && !(recv && tag == AnyTag) {
		return invalidf("tag %d out of range [0, %d]", tag, MaxTag)
	}
	return nil
}

// send is the blocking send: ctxID is the communication context, and call the user's
// call (Send, Rsend) that names its wait in hang reports, or callNone for the runtime's
// own sends (Barrier, Split, Spawn...). Errors are returned without the operation's name.
func (e *engine) send(ctx context.Context, call opCall, ctxID uint16, buf []byte, esize, dest, tag int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkArgsLocked(dest, tag, false); err != nil {
		return err
	}
	var err error
	c := e.obs.beginLaterLocked(ctxID, prof.CallSend)
	e.obs.carryLocked()
	r := e.startSendLocked(ctxID, buf, esize, dest, tag)
	flow := e.obs.flowLocked()
	if r != nil {
		c = c.Start() // it may wait: its event starts once it is posted
		r.inCall, r.call = c.On(), call
		r.anyFail = !userCtx(ctxID) // a collective's send: its wait ends once a peer failed (ft.go)
		err = e.finishSendLocked(ctx, r)
	} else if e.ft.on {
		e.ft.sentLocked()
	}
	e.poll.handoffLocked()
	e.obs.endSend(c, ctxID, lSend, dest, tag, len(buf), flow)
	return err
}

// startSendLocked starts a blocking send whose arguments were checked. It returns nil
// when the message went out through a fast box (no Request needed), else the engine's
// Request for finishSendLocked.
func (e *engine) startSendLocked(ctxID uint16, buf []byte, esize, dest, tag int) *Request {
	if dest != e.rank {
		// The fast box path needs no Request (sendLocked would take it too).
		p := e.links.peers[dest]
		if p != nil && p.ready && p.failed == nil && len(buf) <= p.eagerMax && p.out.n == 0 && p.postFastLocked(ctxID, tag, buf) {
			e.obs.sentLocked(e.obs.numberLocked(ctxID, dest, len(buf)), ctxID, dest, tag, len(buf))
			return nil
		}
	}
	r := e.match.newRequestLocked(e, reqSend)
	r.ctx, r.peer, r.tag, r.buf, r.esize = ctxID, dest, tag, buf, esize
	e.sendLocked(r)
	return r
}

// finishSendLocked waits for the send r of startSendLocked and recycles it (or leaves it
// to be recycled at completion, if ctx ended first).
func (e *engine) finishSendLocked(ctx context.Context, r *Request) error {
	if !r.done {
		if err := e.waitLocked(ctx, r); err != nil {
			e.match.abandonLocked(r)
			return err
		}
	}
	err := r.err
	if r.anyFail && err != nil {
		err = e.ft.collectiveErrLocked(err)
	}
	e.match.recycleLocked(r)
	return err
}

// recv is the blocking receive of every caller (Recv, Barrier). A collective receive
// fails when any peer has failed.
func (e *engine) recv(ctx context.Context, ctxID uint16, buf []byte, esize, src, tag int, collective bool) (Status, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkArgsLocked(src, tag, true); err != nil {
		return Status{}, err
	}
	c := e.obs.beginLaterLocked(ctxID, prof.CallRecv)
	r := e.match.newRequestLocked(e, reqRecv)
	r.ctx, r.peer, r.tag, r.buf, r.esize, r.anyFail = ctxID, src, tag, buf, esize, collective
	r.inCall, r.carry = c.On(), c.On()
	e.receiveLocked(r) // a wait gives a Later call its start and end (polled.stamps)
	var m recvMark
	st, err := e.finishRecvLocked(ctx, r, &m)
	e.poll.handoffLocked()
	e.obs.endRecv(c, ctxID, lRecv, st.Source, st.Tag, st.Bytes, m)
	return st, err
}

// finishRecvLocked waits for the engine's receive r and recycles it. When mark is not
// nil it receives what the timeline learned in the wait (recvMark).
func (e *engine) finishRecvLocked(ctx context.Context, r *Request, mark *recvMark) (Status, error) {
	var err error
	if !r.done {
		err = e.waitLocked(ctx, r)
		if err != nil && !r.link.Queued() {
			// Matched: a rendezvous read into buf is under way and must finish first.
			err = e.waitLocked(context.Background(), r)
		}
		if err != nil {
			e.match.posted.Remove(&r.link)
		}
	}
	if err == nil {
		err = r.err
	}
	st := r.status
	if mark != nil {
		*mark = recvMark{r.flow, r.obsFrom, r.obsAt}
	}
	e.match.recycleLocked(r)
	return st, err
}
