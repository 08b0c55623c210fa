package runtime

import (
	"context"
	"errors"
	"fmt"
	"github.com/gorma-hpc/gorma/internal/prof"
)

// Calls on several Requests at once (MPI_Waitany, MPI_Waitall, MPI_Waitsome and their
// Test forms) and the combined send and receive (MPI_Sendrecv).
//
// Nil entries of a set are skipped, as MPI skips MPI_REQUEST_NULL, and so are inactive
// persistent Requests in WaitAny, TestAny, WaitSome and TestSome. Where MPI reports the
// empty status (Source AnySource, Tag AnyTag, Count 0: emptyStatus), so do these calls:
// WaitAll and TestAll for a nil or inactive entry, WaitAny and TestAny when no entry is
// active. Every Request of one set must belong to one job (Worlds made by Dup or Sibling
// share their job).

// WaitAny blocks until one Request of rs has completed, or ctx ends, and returns its index,
// Status and error. It sets that entry of rs to nil (MPI_REQUEST_NULL), so that a loop of
// WaitAny over rs reports each Request once. With no active entry it returns -1 and the
// empty Status at once. When ctx ends first it returns -1 and ctx's error.
func WaitAny(ctx context.Context, rs []*Request) (int, Status, error) {
	e, err := setEngine(rs)
	if err != nil {
		return -1, Status{}, withOp("waitany", err)
	}
	if e == nil {
		return -1, emptyStatus, nil
	}
	defer e.obs.waitEnd(e.obs.waitStart(firstCtx(rs))) // after the unlock
	e.mu.Lock()
	defer e.mu.Unlock()
	set := activeSet(rs)
	if set == nil {
		return -1, emptyStatus, nil
	}
	i := doneIndex(set)
	if i < 0 {
		tok := &Request{e: e, kind: reqSync, waiter: waiter{wake: make(chan struct{}, 1)}}
		if err := e.untilLocked(ctx, tok, false, set); err != nil {
			e.poll.handoffLocked()
			return -1, Status{}, withOp("waitany", err)
		}
		i = doneIndex(set)
	}
	r := rs[i]
	rs[i] = nil
	e.poll.handoffLocked()
	st, err := r.reportLocked()
	return i, st, withOp(r.opName(), err)
}

// activeSet returns rs, or a copy of it whose inactive persistent requests are nil (the
// set calls skip them as they skip nil entries), or nil when no entry is active.
func activeSet(rs []*Request) []*Request {
	active, inactive := 0, 0
	for _, r := range rs {
		switch {
		case r == nil:
		case r.inactive:
			inactive++
		default:
			active++
		}
	}
	if active == 0 {
		return nil
	}
	if inactive == 0 {
		return rs
	}
	set := make([]*Request, len(rs))
	for i, r := range rs {
		if r != nil && !r.inactive {
			set[i] = r
		}
	}
	return set
}

