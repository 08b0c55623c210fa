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
// copies are one run (datatype.Type.Contig) is sent from buf in place; any other is
// packed into a pooled buffer first. buf's elements may be any type without pointers
// (numbers, arrays and structs of them). A layout outside buf fails with ErrInvalid
// before anything is sent; the rest behaves as Send.
func SendType[T any](ctx context.Context, w *World, buf []T, count int, t datatype.Type, dest, tag int) error {
	if w == nil {
		return withOp("send type", errNilWorld())
	}
	b, err := typeArgs("send type", w, buf, count, t)
	if err != nil {
		return err
	}
	if off, n, ok := t.Contig(count); ok {
		return Send(ctx, w, b[off:off+n], dest, tag)
	}
	n, _ := t.PackSize(count)
	p := packpool.Get(n)
	if _, err := datatype.Pack(p.B, buf, count, t); err != nil {
		packpool.Put(p)
		return withOp("send type", fmt.Errorf("%w: %w", ErrInvalid, err))
	}
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
// message has arrived. Errors are as Recv's and SendType's.
func RecvType[T any](ctx context.Context, w *World, buf []T, count int, t datatype.Type, src, tag int) (Status, error) {
	if w == nil {
		return Status{}, withOp("recv type", errNilWorld())
	}
	b, err := typeArgs("recv type", w, buf, count, t)
	if err != nil {
		return Status{}, err
	}
	if off, n, ok := t.Contig(count); ok {
		st, err := Recv(ctx, w, b[off:off+n], src, tag)
		return typeStatus(st, t), err
	}
	n, _ := t.PackSize(count)
	p := packpool.Get(n)
	defer packpool.Put(p)
	st, err := Recv(ctx, w, p.B, src, tag)
	if err != nil && !errors.Is(err, ErrTruncated) {
		return typeStatus(st, t), err
	}
	got := min(st.Bytes, n)
	if _, uerr := datatype.UnpackPrefix(buf, p.B[:got], count, t); uerr != nil {
		return typeStatus(st, t), withOp("recv type", fmt.Errorf("%w: %w", ErrInvalid, uerr))
	}
	return typeStatus(st, t), err
}

// SendrecvType sends scount copies of the layout st over sbuf to dest with stag and
// receives into rcount copies of rt over rbuf from src (or AnySource) with rtag (or
// AnyTag), as Sendrecv does (MPI_Sendrecv with derived datatypes): the receive is posted
// first, so a ring of ranks exchanging halo columns never deadlocks. Each side moves in
// place when its layout is one run, else through a pooled buffer; the receive's Status
// and length rules are RecvType's.
func SendrecvType[S, R any](ctx context.Context, w *World, sbuf []S, scount int, st datatype.Type, dest, stag int,
	rbuf []R, rcount int, rt datatype.Type, src, rtag int) (Status, error) {
	if w == nil {
		return Status{}, withOp("sendrecv type", errNilWorld())
	}
	sb, err := typeArgs("sendrecv type", w, sbuf, scount, st)
	if err != nil {
		return Status{}, err
	}
	rb, err := typeArgs("sendrecv type", w, rbuf, rcount, rt)
	if err != nil {
		return Status{}, err
	}
	out, in := sb, rb
	var sp, rp *packpool.Buf
	if off, n, ok := st.Contig(scount); ok {
		out = sb[off : off+n]
	} else {
		n, _ := st.PackSize(scount)
		sp = packpool.Get(n)
		if _, err := datatype.Pack(sp.B, sbuf, scount, st); err != nil {
			packpool.Put(sp)
			return Status{}, withOp("sendrecv type", fmt.Errorf("%w: %w", ErrInvalid, err))
		}
		out = sp.B
	}
	roff, rn, rcontig := rt.Contig(rcount)
	if rcontig {
		in = rb[roff : roff+rn]
	} else {
		rn, _ = rt.PackSize(rcount)
		rp = packpool.Get(rn)
		in = rp.B
	}
	stat, err := Sendrecv(ctx, w, out, dest, stag, in, src, rtag)
	if err != nil && ctx.Err() != nil {
		return typeStatus(stat, rt), err // the buffers may still be in use: leave them to the collector
	}
	if sp != nil {
		packpool.Put(sp)
	}
	if rp != nil {
		defer packpool.Put(rp)
		if err == nil || errors.Is(err, ErrTruncated) {
			if _, uerr := datatype.UnpackPrefix(rbuf, rp.B[:min(stat.Bytes, rn)], rcount, rt); uerr != nil {
				return typeStatus(stat, rt), withOp("sendrecv type", fmt.Errorf("%w: %w", ErrInvalid, uerr))
			}
		}
	}
	return typeStatus(stat, rt), err
}

// typeArgs checks the World and the layout of a typed call and returns buf's bytes.
func typeArgs[T any](op string, w *World, buf []T, count int, t datatype.Type) ([]byte, error) {
	if err := w.freedErr(); err != nil {
		return nil, withOp(op, err)
	}
	b, err := datatype.AsBytes(buf)
	if err == nil {
		err = t.Check("layout over buf", count, len(b))
	}
	if err != nil {
		return nil, withOp(op, fmt.Errorf("rank %d: %w: %w", w.Rank(), ErrInvalid, err))
	}
	return b, nil
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
// completes); any other is packed at the call into a pooled buffer, so buf is the
// caller's again at once, and the buffer returns to the pool when the completion is
// reported (Wait, Test or a set call).
func IsendType[T any](w *World, buf []T, count int, t datatype.Type, dest, tag int) (*Request, error) {
	if w == nil {
		return nil, withOp("isend type", errNilWorld())
	}
	b, err := typeArgs("isend type", w, buf, count, t)
	if err != nil {
		return nil, err
	}
	if off, n, ok := t.Contig(count); ok {
		return Isend(w, b[off:off+n], dest, tag)
	}
	n, _ := t.PackSize(count)
	p := packpool.Get(n)
	if _, err := datatype.Pack(p.B, buf, count, t); err != nil {
		packpool.Put(p)
		return nil, withOp("isend type", fmt.Errorf("%w: %w", ErrInvalid, err))
	}
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
// received in place; any other through a pooled buffer, unpacked into the layout as Wait,
// Test or a set call reports the completion (under the runtime's lock: a large layout's
// unpacking holds the rank's other goroutines' calls that long). The Status counts whole
// copies of t, and the length rules are RecvType's.
func IrecvType[T any](w *World, buf []T, count int, t datatype.Type, src, tag int) (*Request, error) {
	if w == nil {
		return nil, withOp("irecv type", errNilWorld())
	}
	b, err := typeArgs("irecv type", w, buf, count, t)
	if err != nil {
		return nil, err
	}
	if off, n, ok := t.Contig(count); ok {
		r, err := Irecv(w, b[off:off+n], src, tag)
		if err != nil {
			return nil, err
		}
		r.finish = func(st Status, err error) (Status, error) { return typeStatus(st, t), err }
		return r, nil
	}
	n, _ := t.PackSize(count)
	p := packpool.Get(n)
	r, err := Irecv(w, p.B, src, tag)
	if err != nil {
		packpool.Put(p)
		return nil, err
	}
	r.finish = func(st Status, err error) (Status, error) {
		defer packpool.Put(p)
		if (err == nil || errors.Is(err, ErrTruncated)) && !st.Cancelled {
			if _, uerr := datatype.UnpackPrefix(buf, p.B[:min(st.Bytes, n)], count, t); uerr != nil {
				return typeStatus(st, t), withOp("irecv type", fmt.Errorf("%w: %w", ErrInvalid, uerr))
			}
		}
		return typeStatus(st, t), err
	}
	return r, nil
}
