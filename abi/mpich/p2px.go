//go:build cgo

package mpich

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
)

// The send modes' nonblocking calls, the combined send and receive's other forms, and
// the large-count (_c) forms of the point-to-point calls.

// A sendMode is one of MPI's send modes.
type sendMode uint8

const (
	sendStandard sendMode = iota
	sendSync
	sendReady
	sendBuffered
)

// A typedBuf is a derived datatype's data: count copies of layout over the program's
// buffer, and the packed bytes that the runtime sends or receives. A send packs before
// each start; a receive (recv) unpacks after each completion.
type typedBuf struct {
	user   []byte
	count  int
	layout datatype.Type
	packed []byte
	recv   bool
}

func newTyped(user []byte, count int, t *dtype, recv bool) *typedBuf {
	return &typedBuf{user: user, count: count, layout: t.layout, packed: make([]byte, count*t.size), recv: recv}
}

// pack copies the program's data into the packed bytes.
func (b *typedBuf) pack() error {
	_, err := datatype.Pack(b.packed, b.user, b.count, b.layout)
	return err
}

// unpack moves the first n packed bytes, a received message, into the layout.
func (b *typedBuf) unpack(n int) error {
	n = min(max(n, 0), len(b.packed))
	_, err := datatype.UnpackPrefix(b.user, b.packed[:n], b.count, b.layout)
	return err
}

// message is what a send of count copies of t over b puts on the wire: b itself for a
// contiguous t, else its data packed into a buffer of its own.
func message(b []byte, count int, t *dtype) ([]byte, error) {
	if t.contig {
		return b, nil
	}
	p := newTyped(b, count, t, false)
	if err := p.pack(); err != nil {
		return nil, err
	}
	return p.packed, nil
}

// recvInto is where a receive of count copies of t over b lands: b itself for a
// contiguous t, else a packed buffer, with the typedBuf that unpacks it into b.
func recvInto(b []byte, count int, t *dtype) ([]byte, *typedBuf) {
	if t.contig {
		return b, nil
	}
	tb := newTyped(b, count, t, true)
	return tb.packed, tb
}

// isend starts a nonblocking send in mode (MPI_Issend, MPI_Irsend, MPI_Ibsend).
func isend(mode sendMode, buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm, req *Request) error {
	w, t, b, err := msgArgs(buf, count, d, c)
	if err != nil {
		return err
	}
	if to, err = dest(w, to); err != nil {
		return err
	}
	m, err := message(b, count, t)
	if err != nil {
		return err
	}
	var r *runtime.Request
	switch mode {
	case sendSync:
		r, err = runtime.Issend(w, m, to, tag)
	case sendReady:
		r, err = runtime.Irsend(w, m, to, tag)
	case sendBuffered:
		r, err = runtime.Ibsend(w, m, to, tag)
		err = bufferErr(err, tag)
	default:
		r, err = runtime.Isend(w, m, to, tag)
	}
	if err != nil {
		return err
	}
	*req = Request(reqs.add(&request{p2p: r}))
	return nil
}

// doIssend is MPI_Issend: the request completes once the receiver has matched it.
func doIssend(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm, req *Request) error {
	return isend(sendSync, buf, count, d, to, tag, c, req)
}

// doIrsend is MPI_Irsend, sent as MPI_Isend is.
func doIrsend(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm, req *Request) error {
	return isend(sendReady, buf, count, d, to, tag, c, req)
}

// pairArgs checks a combined send and receive's ranks and returns them as the
// runtime's.
func pairArgs(w *runtime.World, to, from int) (int, int, error) {
	to, err := dest(w, to)
	if err != nil {
		return 0, 0, err
	}
	from, err = source(w, from)
	return to, from, err
}

// doSendrecvReplace is MPI_Sendrecv_replace: the message sent is a copy of buf taken at
// the call, and the one received replaces it.
func doSendrecvReplace(buf unsafe.Pointer, count int, d Datatype, to, stag, from, rtag int, c Comm, st *Status) error {
	w, t, b, err := msgArgs(buf, count, d, c)
	if err != nil {
		return err
	}
	if to, from, err = pairArgs(w, to, from); err != nil {
		return err
	}
	var rs runtime.Status
	if t.contig {
		rs, err = runtime.SendrecvReplace(bg, w, b, to, stag, from, recvTag(rtag))
	} else {
		var m []byte
		if m, err = message(b, count, t); err != nil {
			return err
		}
		rs, err = runtime.SendrecvType(bg, w, m, len(m), byteType, to, stag, b, count, t.layout, from, recvTag(rtag))
	}
	st.set(rs)
	return err
}

// doIsendrecv is MPI_Isendrecv.
func doIsendrecv(sbuf unsafe.Pointer, scount int, sd Datatype, to, stag int,
	rbuf unsafe.Pointer, rcount int, rd Datatype, from, rtag int, c Comm, req *Request) error {
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
	if to, from, err = pairArgs(w, to, from); err != nil {
		return err
	}
	m, err := message(sb, scount, stt)
	if err != nil {
		return err
	}
	in, typed := recvInto(rb, rcount, rt)
	r, err := runtime.Isendrecv(w, m, to, stag, in, from, recvTag(rtag))
	if err != nil {
		return err
	}
	*req = Request(reqs.add(&request{p2p: r, typed: typed}))
	return nil
}

