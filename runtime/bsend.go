package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Buffered sends (MPI_Bsend, MPI_Buffer_attach, MPI_Buffer_detach). A Bsend copies its
// message into the buffer this process attached and sends the copy as Isend does; the
// copy's space is free again once that send has completed. Space is taken first fit, at
// offsets that are multiples of 8. A message of n bytes takes bsendSpace(n), which is at
// most n + BsendOverhead, so a buffer sized by MPI's rule holds every message it was
// sized for, whatever their lengths and in any order.

// BsendOverhead is the space a buffered message takes beyond its bytes
// (MPI_BSEND_OVERHEAD), a multiple of 8: size an attached buffer by it per message in flight.
const BsendOverhead = 64

// bsendSpace is the space an n-byte message takes: n + BsendOverhead rounded down to a
// multiple of 8, so that the next message starts aligned. It is at least n, since
// BsendOverhead is at least 7.
func bsendSpace(n int) int { return (n + BsendOverhead) &^ 7 }

// bsendBuf is the attached buffer and the sends in flight from it, guarded by the
// engine's mu.
type bsendBuf struct {
	buf  []byte
	live []bsendMsg // by offset
	errs []error    // of the sends that failed, for BufferDetach
}

type bsendMsg struct {
	off, n int // the space taken: buf[off : off+n]
	r      *Request
}

// BufferAttach gives buf to the runtime for Bsend (MPI_Buffer_attach): one buffer per
// process, shared by every World of the job, until BufferDetach. buf belongs to the
// runtime until then. Attaching while a buffer is attached is an ErrInvalid error.
func BufferAttach(w *World, buf []byte) error {
	if w == nil {
		return withOp("buffer_attach", errNilWorld)
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.checkLocked(); err != nil {
		return withOp("buffer_attach", err)
	}
	if e.bsend.buf != nil {
		return withOp("buffer_attach", invalidf("a %d-byte buffer is already attached (BufferDetach it first)", len(e.bsend.buf)))
	}
	if len(buf) == 0 {
		return withOp("buffer_attach", invalidf("an empty buffer"))
	}
	e.bsend.buf = buf
	return nil
}

// BufferDetach waits until every buffered send has completed, detaches the buffer and returns
// it (MPI_Buffer_detach), with the errors of buffered sends that failed. If ctx ends first
// the buffer stays attached. With no buffer attached it returns nil.
func BufferDetach(ctx context.Context, w *World) ([]byte, error) {
	if w == nil {
		return nil, withOp("buffer_detach", errNilWorld)
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	for {
		i := slices.IndexFunc(e.bsend.live, func(m bsendMsg) bool { return !m.r.done })
		if i < 0 {
			break
		}
		if err := e.waitLocked(ctx, e.bsend.live[i].r); err != nil {
			e.poll.handoffLocked()
			return nil, withOp("buffer_detach", err)
		}
	}
	e.poll.handoffLocked()
	e.bsend.reap()
	buf, errs := e.bsend.buf, e.bsend.errs
	e.bsend = bsendBuf{}
	return buf, withOp("buffer_detach", errors.Join(errs...))
}

// Bsend copies buf into the attached buffer and sends the copy (MPI_Bsend); it never waits
// for the receiver. Without room in the buffer it fails with ErrInvalid and sends nothing.
// BufferDetach reports errors of the send itself.
func Bsend[T Elem](w *World, buf []T, dest, tag int) error {
	b, size := asBytes(buf)
	return withOp("bsend", w.bsendStart(nil, callBsend, b, size, dest, tag))
}

// Ibsend is the nonblocking Bsend (MPI_Ibsend): its Request is complete on return, since
// the message was copied.
func Ibsend[T Elem](w *World, buf []T, dest, tag int) (*Request, error) {
	b, size := asBytes(buf)
	r := new(Request)
	if err := w.bsendStart(r, callIbsend, b, size, dest, tag); err != nil {
		return nil, withOp("ibsend", err)
	}
	return r, nil
}

// bsendStart starts a buffered send of b for the user's call; r, if not nil, is the
// caller's Request, completed at once.
func (w *World) bsendStart(r *Request, call opCall, b []byte, esize, dest, tag int) error {
	if err := w.live(); err != nil {
		return err
	}
	d, err := destOrNull(w, dest)
	if err != nil {
		return err
	}
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.bsendLocked(w, r, call, b, esize, d, tag)
}

// bsendLocked is bsendStart with dest a job rank or ProcNull. The send of the copy is
// named by call, so that a wait for it (BufferDetach's, Finalize's) names the user's call.
func (e *engine) bsendLocked(w *World, r *Request, call opCall, b []byte, esize, dest, tag int) error {
	if r != nil {
		if err := r.resetLocked(e); err != nil {
			return err
		}
		r.kind, r.peer, r.tag = reqSend, dest, tag
	}
	if dest == ProcNull {
		if err := e.nullArgsLocked(tag, false); err != nil {
			return err
		}
	} else {
		if err := e.checkArgsLocked(dest, tag, false); err != nil {
			return err
		}
		sr, space, err := e.bsend.take(len(b))
		if err != nil {
			return err
		}
		copy(space, b)
		if err := e.isendLocked(w, sr, space, esize, dest, tag, call); err != nil {
			return err // not reached: checkArgsLocked checked what isendLocked checks
		}
	}
	if r != nil {
		e.completeLocked(r, nil)
	}
	return nil
}

// take reserves space for an n-byte message, first fit after dropping the completed
// sends, and returns the Request its send is to use and the message's bytes.
func (b *bsendBuf) take(n int) (*Request, []byte, error) {
	if b.buf == nil {
		return nil, nil, invalidf("no buffer attached (BufferAttach one before Bsend)")
	}
	b.reap()
	need := bsendSpace(n)
	off, at := 0, 0
	for i, m := range b.live {
		if m.off-off >= need {
			break
		}
		off, at = m.off+m.n, i+1
	}
	if len(b.buf)-off < need && (at == len(b.live) || b.live[at].off-off < need) {
		return nil, nil, invalidf("a %d-byte message needs %d bytes of the attached buffer and %d of its %d are free in one piece (attach a larger buffer: BsendOverhead is %d)",
			n, need, b.largestGap(), len(b.buf), BsendOverhead)
	}
	r := new(Request)
	b.live = slices.Insert(b.live, at, bsendMsg{off: off, n: need, r: r})
	return r, b.buf[off : off+n : off+n], nil
}

// largestGap is the largest free piece of the buffer.
func (b *bsendBuf) largestGap() int {
	best, off := 0, 0
	for _, m := range b.live {
		best = max(best, m.off-off)
		off = m.off + m.n
	}
	return max(best, len(b.buf)-off)
}

// reap drops the completed sends, keeping the errors of those that failed.
func (b *bsendBuf) reap() {
	b.live = slices.DeleteFunc(b.live, func(m bsendMsg) bool {
		if m.r.done && m.r.err != nil {
			b.errs = append(b.errs, fmt.Errorf("buffered send to rank %d (tag %d): %w", m.r.peer, m.r.tag, m.r.err))
		}
		return m.r.done
	})
}
