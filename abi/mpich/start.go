//go:build cgo

package mpich

import (
	"fmt"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
)

// Persistent point-to-point requests (MPI_Send_init and the other modes', MPI_Recv_init)
// and MPI_Start and MPI_Startall, which start every kind of persistent request.

// initP2P makes the persistent request of a send in mode, or of a receive (recv), of
// count copies of d over buf with peer and tag. A derived datatype's data goes through
// a packed buffer of the request's own (typedBuf).
func initP2P(mode sendMode, recv bool, buf unsafe.Pointer, count int, d Datatype, peer, tag int, c Comm, req *Request) error {
	w, t, b, err := msgArgs(buf, count, d, c)
	if err != nil {
		return err
	}
	if recv {
		peer, err = source(w, peer)
	} else {
		peer, err = dest(w, peer)
	}
	if err != nil {
		return err
	}
	var typed *typedBuf
	if !t.contig {
		typed = newTyped(b, count, t, recv)
		b = typed.packed
	}
	var r *runtime.Request
	switch {
	case recv:
		r, err = runtime.RecvInit(w, b, peer, recvTag(tag))
	case mode == sendSync:
		r, err = runtime.SsendInit(w, b, peer, tag)
	case mode == sendReady:
		r, err = runtime.RsendInit(w, b, peer, tag)
	case mode == sendBuffered:
		r, err = runtime.BsendInit(w, b, peer, tag)
	default:
		r, err = runtime.SendInit(w, b, peer, tag)
	}
	if err != nil {
		return err
	}
	addPersistent(&request{p2p: r, typed: typed}, req)
	return nil
}

// doSendInit is MPI_Send_init.
func doSendInit(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm, req *Request) error {
	return initP2P(sendStandard, false, buf, count, d, to, tag, c, req)
}

// doSsendInit is MPI_Ssend_init.
func doSsendInit(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm, req *Request) error {
	return initP2P(sendSync, false, buf, count, d, to, tag, c, req)
}

// doBsendInit is MPI_Bsend_init: each start copies the message into the attached
// buffer (MPI_Buffer_attach).
func doBsendInit(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm, req *Request) error {
	return initP2P(sendBuffered, false, buf, count, d, to, tag, c, req)
}

// doRsendInit is MPI_Rsend_init, sent as MPI_Send_init's sends are.
func doRsendInit(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm, req *Request) error {
	return initP2P(sendReady, false, buf, count, d, to, tag, c, req)
}

// doRecvInit is MPI_Recv_init.
func doRecvInit(buf unsafe.Pointer, count int, d Datatype, from, tag int, c Comm, req *Request) error {
	return initP2P(sendStandard, true, buf, count, d, from, tag, c, req)
}

// doSendInitC is MPI_Send_init_c.
func doSendInitC(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm, req *Request) error {
	if err := fitCount(count, d); err != nil {
		return err
	}
	return doSendInit(buf, count, d, to, tag, c, req)
}

// doSsendInitC is MPI_Ssend_init_c.
func doSsendInitC(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm, req *Request) error {
	if err := fitCount(count, d); err != nil {
		return err
	}
	return doSsendInit(buf, count, d, to, tag, c, req)
}

// doBsendInitC is MPI_Bsend_init_c.
func doBsendInitC(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm, req *Request) error {
	if err := fitCount(count, d); err != nil {
		return err
	}
	return doBsendInit(buf, count, d, to, tag, c, req)
}

// doRsendInitC is MPI_Rsend_init_c.
func doRsendInitC(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm, req *Request) error {
	if err := fitCount(count, d); err != nil {
		return err
	}
	return doRsendInit(buf, count, d, to, tag, c, req)
}

// doRecvInitC is MPI_Recv_init_c.
func doRecvInitC(buf unsafe.Pointer, count int, d Datatype, from, tag int, c Comm, req *Request) error {
	if err := fitCount(count, d); err != nil {
		return err
	}
	return doRecvInit(buf, count, d, from, tag, c, req)
}

// startable checks that r may be started: persistent and inactive.
func (r *request) startable() error {
	switch {
	case !r.persistent:
		return mpiErr(mpi_ERR_REQUEST, "the request is not persistent: MPI_Start takes the request of an init call (MPI_Send_init, MPI_Recv_init, MPI_Allreduce_init...)")
	case !r.inactive:
		return mpiErr(mpi_ERR_REQUEST, "the request is active: complete it (MPI_Wait, MPI_Test) before starting it again")
	}
	return nil
}

// start starts the inactive persistent request r: each kind's start is here.
func (r *request) start() error {
	if err := r.startable(); err != nil {
		return err
	}
	var err error
	switch {
	case r.p2p != nil:
		if r.typed != nil && !r.typed.recv {
			if err := r.typed.pack(); err != nil {
				return err
			}
		}
		err = runtime.Start(r.p2p)
	case r.coll != nil:
		err = r.coll.Start(bg)
	case r.part != nil:
		err = r.part.start()
	case r.topo != nil && r.topo.nb != nil:
		if err = r.topo.nb.Start(); err != nil {
			err = mpiErr(mpi_ERR_REQUEST, err.Error())
		}
	default:
		err = mpiErr(mpi_ERR_INTERN, "a persistent request of no kind that starts")
	}
	if err != nil {
		return err
	}
	r.inactive = false
	return nil
}

// doStart is MPI_Start.
func doStart(req *Request) error {
	r, ok := reqs.get(int32(*req))
	if !ok {
		return errHandle("request", int32(*req))
	}
	return r.start()
}

// doStartall is MPI_Startall: every request is checked before any starts.
func doStartall(n int, hs *Request) error {
	if n < 0 {
		return errCount(n)
	}
	if n == 0 {
		return nil
	}
	rs := make([]*request, n)
	for i, h := range unsafe.Slice(hs, n) {
		r, ok := reqs.get(int32(h))
		if !ok {
			return errHandle("request", int32(h))
		}
		if err := r.startable(); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
		for j := range i {
			if rs[j] == r {
				return mpiErr(mpi_ERR_REQUEST, fmt.Sprintf("requests %d and %d are the same request: start it once", j, i))
			}
		}
		rs[i] = r
	}
	for i, r := range rs {
		if err := r.start(); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
	}
	return nil
}