// TestAny is WaitAny without blocking: it makes progress once and reports the index of a
// completed Request with ok true, or ok false when none has completed. With no active
// entry it reports ok true and index -1, as MPI_Testany does.
func TestAny(rs []*Request) (i int, ok bool, st Status, err error) {
	e, err := setEngine(rs)
	if err != nil {
		return -1, false, Status{}, withOp("testany", err)
	}
	if e == nil {
		return -1, true, emptyStatus, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	set := activeSet(rs)
	if set == nil {
		return -1, true, emptyStatus, nil
	}
	if doneIndex(set) < 0 && !e.poll.active {
		e.progressLocked()
	}
	if i = doneIndex(set); i < 0 {
		return -1, false, Status{}, nil
	}
	r := rs[i]
	rs[i] = nil
	st, err = r.reportLocked()
	return i, true, st, withOp(r.opName(), err)
}

// WaitSome blocks until at least one Request of rs has completed, or ctx ends, and returns
// the indices of every completed one, each set to nil in rs (MPI_Waitsome). statuses, if
// not nil, is as long as rs. Errors are as WaitAll's. With no active entry it returns no
// index at once.
func WaitSome(ctx context.Context, rs []*Request, statuses []Status) ([]int, error) {
	e, err := setEngine(rs)
	if err == nil && statuses != nil && len(statuses) != len(rs) {
		err = invalidf("%d statuses for %d requests", len(statuses), len(rs))
	}
	if e == nil || err != nil {
		return nil, withOp("waitsome", err)
	}
	defer e.obs.waitEnd(e.obs.waitStart(firstCtx(rs))) // after the unlock
	e.mu.Lock()
	defer e.mu.Unlock()
	set := activeSet(rs)
	if set == nil {
		return nil, nil
	}
	if doneIndex(set) < 0 {
		tok := &Request{e: e, kind: reqSync, waiter: waiter{wake: make(chan struct{}, 1), call: callWaitSome}}
		if err := e.untilLocked(ctx, tok, false, set); err != nil {
			e.poll.handoffLocked()
			return nil, withOp("waitsome", err)
		}
	}
	e.poll.handoffLocked()
	return someLocked("waitsome", rs, set, statuses)
}

// TestSome makes progress once and returns the indices of the completed Requests of rs
// as WaitSome does, or none when none has completed.
func TestSome(rs []*Request, statuses []Status) ([]int, error) {
	e, err := setEngine(rs)
	if err == nil && statuses != nil && len(statuses) != len(rs) {
		err = invalidf("%d statuses for %d requests", len(statuses), len(rs))
	}
	if e == nil || err != nil {
		return nil, withOp("testsome", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	set := activeSet(rs)
	if set == nil {
		return nil, nil
	}
	if !e.poll.active {
		e.progressLocked()
	}
	return someLocked("testsome", rs, set, statuses)
}

// someLocked reports the completed requests of set (rs with its inactive entries nil),
// setting them to nil in rs.
func someLocked(op string, rs, set []*Request, statuses []Status) ([]int, error) {
	var idx []int
	var errs []error
	for i, r := range set {
		if r == nil || !r.done {
			continue
		}
		idx = append(idx, i)
		rs[i] = nil
		st, err := r.reportLocked()
		if statuses != nil {
			statuses[i] = st
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("runtime: %s: request %d (%s): %w", op, i, r.opName(), err))
		}
	}
	return idx, errors.Join(errs...)
}

// WaitAll blocks until every Request of rs has completed, or ctx ends. statuses, if not nil,
// is as long as rs and receives each Request's Status (the empty Status for a nil or
// inactive entry). The error joins the failed Requests' errors, each naming its index. When
// ctx ends first it returns ctx's error and the Requests stay outstanding.
func WaitAll(ctx context.Context, rs []*Request, statuses []Status) error {
	e, err := setEngine(rs)
	if err == nil && statuses != nil && len(statuses) != len(rs) {
		err = invalidf("%d statuses for %d requests", len(statuses), len(rs))
	}
	if err != nil {
		return withOp("waitall", err)
	}
	if e == nil {
		emptyStatuses(statuses)
		return nil
	}
	if e.obs.Obs == nil && quickAll(rs) {
		return collectQuick("waitall", rs, statuses)
	}
	defer e.obs.waitEnd(e.obs.waitStart(firstCtx(rs))) // after the unlock
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range rs {
		if r != nil && !r.done {
			if err := e.waitLocked(ctx, r); err != nil {
				e.poll.handoffLocked()
				return withOp("waitall", err)
			}
		}
	}
	e.poll.handoffLocked()
	return collectLocked("waitall", rs, statuses)
}

// TestAll makes progress once and reports whether every Request of rs has completed; if so
// it fills statuses and returns errors as WaitAll does.
func TestAll(rs []*Request, statuses []Status) (bool, error) {
	e, err := setEngine(rs)
	if err == nil && statuses != nil && len(statuses) != len(rs) {
		err = invalidf("%d statuses for %d requests", len(statuses), len(rs))
	}
	if err != nil {
		return false, withOp("testall", err)
	}
	if e == nil {
		emptyStatuses(statuses)
		return true, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.poll.active {
		e.progressLocked()
	}
	for _, r := range rs {
		if r != nil && !r.done {
			return false, nil
		}
	}
	return true, collectLocked("testall", rs, statuses)
}

// emptyStatuses sets every entry of statuses to the empty Status.
func emptyStatuses(statuses []Status) {
	for i := range statuses {
		statuses[i] = emptyStatus
	}
}

// collectLocked fills statuses from completed rs (the empty Status for a nil entry) and
// joins their errors, each as "runtime: OP: request I (recv): cause".
func collectLocked(op string, rs []*Request, statuses []Status) error {
	var errs []error
	for i, r := range rs {
		if r == nil {
			if statuses != nil {
				statuses[i] = emptyStatus
			}
			continue
		}
		var err error
		if statuses == nil && r.finish == nil && r.pers == nil {
			err = r.err // all that reportLocked would tell, without its Status
		} else {
			var st Status
			st, err = r.reportLocked()
			if statuses != nil {
				statuses[i] = st
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("runtime: %s: request %d (%s): %w", op, i, r.opName(), err))
		}
	}
	return errors.Join(errs...)
}

// quickAll reports whether every non-nil Request of rs completed with nothing left to run
// under the engine's lock (Request.quick).
func quickAll(rs []*Request) bool {
	for _, r := range rs {
		if r != nil && r.quick.Load() == 0 {
			return false
		}
	}
	return true
}

// collectQuick is collectLocked for requests that quickAll accepts, without the lock.
func collectQuick(op string, rs []*Request, statuses []Status) error {
	var errs []error
	for i, r := range rs {
		switch {
		case r == nil && statuses != nil:
			statuses[i] = emptyStatus
		case r == nil:
		case statuses != nil:
			statuses[i] = r.statusOut()
		}
		if r != nil && r.err != nil {
			errs = append(errs, fmt.Errorf("runtime: %s: request %d (%s): %w", op, i, r.opName(), r.err))
		}
	}
	return errors.Join(errs...)
}

// setEngine returns the engine of the non-nil Requests of rs (nil if there are none), or
// the ErrInvalid error of a Request never started or of Requests of different jobs.
func setEngine(rs []*Request) (*engine, error) {
	var e *engine
	for i, r := range rs {
		if r == nil {
			continue
		}
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("request %d: %w", i, err)
		}
		if e != nil && r.e != e {
			return nil, invalidf("request %d belongs to another job than request 0's (every Request of a set must come from Worlds of one job)", i)
		}
		e = r.e
	}
	return e, nil
}

// Sendrecv sends sbuf to dest with stag and receives into rbuf from src with rtag, and
// returns the receive's Status once both are done (MPI_Sendrecv). The receive is posted
// first, so a ring of ranks that each send to the next never deadlocks. The receive's error
// comes first; ctx ending behaves as for Recv and Send.
func Sendrecv[S, R Elem](ctx context.Context, w *World, sbuf []S, dest, stag int, rbuf []R, src, rtag int) (Status, error) {
	st, err := sendrecvAs(ctx, callSendrecv, w, sbuf, dest, stag, rbuf, src, rtag)
	return st, withOp("sendrecv", err)
}

// sendrecvAs is Sendrecv for the user's call (Sendrecv, SendrecvReplace). It returns
// errors without the operation's name.
func sendrecvAs[S, R Elem](ctx context.Context, call opCall, w *World, sbuf []S, dest, stag int, rbuf []R, src, rtag int) (Status, error) {
	d, s, err := pairArgs(w, dest, src)
	if err != nil {
		return Status{}, err
	}
	sb, ssize := asBytes(sbuf)
	rb, rsize := asBytes(rbuf)
	st, err := w.e.sendrecv(ctx, call, w.ctx, sb, ssize, d, stag, rb, rsize, s, rtag, w.sibling)
	return outStatus(w, st), err
}

// pairArgs checks the World and the two ranks of a Sendrecv (ProcNull allowed) and
// returns them as job ranks.
func pairArgs(w *World, dest, src int) (int, int, error) {
	if err := w.live(); err != nil {
		return 0, 0, err
	}
	d, err := destOrNull(w, dest)
	if err != nil {
		return 0, 0, err
	}
	s, err := srcOrNull(w, src)
	if err != nil {
		return 0, 0, err
	}
	return d, s, nil
}

// sendrecv is the blocking Sendrecv of every caller; call names the user's call, callNone
// the runtime's own. A collective one fails when any peer has failed.
func (e *engine) sendrecv(ctx context.Context, call opCall, ctxID uint16, sbuf []byte, ssize, dest, stag int,
	rbuf []byte, rsize, src, rtag int, collective bool) (Status, error) {
	c := e.obs.begin(ctxID, prof.CallSendrecv)
	var flow uint64
	e.mu.Lock()
	defer e.mu.Unlock()
	defer func() { e.obs.endSend(c, ctxID, lSendrecv, dest, stag, len(sbuf), flow) }() // before the unlock
	if err := e.pairArgsLocked(dest, stag, src, rtag); err != nil {
		return Status{}, err
	}
	var rr, sr *Request
	if src != ProcNull {
		rr = e.match.newRequestLocked(e, reqRecv)
		rr.ctx, rr.peer, rr.tag, rr.buf, rr.esize, rr.anyFail = ctxID, src, rtag, rbuf, rsize, collective
		rr.inCall, rr.call = c.On(), call
		e.receiveLocked(rr)
	}
	if dest != ProcNull {
		e.obs.carryLocked()
		sr = e.startSendLocked(ctxID, sbuf, ssize, dest, stag)
		flow = e.obs.flowLocked()
		if sr != nil {
			sr.inCall, sr.call = c.On(), call
			sr.anyFail = collective // a collective's send: its wait ends once a peer failed (ft.go)
		}
	}
	st, rerr := nullStatus(), error(nil)
	if rr != nil {
		st, rerr = e.finishRecvLocked(ctx, rr, nil)
	}
	var serr error
	if sr != nil {
		serr = e.finishSendLocked(ctx, sr)
	}
	e.poll.handoffLocked()
	if rerr != nil {
		return st, rerr
	}
	return st, serr
}

// pairArgsLocked validates the ranks (ProcNull allowed) and tags of a Sendrecv.
func (e *engine) pairArgsLocked(dest, stag, src, rtag int) error {
	var err error
	if dest == ProcNull {
		err = e.nullArgsLocked(stag, false)
	} else {
		err = e.checkArgsLocked(dest, stag, false)
	}
	if err != nil {
		return err
	}
	if src == ProcNull {
		return e.nullArgsLocked(rtag, true)
	}
	return e.checkArgsLocked(src, rtag, true)
}
