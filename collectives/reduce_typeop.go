package collectives

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/internal/packpool"
	"github.com/gorma-hpc/gorma/runtime"
)

// TypeOp is a user reduction operator over copies of a datatype layout (MPI_Op_create
// used with a derived datatype): fn(inout, in, count) combines count copies of the layout
// laid over inout with as many laid over in, the same way, setting each copy of inout to
// inout ∘ in. Both slices place the copies as the caller's buffers do (the layout's
// typemap from index 0, consecutive copies one extent apart); fn must change only the
// elements the layout covers in inout, and must not retain either slice. The zero
// TypeOp is invalid (Valid reports false).
type TypeOp[T any] struct {
	name        string
	fn          func(inout, in []T, count int)
	commutative bool
}

// NewTypeOp returns the user operator named name that fn applies (see TypeOp). Declare
// commutative only if a ∘ b == b ∘ a: ReduceType and AllreduceType combine the ranks'
// copies of a non-commutative operator in rank order.
func NewTypeOp[T any](name string, fn func(inout, in []T, count int), commutative bool) TypeOp[T] {
	return TypeOp[T]{name: name, fn: fn, commutative: commutative}
}

// Name is the operator's name.
func (o TypeOp[T]) Name() string { return o.name }

// Commutative reports whether the operands may be combined in any order
// (MPI_Op_commutative).
func (o TypeOp[T]) Commutative() bool { return o.commutative }

// Valid reports whether o is an operator (not the zero TypeOp).
func (o TypeOp[T]) Valid() bool { return o.fn != nil }

// ReduceType combines count copies of the layout t over every rank's send with op, in
// rank order, into the same layout over root's recv (MPI_Reduce with a derived datatype
// and a user operator). Recv is used at root only, and its bytes outside the layout are
// left as they are. At root, send nil means in place: recv holds root's input. Every
// rank must pass the same packed size (count*t.Size(): the layouts may differ, as MPI's
// type signature rule allows), op and root; GORMA_CHECK=1 compares the packed size.
//
// The copies travel packed (count*t.Size() bytes) up a binomial tree: rooted at root for
// a commutative op; rooted at rank 0, where rank order holds, and then sent to root for a
// non-commutative one. A rank that combines unpacks what it receives into a buffer of
// its send's length, so a call allocates two such buffers at the ranks that combine.
//
// On an intercommunicator root is as for Reduce: the root receives the remote group's
// reduction, which its ranks pass in send, and the root's other group members pass
// nothing. There is no in-place form.
func ReduceType[T any](ctx context.Context, w *runtime.World, send, recv []T, count int, t datatype.Type, op TypeOp[T], root int) error {
	n := packedLen(count, t)
	if w != nil && w.IsInter() {
		return interErr("reduce type", w, beginInter(w, "reduce").end(interReduceType(ctx, w, send, recv, count, t, op, root), max(n, 0)))
	}
	c, err := begin(ctx, w, "reduce type", n, "byte", op.name, root)
	if err != nil {
		return err
	}
	c.atRoot(root, max(n, 0), max(n, 0))
	return c.end(reduceTypeOp(c, send, recv, count, t, op, root, false))
}

// AllreduceType is ReduceType with every rank receiving the result in recv
// (MPI_Allreduce with a derived datatype and a user operator). send nil means in place
// at every rank. The result is reduced to rank 0 and broadcast from there, packed. On an
// intercommunicator each group receives the other group's reduction; there is no
// in-place form.
func AllreduceType[T any](ctx context.Context, w *runtime.World, send, recv []T, count int, t datatype.Type, op TypeOp[T]) error {
	n := packedLen(count, t)
	if w != nil && w.IsInter() {
		return interErr("allreduce type", w, beginInter(w, "allreduce").end(interAllreduceType(ctx, w, send, recv, count, t, op), max(n, 0)))
	}
	c, err := begin(ctx, w, "allreduce type", n, "byte", op.name, -1)
	if err != nil {
		return err
	}
	c.toAll(max(n, 0), max(n, 0))
	return c.end(reduceTypeOp(c, send, recv, count, t, op, 0, true))
}

