package runtime

import (
	"context"
	"sync/atomic"

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

	// Completion, guarded by the engine's mu.
	done bool
	// quick is set, after every field a report reads, when the request completes with
	// nothing for reportLocked to run (no finish, not persistent): Wait then reports it
	// without the engine's lock (quickReport).
	quick  atomic.Uint64 // 1: set (publish: a plain store on amd64, not a locked one)
	status Status
	err    error
	// finish, when set, runs once as the completed request is reported (reportLocked,
	// under the engine's lock), and may change the outcome. A typed receive unpacks its
	// pooled buffer into its layout there, a typed send returns its buffer to the pool.
	finish func(Status, error) (Status, error)

	// The request's place in the posted or probe queue, guarded by mu.
	link matching.Link[Request]

	pooled    bool   // owned by the engine: recycled once done and no longer referenced
	detached  bool   // a pooled request whose caller gave up (ctx): recycle at completion
	freed     bool   // Free was called: no call may use it again until it is reused
	cancelled bool   // Cancel reached it before it matched: complete with Status.Cancelled
	anyFail   bool   // a receive of a collective (Barrier, a Sibling World): fails when any peer fails; a collective's blocking send: its wait ends then (ft.go)
	grp       *group // a receive on a World made by Split: Status.Source is translated

	// Per-kind state. Each part is used by the kinds its doc names and is zero otherwise.
	waiter     // every kind: the goroutines waiting on it
	rndvState  // reqSend, reqRecv: a rendezvous
	sendState  // reqSend
	pairState  // reqPair and its parts
	persState  // persistent requests (SendInit, RecvInit)
	probeState // reqProbe of Mprobe
}

// waiter is who waits on a Request, guarded by the engine's mu.
type waiter struct {
	// Waiting goroutines that are not the poller park on wake; parked is set while one
	// does.
	wake   chan struct{}
	parked bool
	// watchers are the parking tokens of WaitAny calls parked on a set holding this
	// request: its completion wakes them too.
	watchers []*Request

	// A blocking wait on it (hang.go).
	call     opCall // the user's call that started it (opcall.go); callNone for the engine's own
	waitFrom int64  // coarseNow when the wait began; 0: not waited on
	waitCall string // the call that waits
	waitObs  int64  // the observer's clock when the wait began, when the timeline is on
	inCall   bool   // an observed call (Send, Recv) records its waits in its own event
	carry    bool   // an observed Recv call ends its message's flow on its own event
	flow     uint64 // the number of that message (observer.matched)
	obsFrom  int64  // the timeline's stamp when its wait began (polled.stamps), 0 when not read
	obsAt    int64  // the timeline's stamp at its match (observer.matched), 0 when not read
	waitIdx  int    // its index in the hangWatch's waiting
}

// rndvState is a send's or a receive's rendezvous. A send that offered its buffer (RTS)
// and a receive that reads one hold a slot in the matcher's table until FIN (send) or
// until the read completed (receive).
type rndvState struct {
	slot      uint32
	gen       uint32
	inTable   bool
	lay       *layIO // a typed send's layout offer, or a typed receive's layout (rndv_iov.go)
	rndvOffer        // reqSend: the offered buffer
	rndvRead         // reqRecv: the read of an offer
}

// rndvOffer is a rendezvous send's buffer, as the receiver reads it.
type rndvOffer struct {
	mr      verbs.MR        // the buffer's registration
	mrOwned bool            // mr is a private copy, deregistered at completion
	mrCache *arena.RegCache // mr came from this cache, put back at completion
	mrOff   uint64          // the buffer's offset in mr
}

// rndvRead is a receive's RDMA read of a rendezvous offer.
type rndvRead struct {
	rkey    uint64 // the offered buffer's key
	roff    uint64 // the offered buffer's offset under rkey
	rlen    int    // bytes to read (len(buf) or less)
	reads   int    // RDMA reads outstanding
	fin     uint64 // the sender's cookie, returned in FIN
	truncTo int    // the full message length when it did not fit, else -1
}

// sendState is a send's mode and its place on the way out.
type sendState struct {
	synchronous bool // Ssend: by rendezvous, complete once matched
	outQueued   bool // waiting in its peer's out queue (eager message or RTS)
	dropped     bool // still in the out queue when its caller gave up or cancelled: never posted
	cancelAsked bool // Cancel asked the receiver to withdraw its rendezvous offer (msgCancel)
}

// pairState links an Isendrecv (reqPair) and its two parts.
type pairState struct {
	parent *Request    // a part: the Isendrecv whose completion it may complete
	parts  [2]*Request // the Isendrecv: the receive and the send
}

// persState is a persistent request's arguments and activity.
type persState struct {
	pers     *persistent // what Start starts
	inactive bool        // not started, or its completion was reported
}

// probeState is an Mprobe's probe.
type probeState struct {
	mprobe bool   // takes the message it finds (msg)
	msg    *uxMsg // the message it took
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
	if r != nil && r.quick.Load() != 0 && r.e.obs.Obs == nil {
		return r.quickReport()
	}
	if err := r.check(); err != nil {
		return Status{}, withOp("wait", err)
	}
	e := r.e
	t0 := e.obs.waitStart(r.ctx)
	e.mu.Lock()
	err := e.waitLocked(ctx, r)
	var st Status
	if err == nil {
		st, err = r.reportLocked()
	}
	err = withOp(r.opName(), err)
	e.poll.handoffLocked()
	e.mu.Unlock()
	e.obs.waitEnd(t0)
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
	if !r.done && !e.poll.active {
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

// setFinish sets r's finish, under the engine's lock: the operation may have completed
// already, quick set, and reportLocked must now run it.
func (r *Request) setFinish(f func(Status, error) (Status, error)) {
	r.e.mu.Lock()
	r.finish = f
	publish(&r.quick, 0)
	r.e.mu.Unlock()
}

// quickReport is reportLocked for a request whose quick is set, without the lock: a
// send that left at once, or a receive that a call before matched. It saves Wait two
// locked instructions per message (`bin/golaunch -n 2 bin/pingpong --test bw --max-size
// 8` measures the message rate).
func (r *Request) quickReport() (Status, error) {
	if r.err != nil {
		return r.statusOut(), withOp(r.opName(), r.err)
	}
	return r.statusOut(), nil
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

// completeLocked finishes r with err and wakes its waiter (matcher.completeLocked), then
// releases the contexts of a freed World whose last operation r was. The caller holds mu.
func (e *engine) completeLocked(r *Request, err error) {
	if r.done {
		return
	}
	ctx := r.ctx // a detached request is recycled on completion
	e.match.completeLocked(r, err)
	if e.late != nil {
		e.settleLocked(ctx)
	}
}
