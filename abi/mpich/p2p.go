//go:build cgo

package mpich

import (
	"context"
	"errors"
	"unsafe"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// statusArg is the status pointer st, or nil for MPI_STATUS_IGNORE.
func statusArg(st unsafe.Pointer) *Status {
	if uintptr(st) == statusIgnore {
		return nil
	}
	return (*Status)(st)
}

// bytes is the status's byte count.
func (s *Status) bytes() int64 {
	return int64(uint32(s.countLo)) | int64(s.countHiCancelled>>1)<<32
}

// set fills s from a runtime Status; s may be nil (ignored).
func (s *Status) set(st runtime.Status) {
	if s == nil {
		return
	}
	s.Source, s.Tag = int32(st.Source), int32(st.Tag)
	switch st.Source {
	case runtime.ProcNull:
		s.Source = mpi_PROC_NULL
	case runtime.AnySource:
		s.Source = mpi_ANY_SOURCE
	}
	if st.Tag == runtime.AnyTag {
		s.Tag = mpi_ANY_TAG
	}
	n := int64(st.Bytes)
	s.countLo = int32(n)
	s.countHiCancelled = int32(n>>32) << 1
	if st.Cancelled {
		s.countHiCancelled |= 1
	}
}

// empty sets s to MPI's empty status (any source, any tag, no data), what a null or
// inactive request gives; s may be nil. MPI_ERROR is left as it is, as MPICH leaves it.
func (s *Status) empty() { s.set(noStatus) }

// dest checks the destination rank r of a send on w.
func dest(w *runtime.World, r int) (int, error) {
	if r == mpi_PROC_NULL {
		return runtime.ProcNull, nil
	}
	if n := peers(w); r < 0 || r >= n {
		return 0, errRank(r, n)
	}
	return r, nil
}

// source checks the source rank r of a receive or probe on w.
func source(w *runtime.World, r int) (int, error) {
	if r == mpi_ANY_SOURCE {
		return runtime.AnySource, nil
	}
	return dest(w, r)
}

// peers is the number of ranks a point-to-point call on w may name, and the number of
// blocks a collective's per-rank buffers hold: the World's size, or on an
// intercommunicator the remote group's.
func peers(w *runtime.World) int {
	if w.IsInter() {
		return w.RemoteSize()
	}
	return w.Size()
}

// recvTag maps MPI_ANY_TAG.
func recvTag(tag int) int {
	if tag == mpi_ANY_TAG {
		return runtime.AnyTag
	}
	return tag
}

// msgArgs checks the arguments a point-to-point call shares and returns its World, its
// datatype and its buffer.
func msgArgs(buf unsafe.Pointer, count int, d Datatype, c Comm) (*runtime.World, *dtype, []byte, error) {
	w, err := worldOf(c)
	if err != nil {
		return nil, nil, nil, err
	}
	t, err := typeOf(d)
	if err != nil {
		return nil, nil, nil, err
	}
	b, err := spanOf(buf, count, t)
	return w, t, b, err
}

// doSend is MPI_Send.
func doSend(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm) error {
	return send(runtime.Send[byte], buf, count, d, to, tag, c)
}

// doSsend is MPI_Ssend.
func doSsend(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm) error {
	return send(runtime.Ssend[byte], buf, count, d, to, tag, c)
}

// doRsend is MPI_Rsend.
func doRsend(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm) error {
	return send(runtime.Rsend[byte], buf, count, d, to, tag, c)
}

type sendFunc func(ctx context.Context, w *runtime.World, buf []byte, dest, tag int) error

func send(f sendFunc, buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm) error {
	w, t, b, err := msgArgs(buf, count, d, c)
	if err != nil {
		return err
	}
	to, err = dest(w, to)
	if err != nil {
		return err
	}
	if t.contig {
		return f(bg, w, b, to, tag)
	}
	return runtime.SendType(bg, w, b, count, t.layout, to, tag)
}

// doRecv is MPI_Recv.
func doRecv(buf unsafe.Pointer, count int, d Datatype, from, tag int, c Comm, st *Status) error {
	w, t, b, err := msgArgs(buf, count, d, c)
	if err != nil {
		return err
	}
	from, err = source(w, from)
	if err != nil {
		return err
	}
	var rs runtime.Status
	if t.contig {
		rs, err = runtime.Recv(bg, w, b, from, recvTag(tag))
	} else {
		rs, err = runtime.RecvType(bg, w, b, count, t.layout, from, recvTag(tag))
	}
	st.set(rs)
	return err
}

// A request is an outstanding nonblocking or persistent call: a message's, a
// collective's, a one-sided operation's, a neighbourhood collective's (neighbor.go) or a
// generalized request. One kind's field is
// set. A request with none is complete from the start, its outcome held (MPI_Imrecv of
// MPI_MESSAGE_NO_PROC). Each method below dispatches on the kind: a kind is added there.
type request struct {
	p2p  *runtime.Request
	coll *collectives.Request
	rma  *window.Request
	grq  *grequest
	topo *nbRequest
	part *partReq // a partitioned request (partitioned.go)
	// persistent marks a request of an init call (MPI_Send_init, MPI_Allreduce_init):
	// reporting its completion leaves its handle, inactive until the next MPI_Start.
	persistent bool
	inactive   bool      // a persistent request not started, or whose completion was reported
	typed      *typedBuf // a derived datatype's data, packed before each start or unpacked after each completion
	held       *outcome  // a completion taken from the layer below, not yet reported to the program
	heldIn     outcome   // where settle keeps held, so that a completion allocates nothing
}

// An outcome is how a request's call ended.
type outcome struct {
	st  runtime.Status
	err error
}

var reqs = newTable[*request](kindRequest)

// addPersistent registers r, the request of an init call, inactive until MPI_Start.
func addPersistent(r *request, out *Request) {
	r.persistent, r.inactive = true, true
	*out = Request(reqs.add(r))
}

// noStatus is the status of a request that carries none (a collective's, a one-sided
// operation's) and MPI's empty status: any source, any tag, no data.
var noStatus = runtime.Status{Source: runtime.AnySource, Tag: runtime.AnyTag}

// active reports whether r is a request that a set call waits for: not
// MPI_REQUEST_NULL (nil) and not an inactive persistent one.
func (r *request) active() bool { return r != nil && !r.inactive }

// complete waits for (block) or tests r's call and, once it has ended, holds its
// outcome until report hands it out. It reports whether r has completed; an inactive
// request has.
func (r *request) complete(block bool) bool {
	if r.held != nil || r.inactive {
		return true
	}
	var o outcome
	done := true
	switch {
	case r.coll != nil:
		o.st = noStatus
		if block {
			o.err = r.coll.Wait(bg)
		} else {
			done, o.err = r.coll.Test()
		}
	case r.rma != nil:
		o.st = noStatus
		if block {
			o.err = r.rma.Wait(bg)
		} else {
			done, o.err = r.rma.Test()
		}
	case r.grq != nil:
		o.st = noStatus
		done, o.err = r.grq.complete(block)
	case r.topo != nil:
		o.st = noStatus
		if block {
			o.err = r.topo.wait(bg)
		} else {
			done, o.err = r.topo.test()
		}
	case r.p2p != nil:
		if block {
			o.st, o.err = r.p2p.Wait(bg)
		} else {
			done, o.st, o.err = r.p2p.Test()
		}
	case r.part != nil:
		if done, o.st, o.err = r.part.complete(bg, block); done {
			r.part.settled()
		}
	}
	if done {
		r.settle(o)
	}
	return done
}

// block returns once r has completed or ctx has ended, and reports nothing. It serves
// the set calls for the kinds that the runtime's set calls do not wait for.
func (r *request) block(ctx context.Context) {
	switch {
	case r.held != nil || r.inactive:
	case r.coll != nil:
		_ = r.coll.Wait(ctx) // its outcome is read by complete
	case r.rma != nil:
		_ = r.rma.Wait(ctx)
	case r.grq != nil:
		r.grq.block(ctx)
	case r.topo != nil:
		_ = r.topo.wait(ctx)
	case r.part != nil:
		_, _, _ = r.part.complete(ctx, true)
	}
}

// settle holds o, the outcome of r's call from the layer below: a receive into a
// derived datatype is unpacked.
func (r *request) settle(o outcome) {
	if t := r.typed; t != nil && t.recv && (o.err == nil || errors.Is(o.err, runtime.ErrTruncated)) {
		if err := t.unpack(o.st.Bytes); err != nil && o.err == nil {
			o.err = err
		}
	}
	r.heldIn = o
	r.held = &r.heldIn
}

// outcome is r's held outcome. A generalized request's comes from its query
// function, called at each report and MPI_Request_get_status, as MPICH does, unless
// its poll function failed.
func (r *request) outcome() outcome {
	if r.grq != nil && r.held.err == nil {
		return r.grq.query()
	}
	return *r.held
}

// report hands out r's held outcome: a persistent request becomes inactive, and an
// inactive one reports the empty status.
func (r *request) report() (runtime.Status, error) {
	if r.held == nil {
		return noStatus, nil
	}
	o := r.outcome()
	r.held, r.inactive = nil, r.persistent
	return o.st, o.err
}

// wait waits for r and reports its outcome.
func (r *request) wait() (runtime.Status, error) {
	r.complete(true)
	return r.report()
}

// test reports r's outcome if it has completed.
func (r *request) test() (bool, runtime.Status, error) {
	if !r.complete(false) {
		return false, runtime.Status{}, nil
	}
	st, err := r.report()
	return true, st, err
}

// retire ends the handle *h of r, whose completion was reported: a nonblocking
// request's handle is freed and set to MPI_REQUEST_NULL, a persistent one's stays. A
// generalized request's free function runs; its error is returned.
func (r *request) retire(h *Request) error {
	if r.persistent {
		return nil
	}
	reqs.del(int32(*h))
	*h = mpi_REQUEST_NULL
	if r.grq != nil {
		return r.grq.release()
	}
	return nil
}

// doCancel is MPI_Cancel: a receive or send that has not matched is withdrawn; its
// status then says so (MPI_Test_cancelled). A generalized request's cancel function is
// called. Other requests cannot be cancelled.
func doCancel(req *Request) error {
	r, ok := reqs.get(int32(*req))
	if !ok {
		return errHandle("request", int32(*req))
	}
	switch {
	case r.grq != nil:
		return r.grq.cancel()
	case r.p2p != nil:
		return r.p2p.Cancel()
	case r.held != nil:
		return nil // complete already (a receive of MPI_MESSAGE_NO_PROC): nothing to withdraw
	}
	return mpiErr(mpi_ERR_REQUEST, "only a point-to-point or generalized request can be cancelled")
}

// doTestCancelled is MPI_Test_cancelled.
func doTestCancelled(st *Status, flag *int32) error {
	if st == nil {
		return mpiErr(mpi_ERR_ARG, "status is MPI_STATUS_IGNORE")
	}
	*flag = st.countHiCancelled & 1
	return nil
}

// doIsend is MPI_Isend.
func doIsend(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm, req *Request) error {
	w, t, b, err := msgArgs(buf, count, d, c)
	if err != nil {
		return err
	}
	if to, err = dest(w, to); err != nil {
		return err
	}
	var r *runtime.Request
	if t.contig {
		r, err = runtime.Isend(w, b, to, tag)
	} else {
		r, err = runtime.IsendType(w, b, count, t.layout, to, tag)
	}
	if err != nil {
		return err
	}
	*req = Request(reqs.add(&request{p2p: r}))
	return nil
}

// doIrecv is MPI_Irecv.
func doIrecv(buf unsafe.Pointer, count int, d Datatype, from, tag int, c Comm, req *Request) error {
	w, t, b, err := msgArgs(buf, count, d, c)
	if err != nil {
		return err
	}
	if from, err = source(w, from); err != nil {
		return err
	}
	var r *runtime.Request
	if t.contig {
		r, err = runtime.Irecv(w, b, from, recvTag(tag))
	} else {
		r, err = runtime.IrecvType(w, b, count, t.layout, from, recvTag(tag))
	}
	if err != nil {
		return err
	}
	*req = Request(reqs.add(&request{p2p: r}))
	return nil
}

// doWait is MPI_Wait.
func doWait(req *Request, st *Status) error {
	if *req == mpi_REQUEST_NULL {
		st.empty()
		return nil
	}
	r, ok := reqs.get(int32(*req))
	if !ok {
		return errHandle("request", int32(*req))
	}
	rs, err := r.wait()
	st.set(rs)
	return errors.Join(err, r.retire(req))
}

// doTest is MPI_Test.
func doTest(req *Request, flag *int32, st *Status) error {
	if *req == mpi_REQUEST_NULL {
		*flag = 1
		st.empty()
		return nil
	}
	r, ok := reqs.get(int32(*req))
	if !ok {
		return errHandle("request", int32(*req))
	}
	done, rs, err := r.test()
	*flag = b2i(done)
	if done {
		st.set(rs)
		err = errors.Join(err, r.retire(req))
	}
	return err
}

// doWaitall is MPI_Waitall. A failed request's error is in its status's MPI_ERROR, and
// the call returns MPI_ERR_IN_STATUS.
func doWaitall(n int, rs *Request, sts *Status) error {
	if n < 0 {
		return errCount(n)
	}
	if n == 0 {
		return nil
	}
	hs := unsafe.Slice(rs, n)
	waitExtended(hs)
	var ss []Status
	if sts != nil {
		ss = unsafe.Slice(sts, n)
	}
	var first error
	failed := 0
	for i := range hs {
		var st *Status
		if ss != nil {
			st = &ss[i]
		}
		if err := doWait(&hs[i], st); err != nil {
			failed++
			if first == nil {
				first = err
			}
			if st != nil {
				st.Error = int32(classOf(err))
			}
		} else if st != nil {
			st.Error = mpi_SUCCESS
		}
	}
	if failed > 1 || (failed == 1 && ss != nil) {
		return mpiErr(mpi_ERR_IN_STATUS, first.Error())
	}
	return first
}

// doRequestFree is MPI_Request_free: the request completes on its own.
func doRequestFree(req *Request) error {
	r, ok := reqs.get(int32(*req))
	if !ok {
		return errHandle("request", int32(*req))
	}
	if r.rma != nil {
		return mpiErr(mpi_ERR_REQUEST, "a one-sided request cannot be freed before it completes: wait for it")
	}
	if r.grq != nil {
		h := int32(*req)
		*req = mpi_REQUEST_NULL
		return r.grq.freeReq(h)
	}
	if r.coll != nil {
		if err := r.coll.Free(); err != nil {
			return err // the handle stays
		}
	}
	if r.topo != nil {
		if err := r.topo.free(); err != nil {
			return err // the handle stays
		}
	}
	if r.part != nil {
		r.part.free()
	}
	reqs.del(int32(*req))
	*req = mpi_REQUEST_NULL
	switch {
	case r.p2p == nil:
		return nil
	case r.typed != nil && r.typed.recv && r.active() && r.held == nil:
		// The data reaches the layout only through settle: a goroutine waits for it.
		go r.complete(true)
		return nil
	}
	return r.p2p.Free()
}

// doProbe is MPI_Probe.
func doProbe(from, tag int, c Comm, st *Status) error {
	w, err := worldOf(c)
	if err != nil {
		return err
	}
	if from, err = source(w, from); err != nil {
		return err
	}
	rs, err := runtime.Probe(bg, w, from, recvTag(tag))
	st.set(rs)
	return err
}

// doIprobe is MPI_Iprobe.
func doIprobe(from, tag int, c Comm, flag *int32, st *Status) error {
	w, err := worldOf(c)
	if err != nil {
		return err
	}
	if from, err = source(w, from); err != nil {
		return err
	}
	ok, rs, err := runtime.Iprobe(w, from, recvTag(tag))
	*flag = b2i(ok)
	if ok {
		st.set(rs)
	}
	return err
}

// doSendrecv is MPI_Sendrecv.
func doSendrecv(sbuf unsafe.Pointer, scount int, sd Datatype, to, stag int,
	rbuf unsafe.Pointer, rcount int, rd Datatype, from, rtag int, c Comm, st *Status) error {
	w, stt, sb, err := msgArgs(sbuf, scount, sd, c)
	if err != nil {
		return err
	}
	rt, err := typeOf(rd)
	if err != nil {
		return err
	}
	rb, err := spanOf(rbuf, rcount, rt)
	if err != nil {
		return err
	}
	if to, err = dest(w, to); err != nil {
		return err
	}
	if from, err = source(w, from); err != nil {
		return err
	}
	var rs runtime.Status
	if stt.contig && rt.contig {
		rs, err = runtime.Sendrecv(bg, w, sb, to, stag, rb, from, recvTag(rtag))
	} else {
		rs, err = runtime.SendrecvType(bg, w, sb, scount, stt.layout, to, stag, rb, rcount, rt.layout, from, recvTag(rtag))
	}
	st.set(rs)
	return err
}

// doTestall is MPI_Testall: when every request has completed, each is freed and its
// status set; otherwise none is, and those that completed hold their outcome.
func doTestall(n int, rs *Request, flag *int32, sts *Status) error {
	if n < 0 {
		return errCount(n)
	}
	*flag = 1
	if n == 0 {
		return nil
	}
	hs := unsafe.Slice(rs, n)
	for _, h := range hs {
		if h == mpi_REQUEST_NULL {
			continue
		}
		r, ok := reqs.get(int32(h))
		if !ok {
			return errHandle("request", int32(h))
		}
		if !r.complete(false) {
			*flag = 0
			return nil
		}
	}
	return doWaitall(n, rs, sts)
}