// reduceTypeOp runs ReduceType, or AllreduceType (all, root 0).
func reduceTypeOp[T any](c *call, sbuf, rbuf []T, count int, t datatype.Type, op TypeOp[T], root int, all bool) error {
	p, r := c.s.size, c.s.rank
	out := all || r == root // this rank receives the result
	switch {
	case !op.Valid():
		return invalid("zero TypeOp")
	case root < 0 || root >= p:
		return invalid("root %d of %d ranks", root, p)
	case count < 0:
		return invalid("count %d is negative", count)
	case sbuf == nil && !out:
		return invalid("nil send at a rank other than root (in place is for root only)")
	}
	in := sbuf
	if sbuf == nil {
		in = rbuf
	}
	if err := layoutOver("send", in, count, t); err != nil {
		return err
	}
	if out {
		if err := layoutOver("recv", rbuf, count, t); err != nil {
			return err
		}
		if sbuf != nil && bytesOverlap(sbuf, rbuf) {
			return invalid("send and recv overlap (pass a nil send for in place)")
		}
	}
	n, _ := t.PackSize(count)
	pb := packpool.Get(n)
	packed := pb.B
	if p == 1 || n == 0 {
		var err error
		if out && sbuf != nil {
			err = copyLayout(rbuf, sbuf, count, t, packed)
		}
		packpool.Put(pb)
		return err
	}
	tag := c.tag
	c.tag = rootTag(tag, root) // ranks that name different roots never match
	if all {
		c.chose("binomial_bcast")
	}
	c.chose("binomial")
	treeRoot := root
	if !op.commutative {
		treeRoot = 0 // where rank order holds
	}
	vr := (r - treeRoot + p) % p
	var acc []T // the copies this rank combines into; nil at a leaf, which sends in
	if vr&1 == 0 && vr+1 < p {
		acc = rbuf
		if !out || all {
			acc = make([]T, len(in))
		}
		if !sameStart(acc, in) {
			if err := copyLayout(acc, in, count, t, packed); err != nil {
				return err
			}
		}
	}
	var tmp []T
	for mask := 1; mask < p; mask <<= 1 {
		if vr&mask != 0 {
			src := in
			if acc != nil {
				src = acc
			}
			if _, err := datatype.Pack(packed, src, count, t); err != nil {
				return err
			}
			if err := send(c, packed, (vr-mask+treeRoot)%p); err != nil {
				return err
			}
			break
		}
		if vr+mask < p {
			if err := recv(c, packed, (vr+mask+treeRoot)%p); err != nil {
				return err
			}
			if tmp == nil {
				tmp = make([]T, len(in))
			}
			if _, err := datatype.Unpack(tmp, packed, count, t); err != nil {
				return err
			}
			op.fn(acc, tmp, count) // acc holds lower ranks' copies than tmp: rank order
		}
	}
	switch {
	case all:
		// Rank 0 holds the result; the broadcast takes a tag of its own.
		if r == 0 {
			if _, err := datatype.Pack(packed, acc, count, t); err != nil {
				return err
			}
		}
		c.tag = rootTag(tag, p)
		if err := bcast(c, packed, 0); err != nil {
			return err
		}
		if _, err := datatype.Unpack(rbuf, packed, count, t); err != nil {
			return err
		}
	case treeRoot == root:
		// Root combined into rbuf.
	case r == 0: // non-commutative, root not 0: rank 0 sends the result to root
		if _, err := datatype.Pack(packed, acc, count, t); err != nil {
			return err
		}
		if err := send(c, packed, root); err != nil {
			return err
		}
	case r == root:
		if err := recv(c, packed, 0); err != nil {
			return err
		}
		if _, err := datatype.Unpack(rbuf, packed, count, t); err != nil {
			return err
		}
	}
	packpool.Put(pb) // on error it is dropped: a peer may still be reading it
	return nil
}

// packedLen is the packed length of count copies of t, which every rank must agree on
// (ranks may use different layouts of the same type signature), -1 if there is none.
func packedLen(count int, t datatype.Type) int {
	n, err := t.PackSize(count)
	if err != nil {
		return -1
	}
	return n
}

// sameStart reports whether a and b start at the same element (empty slices never do).
func sameStart[T any](a, b []T) bool {
	return len(a) > 0 && len(b) > 0 && &a[0] == &b[0]
}

// bytesOverlap reports whether a and b share memory.
func bytesOverlap[T any](a, b []T) bool {
	ab, err1 := datatype.AsBytes(a)
	bb, err2 := datatype.AsBytes(b)
	return err1 == nil && err2 == nil && overlap(ab, bb)
}

// copyLayout copies count copies of t over src into the same layout over dst, through
// packed (at least the packed size).
func copyLayout[T any](dst, src []T, count int, t datatype.Type, packed []byte) error {
	if _, err := datatype.Pack(packed, src, count, t); err != nil {
		return err
	}
	_, err := datatype.Unpack(dst, packed, count, t)
	return err
}

// layoutOver checks count copies of t over buf (what names it).
func layoutOver[T any](what string, buf []T, count int, t datatype.Type) error {
	b, err := datatype.AsBytes(buf)
	if err == nil {
		err = t.Check(what, count, len(b))
	}
	if err != nil {
		return fmt.Errorf("%w: %w", runtime.ErrInvalid, err)
	}
	return nil
}

// IreduceType starts ReduceType (MPI_Ireduce with a derived datatype and a user
// operator).
func IreduceType[T any](ctx context.Context, w *runtime.World, send, recv []T, count int, t datatype.Type, op TypeOp[T], root int) *Request {
	return started(ctx, newRequest(w, "reduce type", false, func(ctx context.Context) error {
		return ReduceType(ctx, w, send, recv, count, t, op, root)
	}))
}

// IallreduceType starts AllreduceType (MPI_Iallreduce with a derived datatype and a user
// operator).
func IallreduceType[T any](ctx context.Context, w *runtime.World, send, recv []T, count int, t datatype.Type, op TypeOp[T]) *Request {
	return started(ctx, newRequest(w, "allreduce type", false, func(ctx context.Context) error {
		return AllreduceType(ctx, w, send, recv, count, t, op)
	}))
}

// ReduceTypeInit returns a persistent Request for ReduceType (MPI_Reduce_init with a
// derived datatype and a user operator).
func ReduceTypeInit[T any](w *runtime.World, send, recv []T, count int, t datatype.Type, op TypeOp[T], root int) *Request {
	return newPersistent(w, "reduce type", func(ctx context.Context) error {
		return ReduceType(ctx, w, send, recv, count, t, op, root)
	})
}

// AllreduceTypeInit returns a persistent Request for AllreduceType (MPI_Allreduce_init
// with a derived datatype and a user operator).
func AllreduceTypeInit[T any](w *runtime.World, send, recv []T, count int, t datatype.Type, op TypeOp[T]) *Request {
	return newPersistent(w, "allreduce type", func(ctx context.Context) error {
		return AllreduceType(ctx, w, send, recv, count, t, op)
	})
}
