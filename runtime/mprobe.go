package runtime

import "context"

// Matched probes (MPI_Mprobe, MPI_Improbe, MPI_Mrecv, MPI_Imrecv).

// Message is a message that Mprobe or Improbe took out of matching (MPI_Message): exactly
// one Mrecv or Imrecv receives it; a second fails with ErrInvalid. One from ProcNull
// receives nothing, at once. A Message is safe for concurrent use.
type Message struct {
	w    *World
	m    *uxMsg // nil: from ProcNull, or received
	null bool
	used bool // guarded by the engine's mu
}

// Mprobe blocks until a message from src with tag can be received, takes it out of matching
// and returns it with its Status (lengths in bytes, as Probe). If ctx ends first it takes
// nothing.
func Mprobe(ctx context.Context, w *World, src, tag int) (*Message, Status, error) {
	if err := w.live(); err != nil {
		return nil, Status{}, withOp("mprobe", err)
	}
	s, err := srcArg(w, src)
	if err != nil {
		if src == ProcNull {
			if err := nullCheck(w, tag, true); err != nil {
				return nil, Status{}, withOp("mprobe", err)
			}
			return &Message{w: w, null: true}, nullStatus(), nil
		}
		return nil, Status{}, withOp("mprobe", err)
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkArgsLocked(s, tag, true); err != nil {
		return nil, Status{}, withOp("mprobe", err)
	}
	r := e.match.newRequestLocked(e, reqProbe)
	r.ctx, r.peer, r.tag, r.mprobe, r.call = w.ctx, s, tag, true, callMprobe
	e.probeLocked(r)
	err = e.waitLocked(ctx, r)
	if err != nil {
		e.match.probes.Remove(&r.link)
	} else {
		err = r.err
	}
	var msg *Message
	if r.msg != nil {
		msg = &Message{w: w, m: r.msg}
	}
	st := outStatus(w, r.status)
	e.match.recycleLocked(r)
	e.poll.handoffLocked()
	return msg, st, withOp("mprobe", err)
}

// Improbe is Mprobe without blocking: ok reports whether it took a message.
func Improbe(w *World, src, tag int) (msg *Message, ok bool, st Status, err error) {
	if err := w.live(); err != nil {
		return nil, false, Status{}, withOp("improbe", err)
	}
	s, err := srcArg(w, src)
	if err != nil {
		if src == ProcNull {
			if err := nullCheck(w, tag, true); err != nil {
				return nil, false, Status{}, withOp("improbe", err)
			}
			return &Message{w: w, null: true}, true, nullStatus(), nil
		}
		return nil, false, Status{}, withOp("improbe", err)
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkArgsLocked(s, tag, true); err != nil {
		return nil, false, Status{}, withOp("improbe", err)
	}
	if !e.poll.active {
		e.progressLocked()
	}
	r := Request{ctx: w.ctx, peer: s, tag: tag}
	if m := e.match.ux.Match(r.want()); m != nil {
		e.match.ux.Remove(&m.link)
		st := Status{Source: m.src, Tag: int(m.tag), Bytes: m.size(), Count: m.size()}
		return &Message{w: w, m: m}, true, outStatus(w, st), nil
	}
	if err := e.sourceFailedLocked(&r); err != nil {
		return nil, false, Status{}, withOp("improbe", err)
	}
	return nil, false, Status{}, nil
}

// Mrecv receives message m into buf (MPI_Mrecv) and returns its Status, in elements of T. A
// longer message fills buf and fails with ErrTruncated. It waits for the data whatever
// becomes of ctx, unless the sender fails.
func Mrecv[T Elem](ctx context.Context, m *Message, buf []T) (Status, error) {
	b, size := asBytes(buf)
	r := new(Request)
	if err := m.start(r, callMrecv, b, size); err != nil {
		return Status{}, withOp("mrecv", err)
	}
	e := m.w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	err := e.waitLocked(ctx, r)
	if err != nil {
		err = e.waitLocked(context.Background(), r) // matched: the data is on its way into buf
	}
	if err == nil {
		err = r.err
	}
	st := r.statusOut()
	e.poll.handoffLocked()
	return st, withOp("mrecv", err)
}

// Imrecv starts receiving message m into buf (MPI_Imrecv) and returns its Request; buf
// belongs to the runtime until it completes.
func Imrecv[T Elem](m *Message, buf []T) (*Request, error) {
	b, size := asBytes(buf)
	r := new(Request)
	if err := m.start(r, callImrecv, b, size); err != nil {
		return nil, withOp("imrecv", err)
	}
	return r, nil
}

// start receives m into r for the user's call.
func (m *Message) start(r *Request, call opCall, b []byte, esize int) error {
	if m == nil || m.w == nil {
		return invalidf("nil Message (take one with Mprobe or Improbe)")
	}
	e := m.w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if m.used {
		return invalidf("the Message was received already (Mrecv or Imrecv it once)")
	}
	if err := e.checkLocked(); err != nil {
		return err
	}
	if err := r.resetLocked(e); err != nil {
		return err
	}
	m.used = true
	r.kind, r.buf, r.esize, r.grp, r.call = reqRecv, b, esize, m.w.g, call
	if m.null {
		r.peer, r.tag, r.status = ProcNull, AnyTag, nullStatus()
		e.completeLocked(r, nil)
		return nil
	}
	u := m.m
	m.m = nil
	r.ctx, r.peer, r.tag = u.ctx, u.src, int(u.tag)
	e.takeUxLocked(r, u)
	return nil
}
