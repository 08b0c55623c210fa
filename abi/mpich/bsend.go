//go:build cgo

package mpich

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
)

// Buffered sends: MPI_Buffer_attach gives the process one buffer, the runtime's
// (runtime.BufferAttach), and MPI_Bsend copies each message into it.

// bufferErr gives a buffered send's or the buffer calls' invalid-argument errors, which
// are the attached buffer's (none attached, too little space, one attached already),
// MPICH's class MPI_ERR_BUFFER. An invalid tag keeps its own.
func bufferErr(err error, tag int) error {
	if err == nil || tag < 0 || tag > runtime.MaxTag || !errors.Is(err, runtime.ErrInvalid) {
		return err
	}
	return mpiErr(mpi_ERR_BUFFER, err.Error())
}

// doBufferAttach is MPI_Buffer_attach.
func doBufferAttach(buf unsafe.Pointer, size int) error {
	if world == nil {
		return errNotInit
	}
	if size < 0 {
		return errCount(size)
	}
	if buf == nil && size > 0 {
		return mpiErr(mpi_ERR_BUFFER, fmt.Sprintf("buffer is NULL for %d bytes", size))
	}
	var b []byte
	if size > 0 {
		b = unsafe.Slice((*byte)(buf), size)
	}
	return bufferErr(runtime.BufferAttach(world, b), 0)
}

// detach is MPI_Buffer_detach: it waits for the buffered sends to leave, stores the
// buffer's address at addr and returns its size, 0 with NULL when none was attached.
func detach(addr unsafe.Pointer) (int, error) {
	if world == nil {
		return 0, errNotInit
	}
	if addr == nil {
		return 0, mpiErr(mpi_ERR_BUFFER, "buffer_addr is NULL: pass the address of a pointer")
	}
	b, err := runtime.BufferDetach(bg, world)
	p := unsafe.Pointer(nil)
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	*(*unsafe.Pointer)(addr) = p
	return len(b), err
}

// doBufferDetach is MPI_Buffer_detach.
func doBufferDetach(addr unsafe.Pointer, size *int32) error {
	n, err := detach(addr)
	if n > math.MaxInt32 {
		*size = 0
		return errors.Join(err, mpiErr(mpi_ERR_COUNT, fmt.Sprintf("the detached buffer's %d bytes do not fit an int: call MPI_Buffer_detach_c", n)))
	}
	*size = int32(n)
	return err
}

// doBufferAttachC is MPI_Buffer_attach_c.
func doBufferAttachC(buf unsafe.Pointer, size int) error { return doBufferAttach(buf, size) }

// doBufferDetachC is MPI_Buffer_detach_c.
func doBufferDetachC(addr unsafe.Pointer, size *int64) error {
	n, err := detach(addr)
	*size = int64(n)
	return err
}

// doBsend is MPI_Bsend: the message is copied into the attached buffer, and the call
// returns.
func doBsend(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm) error {
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
	return bufferErr(runtime.Bsend(w, m, to, tag), tag)
}

// doIbsend is MPI_Ibsend: its request is complete once the message is in the buffer.
func doIbsend(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm, req *Request) error {
	return isend(sendBuffered, buf, count, d, to, tag, c, req)
}

// doBsendC is MPI_Bsend_c.
func doBsendC(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm) error {
	if err := fitCount(count, d); err != nil {
		return err
	}
	return doBsend(buf, count, d, to, tag, c)
}

// doIbsendC is MPI_Ibsend_c.
func doIbsendC(buf unsafe.Pointer, count int, d Datatype, to, tag int, c Comm, req *Request) error {
	if err := fitCount(count, d); err != nil {
		return err
	}
	return doIbsend(buf, count, d, to, tag, c, req)
}
