package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/internal/packpool"
)

// SendType sends count copies of the layout t, laid over buf's memory, to rank dest with tag
// (MPI_Send with a derived datatype). The message is the packed data, count * t.Size()
// bytes in typemap order, and matches any receive of that many bytes. A layout that is one
// run is sent in place; any other is packed into a pooled buffer, or offered to a receiver
// on this host, which reads it straight out of buf. buf's elements may be any type without
// pointers. A layout outside buf fails with ErrInvalid; the rest behaves as Send.
func SendType[T any](ctx context.Context, w *World, buf []T, count int, t datatype.Type, dest, tag int) error {
	l, err := typeArgs("send type", w, buf, count, t)
	if err != nil {
		return err
	}
	if run, ok := l.Contig(); ok {
		return Send(ctx, w, run, dest, tag)
	}
	if ok, err := w.sendLaid(ctx, &l, dest, tag); ok {
		return err
	}
	p := packIn(l)
	err = Send(ctx, w, p.B, dest, tag)
	if err != nil && ctx.Err() != nil {
		// A rendezvous offer may still be read from p: leave it to the collector.
		return err
	}
	packpool.Put(p)
	return err
}

// RecvType receives a message from src with tag into count copies of the layout t over
// buf's memory (MPI_Recv with a derived datatype). Status.Bytes is the message's length,
// Count the copies of t it held (Undefined for part of one). A shorter message fills the
// layout's first bytes in typemap order; a longer one fails with ErrTruncated. Errors are as
// Recv's and SendType's.
func RecvType[T any](ctx context.Context, w *World, buf []T, count int, t datatype.Type, src, tag int) (Status, error) {
	l, err := typeArgs("recv type", w, buf, count, t)
	if err != nil {
		return Status{}, err
	}
	if run, ok := l.Contig(); ok {
		st, err := Recv(ctx, w, run, src, tag)
		return typeStatus(st, t), err
	}
	p := packpool.Get(l.Size())
	defer packpool.Put(p)
	lay := recvLay(&l, w.e.cfg.eagerSHM)
	var st Status
	done := false
	if lay != nil {
		st, done, err = w.recvLaid(ctx, p.B, lay, src, tag)
	}
	if !done {
		st, err = Recv(ctx, w, p.B, src, tag)
	}
	if (err == nil || errors.Is(err, ErrTruncated)) && (lay == nil || !lay.direct) {
		unpackOut(l, p, st)
	}
	putLay(lay)
	return typeStatus(st, t), err
}

// SendrecvType sends scount copies of the layout st over sbuf to dest and receives into
// rcount copies of rt over rbuf from src, as Sendrecv does (MPI_Sendrecv with derived
// datatypes); the receive is posted first. Each side follows SendType's and RecvType's
// rules.
func SendrecvType[S, R any](ctx context.Context, w *World, sbuf []S, scount int, st datatype.Type, dest, stag int,
	rbuf []R, rcount int, rt datatype.Type, src, rtag int) (Status, error) {
	sl, err := typeArgs("sendrecv type", w, sbuf, scount, st)
	if err != nil {
		return Status{}, err
	}
	rl, err := typeArgs("sendrecv type", w, rbuf, rcount, rt)
	if err != nil {
		return Status{}, err
	}
	var sp, rp *packpool.Buf
	var so, ro *layIO
	out, sin := sl.Contig()
	in, rin := rl.Contig()
	if !rin {
		rp = packpool.Get(rl.Size())
		in = rp.B
		ro = recvLay(&rl, w.e.cfg.eagerSHM)
	}
	var stat Status
	done := false
	if !sin && sl.Size() > w.e.cfg.eagerSHM {
		stat, done, so, err = w.sendrecvLaid(ctx, nil, &sl, dest, stag, in, ro, src, rtag)
	}
	if !done && !sin {
		sp = packIn(sl)
		out = sp.B
	}
	if !done && ro != nil {
		stat, done, _, err = w.sendrecvLaid(ctx, out, nil, dest, stag, in, ro, src, rtag)
	}
	if !done {
		stat, err = Sendrecv(ctx, w, out, dest, stag, in, src, rtag)
	}
	if err != nil && ctx.Err() != nil {
		return typeStatus(stat, rt), err // the buffers may still be in use: leave them to the collector
	}
	putLay(so)
	if sp != nil {
		packpool.Put(sp)
	}
	if rp != nil {
		if (err == nil || errors.Is(err, ErrTruncated)) && (ro == nil || !ro.direct) {
			unpackOut(rl, rp, stat)
		}
		packpool.Put(rp)
	}
	putLay(ro)
	return typeStatus(stat, rt), err
}

