//go:build cgo

package mpich

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
)

// Matched probes: MPI_Mprobe and MPI_Improbe take a message out of matching, and
// MPI_Mrecv and MPI_Imrecv receive it through its MPI_Message handle.

// kindMessage is the handle kind of the messages this library makes. MPICH's own
// MPI_MESSAGE_NULL and MPI_MESSAGE_NO_PROC use the request kind (11); table handles of
// kind 12 stay clear of both and of every request.
const kindMessage = 12

var msgs = newTable[*runtime.Message](kindMessage)

// procNullStatus is the status of a receive from MPI_PROC_NULL.
var procNullStatus = runtime.Status{Source: runtime.ProcNull, Tag: runtime.AnyTag}

// newMessage registers m, probed from source from: MPI_MESSAGE_NO_PROC for
// MPI_PROC_NULL.
func newMessage(m *runtime.Message, from int) Message {
	if from == runtime.ProcNull {
		return mpi_MESSAGE_NO_PROC
	}
	return Message(msgs.add(m))
}

// doMprobe is MPI_Mprobe.
func doMprobe(from, tag int, c Comm, msg *Message, st *Status) error {
	w, err := worldOf(c)
	if err != nil {
		return err
	}
	if from, err = source(w, from); err != nil {
		return err
	}
	m, rs, err := runtime.Mprobe(bg, w, from, recvTag(tag))
	if err != nil {
		return err
	}
	*msg = newMessage(m, from)
	st.set(rs)
	return nil
}

// doImprobe is MPI_Improbe.
func doImprobe(from, tag int, c Comm, flag *int32, msg *Message, st *Status) error {
	w, err := worldOf(c)
	if err != nil {
		return err
	}
	if from, err = source(w, from); err != nil {
		return err
	}
	m, ok, rs, err := runtime.Improbe(w, from, recvTag(tag))
	if err != nil {
		return err
	}
	*flag = b2i(ok)
	if ok {
		*msg = newMessage(m, from)
		st.set(rs)
	}
	return nil
}

// takeMessage checks a matched receive's buffer and takes its message *msg, which
// becomes MPI_MESSAGE_NULL. It returns nil for MPI_MESSAGE_NO_PROC.
func takeMessage(buf unsafe.Pointer, count int, d Datatype, msg *Message) (*runtime.Message, *dtype, []byte, error) {
	t, err := typeOf(d)
	if err != nil {
		return nil, nil, nil, err
	}
	b, err := spanOf(buf, count, t)
	if err != nil {
		return nil, nil, nil, err
	}
	switch *msg {
	case mpi_MESSAGE_NO_PROC:
		*msg = mpi_MESSAGE_NULL
		return nil, t, b, nil
	case mpi_MESSAGE_NULL:
		return nil, nil, nil, mpiErr(mpi_ERR_REQUEST, "the message is MPI_MESSAGE_NULL: pass one of MPI_Mprobe or MPI_Improbe")
	}
	m, ok := msgs.del(int32(*msg))
	if !ok {
		return nil, nil, nil, mpiErr(mpi_ERR_REQUEST, fmt.Sprintf("invalid message handle %#x (received already, or not of MPI_Mprobe or MPI_Improbe)", uint32(*msg)))
	}
	*msg = mpi_MESSAGE_NULL
	return m, t, b, nil
}

// doMrecv is MPI_Mrecv.
func doMrecv(buf unsafe.Pointer, count int, d Datatype, msg *Message, st *Status) error {
	m, t, b, err := takeMessage(buf, count, d, msg)
	if err != nil {
		return err
	}
	if m == nil {
		st.set(procNullStatus)
		return nil
	}
	in, typed := recvInto(b, count, t)
	rs, err := runtime.Mrecv(bg, m, in)
	if typed != nil && (err == nil || errors.Is(err, runtime.ErrTruncated)) {
		if uerr := typed.unpack(rs.Bytes); err == nil {
			err = uerr
		}
	}
	st.set(rs)
	return err
}

// doImrecv is MPI_Imrecv.
func doImrecv(buf unsafe.Pointer, count int, d Datatype, msg *Message, req *Request) error {
	m, t, b, err := takeMessage(buf, count, d, msg)
	if err != nil {
		return err
	}
	if m == nil {
		*req = Request(reqs.add(&request{held: &outcome{st: procNullStatus}}))
		return nil
	}
	in, typed := recvInto(b, count, t)
	r, err := runtime.Imrecv(m, in)
	if err != nil {
		return err
	}
	*req = Request(reqs.add(&request{p2p: r, typed: typed}))
	return nil
}

// doMrecvC is MPI_Mrecv_c.
func doMrecvC(buf unsafe.Pointer, count int, d Datatype, msg *Message, st *Status) error {
	if err := fitCount(count, d); err != nil {
		return err
	}
	return doMrecv(buf, count, d, msg, st)
}

// doImrecvC is MPI_Imrecv_c.
func doImrecvC(buf unsafe.Pointer, count int, d Datatype, msg *Message, req *Request) error {
	if err := fitCount(count, d); err != nil {
		return err
	}
	return doImrecv(buf, count, d, msg, req)
}
