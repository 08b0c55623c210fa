package runtime

import (
	"context"

	"github.com/gorma-hpc/gorma/runtime/internal/matching"

	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

// reqKind is what a Request does.
type reqKind uint8

const (
	reqSend  reqKind = iota + 1 // a message to peer
	reqRecv                     // a receive from peer (or AnySource)
	reqProbe                    // waits for a matching message without receiving it
	reqSync                     // completed by the engine itself (Finalize's fence)
	reqPair                     // Isendrecv: completes when its two parts have
)

// Request is an outstanding non-blocking operation (Isend, Irecv, the other I- calls) or a
// persistent one (SendInit, RecvInit: see Start). Wait blocks until it completes; Test
// reports whether it has. It is safe for concurrent use, and may be waited for again after
// it completed: Wait returns the same outcome at once (an inactive persistent one, the empty
// Status). The buffer passed to Isend or Irecv belongs to the runtime until it completes.
type Request struct {
	e    *engine
	kind reqKind

	// What to match: context, peer (destination of a send, source of a receive, which
	// may be AnySource) and tag (AnyTag for receives).
	ctx  uint16
	peer int
	tag  int

	buf   []byte // user memory: the message (send) or where it goes (receive)
	esize int    // element size, for Status.Count

	// Rendezvous. A send that offered its buffer (RTS) and a receive that reads one hold a
	// slot in the engine's table until FIN (send) or until the read completed (receive).
	slot    uint32
	gen     uint32
	inTable bool
	mr      verbs.MR        // send: the buffer's registration
	mrOwned bool            // send: mr is a private copy, deregistered at completion
	mrCache *arena.RegCache // send: mr came from this cache, put back at completion
	rkey    uint64          // receive: the offered buffer
	roff    uint64
	rlen    int    // receive: bytes to read (len(buf) or less)
	reads   int    // receive: RDMA reads outstanding
	fin     uint64 // receive: the sender's cookie, returned in FIN
	truncTo int    // receive: the full message length when it did not fit, else -1
	lay     *layIO // a typed send's layout offer, or a typed receive's layout (rndv_iov.go)

	// A blocking wait on it (hang.go), guarded by the engine's mu.
	waitFrom int64  // coarseNow when the wait began; 0: not waited on
	waitCall string // the call that waits
	waitIdx  int    // its index in engine.waiting

	// Completion, guarded by the engine's mu.
	done   bool
	status Status
	err    error
	// finish, when set, runs once as the completed request is reported (reportLocked,
	// under the engine's lock), and may change the outcome. A typed receive unpacks its
	// pooled buffer into its layout there, a typed send returns its buffer to the pool.
	finish func(Status, error) (Status, error)

	// The request's place in the posted or probe queue, guarded by mu.
	link matching.Link[Request]

	// Waiting goroutines that are not the poller park on wake.
	wake    chan struct{}
	waiting bool
	// watchers are the parking tokens of WaitAny calls parked on a set holding this
	// request: its completion wakes them too.
	watchers []*Request

	pooled    bool   // owned by the engine: recycled once done and no longer referenced
	detached  bool   // a pooled request whose caller gave up (ctx): recycle at completion
	canceled  bool   // a queued send whose caller gave up before it was posted
	outQueued bool   // a send waiting in its peer's out queue (eager message or RTS)
	anyFail   bool   // a receive of a collective (Barrier, a Sibling World): fails when any peer fails
	grp       *group // a receive on a World made by Split: Status.Source is translated

	sync        bool        // a synchronous send (Ssend): by rendezvous, complete once matched
	cancelled   bool        // Cancel reached it before it matched: complete with Status.Cancelled
	cancelAsked bool        // Cancel asked the receiver to withdraw its rendezvous offer (msgCancel)
	freed       bool        // Free was called: no call may use it again until it is reused
	parent      *Request    // a part of an Isendrecv, whose completion it may complete
	parts       [2]*Request // reqPair: the receive and the send
	pers        *persistent // a persistent request (SendInit, RecvInit): what Start starts
	inactive    bool        // a persistent request not started, or whose completion was reported
	mprobe      bool        // a probe of Mprobe: takes the message it finds (msg)
	msg         *uxMsg      // the message an Mprobe took
}

// want is the Envelope receive (or probe) r asks for.
func (r *Request) want() matching.Envelope {
	return matching.Envelope{Ctx: r.ctx, Src: r.peer, Tag: int32(r.tag)}
}

// statusOut is the Status the caller sees: Source in the numbering of the request's World.
func (r *Request) statusOut() Status {
	st := r.status
	if r.grp != nil && st.Source >= 0 && st.Source < len(r.grp.of) {
		st.Source = int(r.grp.of[st.Source])
	}
	return st
}

// Status describes a received (or probed) message.
type Status struct {
	Source int // the sending rank
	Tag    int // the message's tag
	Count  int // elements received: Bytes divided by the element size (Probe: bytes)
	Bytes  int // bytes received (Probe: the message's length)
	// Cancelled reports that Cancel withdrew the operation before it matched; the other
	// fields are then zero.
	Cancelled bool
}

// Wait blocks until the request completes or ctx ends, and returns its outcome. For a
// receive, Status describes the message; for a send it is the zero Status. When ctx ends
// first, Wait returns ctx's error and the request stays outstanding: Wait or Test again.
func (r *Request) Wait(ctx context.Context) (Status, error) {
	if err := r.check(); err != nil {
		return Status{}, withOp("wait", err)
	}
	e := r.e
	e.mu.Lock()
	err := e.waitLocked(ctx, r)
	var st Status
	if err == nil {
		st, err = r.reportLocked()
	}
	err = withOp(r.opName(), err)
	e.handoffLocked()
	e.mu.Unlock()
	return st, err
}

// Test reports whether the request has completed, and if so its outcome. It makes
// progress on the way but never blocks.
func (r *Request) Test() (bool, Status, error) {
	if err := r.check(); err != nil {
		return false, Status{}, withOp("test", err)
	}
	e := r.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if !r.done && !e.polling {
		e.progressLocked()
	}
	if !r.done {
		return false, Status{}, nil
	}
	st, err := r.reportLocked()
	return true, st, err
}

// reportLocked returns the outcome of completed r to a caller of Wait, Test and the set
// calls. A persistent request reported becomes inactive: later reports are empty.
func (r *Request) reportLocked() (Status, error) {
	st, err := r.statusOut(), r.err
	if f := r.finish; f != nil {
		r.finish = nil
		st, err = f(st, err)
	}
	if r.pers != nil {
		r.status, r.err, r.inactive = emptyStatus, nil, true
	}
	return st, err
}

// emptyStatus is what Wait and Test report of an inactive persistent Request: MPI's empty
// status (source MPI_ANY_SOURCE, tag MPI_ANY_TAG, count 0).
var emptyStatus = Status{Source: AnySource, Tag: AnyTag}

// check returns the ErrInvalid error of a nil or never-started Request, or nil.
func (r *Request) check() error {
	switch {
	case r == nil:
		return invalidf("nil Request")
	case r.e == nil:
		return invalidf("the Request has not been started (pass it to IsendWith or IrecvWith first)")
	case r.freed:
		return invalidf("the Request was freed (Free)")
	}
	return nil
}

func (r *Request) opName() string {
	switch r.kind {
	case reqSend:
		return "send"
	case reqRecv:
		return "recv"
	case reqProbe:
		return "probe"
	case reqPair:
		return "isendrecv"
	}
	return "finalize"
}

// completeLocked finishes r with err and wakes its waiter. The caller holds mu.
func (e *engine) completeLocked(r *Request, err error) {
	if r.done {
		return
	}
	if err != nil && r.err == nil {
		r.err = err
	}
	ctx := r.ctx // a detached request is recycled below
	r.done = true
	e.progress++
	if r.inTable {
		e.table.release(r)
	}
	switch {
	case r.mr == nil:
	case r.mrOwned:
		r.mr.Dereg()
	case r.mrCache != nil:
		r.mrCache.Put(r.mr)
	}
	r.mr, r.mrCache = nil, nil
	if r.waiting {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
	for _, w := range r.watchers {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	if r.detached {
		e.recycleLocked(r)
	}
	if r.parent != nil {
		e.partDoneLocked(r.parent)
	}
	if e.late != nil {
		e.settleLocked(ctx)
	}
}

// newRequest returns a pooled request for a blocking call.
func (e *engine) newRequestLocked(kind reqKind) *Request {
	var r *Request
	if n := len(e.pool); n > 0 {
		r = e.pool[n-1]
		e.pool = e.pool[:n-1]
	} else {
		r = &Request{e: e, pooled: true}
	}
	r.kind = kind
	r.truncTo = -1
	return r
}

// recycleLocked returns a pooled request to the pool once nothing refers to it.
func (e *engine) recycleLocked(r *Request) {
	if !r.pooled {
		return
	}
	wake := r.wake
	*r = Request{e: e, pooled: true, wake: wake}
	if len(e.pool) < maxPooledRequests {
		e.pool = append(e.pool, r)
	}
}

const maxPooledRequests = 64

// reqTable holds requests in a rendezvous, found by the cookie carried in RTS and FIN, or
// by the WRID of an RDMA read. A cookie is slot | generation<<32, so a stale or forged
// cookie finds nothing.
type reqTable struct {
	slots     []*Request
	gens      []uint32
	free      []uint32
	sends     int // send requests in the table (awaiting FIN)
	sendBytes int // their bytes
}

func (t *reqTable) add(r *Request) {
	var i uint32
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		i = uint32(len(t.slots))
		t.slots = append(t.slots, nil)
		t.gens = append(t.gens, 0)
	}
	t.gens[i]++
	t.slots[i] = r
	r.slot, r.gen, r.inTable = i, t.gens[i], true
	if r.kind == reqSend {
		t.sends++
		t.sendBytes += len(r.buf)
	}
}

func (t *reqTable) release(r *Request) {
	t.slots[r.slot] = nil
	t.free = append(t.free, r.slot)
	r.inTable = false
	if r.kind == reqSend {
		t.sends--
		t.sendBytes -= len(r.buf)
	}
}

func (r *Request) cookie() uint64 { return uint64(r.slot) | uint64(r.gen)<<32 }

// lookup returns the request of cookie, or nil.
func (t *reqTable) lookup(cookie uint64) *Request {
	i := uint32(cookie)
	if int(i) >= len(t.slots) || t.gens[i] != uint32(cookie>>32) {
		return nil
	}
	return t.slots[i]
}