// typeArgs checks the World and the layout of a typed call, once: the Laid it returns
// packs and unpacks without checking again.
func typeArgs[T any](op string, w *World, buf []T, count int, t datatype.Type) (datatype.Laid, error) {
	if err := w.live(); err != nil {
		return datatype.Laid{}, withOp(op, err)
	}
	b, err := datatype.AsBytes(buf)
	var l datatype.Laid
	if err == nil {
		l, err = t.Over("layout over buf", b, count)
	}
	if err != nil {
		return datatype.Laid{}, withOp(op, fmt.Errorf("rank %d: %w: %w", w.Rank(), ErrInvalid, err))
	}
	return l, nil
}

// packIn packs l into a pooled buffer of its size, which Pack cannot find short.
func packIn(l datatype.Laid) *packpool.Buf {
	p := packpool.Get(l.Size())
	_, _ = l.Pack(p.B) // cannot fail: p.B holds l.Size() bytes
	return p
}

// unpackOut unpacks the message of Status st, received into p, into l: its first
// st.Bytes bytes, at most l.Size() (a longer message was truncated to that).
func unpackOut(l datatype.Laid, p *packpool.Buf, st Status) {
	_, _ = l.UnpackPrefix(p.B[:min(st.Bytes, l.Size())]) // cannot fail: at most l.Size() bytes
}

// typeStatus counts a Status in copies of t: Undefined when the message held part of one
// (MPI_Get_count's MPI_UNDEFINED).
func typeStatus(st Status, t datatype.Type) Status {
	st.Count = 0
	if t.Size() > 0 {
		st.Count = st.Bytes / t.Size()
		if st.Bytes%t.Size() != 0 {
			st.Count = Undefined // MPI_Get_count's MPI_UNDEFINED: not a whole number of copies
		}
	}
	return st
}

// IsendType starts SendType (MPI_Isend with a derived datatype). A layout that is one run is
// sent from buf in place, and buf belongs to the runtime until the Request completes. Any
// other is packed at the call, so buf is the caller's again at once; it makes no layout
// offer.
func IsendType[T any](w *World, buf []T, count int, t datatype.Type, dest, tag int) (*Request, error) {
	l, err := typeArgs("isend type", w, buf, count, t)
	if err != nil {
		return nil, err
	}
	if run, ok := l.Contig(); ok {
		return Isend(w, run, dest, tag)
	}
	p := packIn(l)
	r, err := Isend(w, p.B, dest, tag)
	if err != nil {
		packpool.Put(p)
		return nil, err
	}
	r.setFinish(func(st Status, err error) (Status, error) {
		packpool.Put(p)
		return st, err
	})
	return r, nil
}

// IrecvType starts RecvType (MPI_Irecv with a derived datatype): buf belongs to the runtime
// until the Request's completion is reported. A layout received through a pooled buffer is
// unpacked when Wait, Test or a set call reports the completion, under the runtime's lock.
func IrecvType[T any](w *World, buf []T, count int, t datatype.Type, src, tag int) (*Request, error) {
	l, err := typeArgs("irecv type", w, buf, count, t)
	if err != nil {
		return nil, err
	}
	if run, ok := l.Contig(); ok {
		r, err := Irecv(w, run, src, tag)
		if err != nil {
			return nil, err
		}
		r.setFinish(func(st Status, err error) (Status, error) { return typeStatus(st, t), err })
		return r, nil
	}
	p := packpool.Get(l.Size())
	lay := recvLay(&l, w.e.cfg.eagerSHM)
	r := new(Request)
	done := false
	if lay != nil {
		done, err = w.irecvLaid(r, p.B, lay, src, tag)
	}
	if !done {
		putLay(lay)
		lay = nil
		r, err = Irecv(w, p.B, src, tag)
	}
	if err != nil {
		putLay(lay)
		packpool.Put(p)
		return nil, err
	}
	r.setFinish(func(st Status, err error) (Status, error) {
		if (err == nil || errors.Is(err, ErrTruncated)) && !st.Cancelled && (lay == nil || !lay.direct) {
			unpackOut(l, p, st)
		}
		putLay(lay)
		packpool.Put(p)
		return typeStatus(st, t), err
	})
	return r, nil
}
