package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/internal/packpool"
)

// SendType sends count copies of the layout t, laid over buf's memory, to rank dest with
// tag (MPI_Send with a derived datatype). The message is the packed data, count *
// t.Size() bytes in typemap order, and matches any receive of that many bytes (RecvType
// with a layout of the same size, or Recv of bytes or elements). A layout whose count
// copies are one run (datatype.Type.Contig) is sent from buf in place. Any other is
// packed into a pooled buffer first, except a rendezvous to a rank of this host whose
// memory the ranks may read. Its receiver reads the layout straight out of buf, into its
// own layout or buffer (a layout offer: no packed copy on either side). buf's elements
// may be any type without pointers (numbers, arrays and structs of them). A layout
// outside buf fails with ErrInvalid before anything is sent; the rest behaves as Send.
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

// RecvType receives a message from src (or AnySource) with tag (or AnyTag) into count
// copies of the layout t over buf's memory (MPI_Recv with a derived datatype), and
// returns its Status: Bytes is the message's length, Count the copies of t it held
// (Undefined for part of one, as MPI_Get_count). A message shorter than count copies fills the layout's first bytes in typemap
// order; a longer one fills all count copies and fails with ErrTruncated. A layout that
// is one run is received in place; any other through a pooled buffer, unpacked when the
// message has arrived, except a layout offer (see SendType), which is read straight into
// the layout. Errors are as Recv's and SendType's.
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

// SendrecvType sends scount copies of the layout st over sbuf to dest with stag and
// receives into rcount copies of rt over rbuf from src (or AnySource) with rtag (or
// AnyTag), as Sendrecv does (MPI_Sendrecv with derived datatypes). The receive is posted
// first, so a ring of ranks exchanging halo columns never deadlocks. Each side moves in
// place when its layout is one run, else through a pooled buffer, or between ranks of
// one host as a layout offer (see SendType and RecvType); the receive's Status and
// length rules are RecvType's.
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

// IsendType starts SendType (MPI_Isend with a derived datatype): a layout that is one
// run is sent from buf in place (buf belongs to the runtime until the Request
// completes). Any other is packed at the call into a pooled buffer, so buf is the
// caller's again at once, and the buffer returns to the pool when the completion is
// reported (Wait, Test or a set call). It never makes a layout offer (see SendType),
// which would keep buf until the receiver has read it.
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
	r.finish = func(st Status, err error) (Status, error) {
		packpool.Put(p)
		return st, err
	}
	return r, nil
}

// IrecvType starts RecvType (MPI_Irecv with a derived datatype): buf belongs to the
// runtime until the Request's completion is reported. A layout that is one run is
// received in place, and a layout offer (see SendType) straight into the layout. Any
// other through a pooled buffer, unpacked into the layout as Wait, Test or a set call
// reports the completion (under the runtime's lock: a large layout's unpacking holds the
// rank's other goroutines' calls that long). The Status counts whole copies of t, and
// the length rules are RecvType's.
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
		r.finish = func(st Status, err error) (Status, error) { return typeStatus(st, t), err }
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
	r.finish = func(st Status, err error) (Status, error) {
		if (err == nil || errors.Is(err, ErrTruncated)) && !st.Cancelled && (lay == nil || !lay.direct) {
			unpackOut(l, p, st)
		}
		putLay(lay)
		packpool.Put(p)
		return typeStatus(st, t), err
	}
	return r, nil
}