// doIsendrecvReplace is MPI_Isendrecv_replace: the message sent is a copy of buf taken
// at the call.
func doIsendrecvReplace(buf unsafe.Pointer, count int, d Datatype, to, stag, from, rtag int, c Comm, req *Request) error {
	w, t, b, err := msgArgs(buf, count, d, c)
	if err != nil {
		return err
	}
	if to, from, err = pairArgs(w, to, from); err != nil {
		return err
	}
	var r *runtime.Request
	var typed *typedBuf
	if t.contig {
		r, err = runtime.IsendrecvReplace(w, b, to, stag, from, recvTag(rtag))
	} else {
		var m, in []byte
		if m, err = message(b, count, t); err != nil {
			return err
		}
		in, typed = recvInto(b, count, t)
		r, err = runtime.Isendrecv(w, m, to, stag, in, from, recvTag(rtag))
	}
	if err != nil {
		return err
	}
	*req = Request(reqs.add(&request{p2p: r, typed: typed}))
	return nil
}

// maxMessage is the most bytes one call's buffer may span.
const maxMessage = math.MaxInt32 << 16

// fitCount checks a large-count (_c) call's count of d: MPI_ERR_COUNT when it is
// negative or its copies of d span more than maxMessage bytes. The int forms' counts
// always fit.
func fitCount(count int, d Datatype) error {
	if count < 0 {
		return errCount(count)
	}
	t, err := typeOf(d)
	if err != nil {
		return err
	}
	if n := max(t.size, t.extent); n > 0 && count > maxMessage/n {
		return mpiErr(mpi_ERR_COUNT, fmt.Sprintf("count %d of datatype %#x spans more than %d bytes, the most one call may", count, uint32(d), maxMessage))
	}
	return nil
}

// doSendC is MPI_Send_c.
func doSendC(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm) error {
	if err := fitCount(count, d); err != nil {
		return err
	}
	return doSend(buf, count, d, to, tag, c)
}

// doSsendC is MPI_Ssend_c.
func doSsendC(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm) error {
	if err := fitCount(count, d); err != nil {
		return err
	}
	return doSsend(buf, count, d, to, tag, c)
}

// doRsendC is MPI_Rsend_c.
func doRsendC(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm) error {
	if err := fitCount(count, d); err != nil {
		return err
	}
	return doRsend(buf, count, d, to, tag, c)
}

// doRecvC is MPI_Recv_c.
func doRecvC(buf unsafe.Pointer, count int, d Datatype, from, tag int, c Comm, st *Status) error {
	if err := fitCount(count, d); err != nil {
		return err
	}
	return doRecv(buf, count, d, from, tag, c, st)
}

// doIsendC is MPI_Isend_c.
func doIsendC(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm, req *Request) error {
	if err := fitCount(count, d); err != nil {
		return err
	}
	return doIsend(buf, count, d, to, tag, c, req)
}

// doIssendC is MPI_Issend_c.
func doIssendC(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm, req *Request) error {
	if err := fitCount(count, d); err != nil {
		return err
	}
	return doIssend(buf, count, d, to, tag, c, req)
}

// doIrsendC is MPI_Irsend_c.
func doIrsendC(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm, req *Request) error {
	if err := fitCount(count, d); err != nil {
		return err
	}
	return doIrsend(buf, count, d, to, tag, c, req)
}

// doIrecvC is MPI_Irecv_c.
func doIrecvC(buf unsafe.Pointer, count int, d Datatype, from, tag int, c Comm, req *Request) error {
	if err := fitCount(count, d); err != nil {
		return err
	}
	return doIrecv(buf, count, d, from, tag, c, req)
}

// doSendrecvC is MPI_Sendrecv_c.
func doSendrecvC(sbuf unsafe.Pointer, scount int, sd Datatype, to, stag int,
	rbuf unsafe.Pointer, rcount int, rd Datatype, from, rtag int, c Comm, st *Status) error {
	if err := fitCount(scount, sd); err != nil {
		return err
	}
	if err := fitCount(rcount, rd); err != nil {
		return err
	}
	return doSendrecv(sbuf, scount, sd, to, stag, rbuf, rcount, rd, from, rtag, c, st)
}

// doSendrecvReplaceC is MPI_Sendrecv_replace_c.
func doSendrecvReplaceC(buf unsafe.Pointer, count int, d Datatype, to, stag, from, rtag int, c Comm, st *Status) error {
	if err := fitCount(count, d); err != nil {
		return err
	}
	return doSendrecvReplace(buf, count, d, to, stag, from, rtag, c, st)
}

// doIsendrecvC is MPI_Isendrecv_c.
func doIsendrecvC(sbuf unsafe.Pointer, scount int, sd Datatype, to, stag int,
	rbuf unsafe.Pointer, rcount int, rd Datatype, from, rtag int, c Comm, req *Request) error {
	if err := fitCount(scount, sd); err != nil {
		return err
	}
	if err := fitCount(rcount, rd); err != nil {
		return err
	}
	return doIsendrecv(sbuf, scount, sd, to, stag, rbuf, rcount, rd, from, rtag, c, req)
}

// doIsendrecvReplaceC is MPI_Isendrecv_replace_c.
func doIsendrecvReplaceC(buf unsafe.Pointer, count int, d Datatype, to, stag, from, rtag int, c Comm, req *Request) error {
	if err := fitCount(count, d); err != nil {
		return err
	}
	return doIsendrecvReplace(buf, count, d, to, stag, from, rtag, c, req)
}
