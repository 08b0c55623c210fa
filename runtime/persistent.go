package runtime

import "fmt"

// Persistent requests (MPI_Send_init, MPI_Recv_init and the other modes' init calls,
// MPI_Start, MPI_Startall). A persistent Request holds one operation's arguments; Start
// runs the operation again on the same buffer. Between completion and the next Start it
// is inactive.

// persistent is what Start starts: the operation an init call described.
type persistent struct {
	w     *World
	kind  reqKind // reqSend or reqRecv
	mode  sendMode
	buf   []byte
	esize int
	peer  int // a job rank, AnySource or ProcNull
	tag   int
}

// sendMode is how a send completes: standard, synchronous, buffered, or ready (sent as a
// standard one).
type sendMode uint8

const (
	modeStandard sendMode = iota
	modeSync
	modeBuffered
	modeReady
)

// sendInits are the init calls of the send modes.
var sendInits = [...]opCall{modeStandard: callSendInit, modeSync: callSsendInit, modeBuffered: callBsendInit, modeReady: callRsendInit}

// call names p's init call, which names the waits for its Request in hang reports.
func (p *persistent) call() opCall {
	if p.kind == reqRecv {
		return callRecvInit
	}
	return sendInits[p.mode]
}

// SendInit returns an inactive persistent Request for sending buf to dest with tag
// (MPI_Send_init). Start sends buf's contents as Isend would; start it again once its
// completion was reported. Wait and Test on an inactive Request return the empty Status at
// once. buf belongs to the runtime while the Request is active; Free releases it.
func SendInit[T Elem](w *World, buf []T, dest, tag int) (*Request, error) {
	return initSend(w, buf, dest, tag, modeStandard, "send_init")
}

// SsendInit is SendInit for a synchronous send (MPI_Ssend_init): see Ssend.
func SsendInit[T Elem](w *World, buf []T, dest, tag int) (*Request, error) {
	return initSend(w, buf, dest, tag, modeSync, "ssend_init")
}

// BsendInit is SendInit for a buffered send (MPI_Bsend_init): each Start copies buf into
// the attached buffer (see Bsend), failing as Bsend does, and completes at once.
func BsendInit[T Elem](w *World, buf []T, dest, tag int) (*Request, error) {
	return initSend(w, buf, dest, tag, modeBuffered, "bsend_init")
}

// RsendInit is SendInit for a ready send (MPI_Rsend_init), which is sent as a standard
// one.
func RsendInit[T Elem](w *World, buf []T, dest, tag int) (*Request, error) {
	return initSend(w, buf, dest, tag, modeReady, "rsend_init")
}

// RecvInit returns a persistent Request for receiving into buf from src with tag
// (MPI_Recv_init); see SendInit.
func RecvInit[T Elem](w *World, buf []T, src, tag int) (*Request, error) {
	b, size := asBytes(buf)
	r, err := initRequest(w, reqRecv, modeStandard, b, size, src, tag)
	return r, withOp("recv_init", err)
}

func initSend[T Elem](w *World, buf []T, dest, tag int, mode sendMode, op string) (*Request, error) {
	b, size := asBytes(buf)
	r, err := initRequest(w, reqSend, mode, b, size, dest, tag)
	return r, withOp(op, err)
}

// initRequest checks an init call's arguments and returns its inactive Request.
func initRequest(w *World, kind reqKind, mode sendMode, b []byte, esize, peer, tag int) (*Request, error) {
	if err := w.live(); err != nil {
		return nil, err
	}
	recv := kind == reqRecv
	jr, err := peerOrNull(w, peer, recv)
	if err != nil {
		return nil, err
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if jr == ProcNull {
		err = e.nullArgsLocked(tag, recv)
	} else {
		err = e.checkArgsLocked(jr, tag, recv)
	}
	if err != nil {
		return nil, err
	}
	p := &persistent{w: w, kind: kind, mode: mode, buf: b, esize: esize, peer: jr, tag: tag}
	return &Request{e: e, kind: kind, done: true, status: emptyStatus,
		persState: persState{pers: p, inactive: true}, rndvState: rndvState{rndvRead: rndvRead{truncTo: -1}}}, nil
}

// Start starts the inactive persistent Request r (MPI_Start): never started, or its
// completion reported. A World freed or finalized since the init call fails it, and r stays
// inactive.
func Start(r *Request) error {
	if err := r.check(); err != nil {
		return withOp("start", err)
	}
	e := r.e
	e.mu.Lock()
	defer e.mu.Unlock()
	return withOp("start", e.startLocked(r))
}

// StartAll starts every Request of rs in order (MPI_Startall), skipping nil entries. At the
// first that cannot start it returns the error, naming the index.
func StartAll(rs []*Request) error {
	for i, r := range rs {
		if r == nil {
			continue
		}
		if err := r.check(); err != nil {
			return withOp("startall", fmt.Errorf("request %d: %w", i, err))
		}
		e := r.e
		e.mu.Lock()
		err := e.startLocked(r)
		e.mu.Unlock()
		if err != nil {
			return withOp("startall", fmt.Errorf("request %d: %w", i, err))
		}
	}
	return nil
}

func (e *engine) startLocked(r *Request) error {
	p := r.pers
	switch {
	case p == nil:
		return invalidf("the Request is not persistent (make it with SendInit or RecvInit)")
	case !r.inactive:
		return invalidf("the Request is active (Start it again once Wait or Test has reported its completion)")
	case r.parked || len(r.watchers) > 0:
		return invalidf("a goroutine is still waiting for the Request")
	}
	if err := p.w.live(); err != nil {
		return err
	}
	if err := e.checkLocked(); err != nil {
		return err
	}
	// The start functions reset r for a one-off operation; r is persistent again after.
	r.pers = nil
	var err error
	switch {
	case p.kind == reqRecv:
		err = e.irecvLocked(p.w, r, p.buf, p.esize, p.peer, p.tag, p.call())
	case p.mode == modeBuffered:
		err = e.bsendLocked(p.w, r, p.call(), p.buf, p.esize, p.peer, p.tag)
	default:
		err = e.isendLocked(p.w, r, p.buf, p.esize, p.peer, p.tag, p.call())
	}
	r.pers = p
	publish(&r.quick, 0) // a one-off that completed at once set it: reportLocked must run
	if err != nil {
		r.kind, r.done, r.inactive, r.status, r.err = p.kind, true, true, emptyStatus, nil
		return err
	}
	return nil
}
