package collectives

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/internal/packpool"
	"github.com/gorma-hpc/gorma/runtime"
)

// The typed collectives move count copies of a datatype layout over a buffer of any
// element type without pointers. Each packs what it sends into a pooled buffer (a layout
// that is one run goes in place), runs the collective of the same name on the bytes, and
// unpacks what it received: the packed data, count * t.Size() bytes in typemap order, is
// what travels. So every rank may use its own layout as long as the byte counts match
// (MPI's type signature rule). A layout outside its buffer fails with runtime.ErrInvalid
// at the rank that passed it, before the collective starts; other errors are the
// underlying collective's.

// BcastType copies count copies of the layout t over root's buf into the same layout
// over every other rank's buf (MPI_Bcast with a derived datatype). On an
// intercommunicator root takes runtime.Root at the root, runtime.ProcNull at the other
// ranks of its group (whose buf is not used) and the root's rank at the remote group,
// whose ranks receive (as Bcast).
func BcastType[T any](ctx context.Context, w *runtime.World, buf []T, count int, t datatype.Type, root int) error {
	const op = "bcast type"
	role, err := typedRole(op, w, root)
	if err != nil {
		return err
	}
	if role == roleIdle {
		return Bcast[byte](ctx, w, nil, root)
	}
	b, err := typeArgs(op, w, buf, count, t)
	if err != nil {
		return err
	}
	if off, n, ok := t.Contig(count); ok {
		return Bcast(ctx, w, b[off:off+n], root)
	}
	n, _ := t.PackSize(count)
	p := packpool.Get(n)
	if role == roleRoot {
		if _, err := datatype.Pack(p.B, buf, count, t); err != nil {
			return typeErr(op, w, err)
		}
	}
	if err := Bcast(ctx, w, p.B, root); err != nil {
		return err // p is dropped: a peer may still be reading it
	}
	if role == roleRemote {
		if _, err := datatype.Unpack(buf, p.B, count, t); err != nil {
			return typeErr(op, w, err)
		}
	}
	packpool.Put(p)
	return nil
}

// typedRole is what root makes of this rank in a rooted typed call: roleRoot at the
// root. roleRemote at a rank that receives from it or sends to it (every other rank of
// an intracommunicator, the remote group's of an intercommunicator). roleIdle at the
// root's group's other ranks of an intercommunicator, which move no data. A root out of
// range on an intracommunicator is left to the call on the bytes to name.
func typedRole(op string, w *runtime.World, root int) (interRole, error) {
	switch {
	case w == nil:
		return 0, fmt.Errorf("collectives: %s: %w: nil World", op, runtime.ErrInvalid)
	case w.IsInter():
		role, err := interRoot(w, root)
		return role, interErr(op, w, err)
	case w.Rank() == root:
		return roleRoot, nil
	}
	return roleRemote, nil
}

// blockCount is the number of blocks at a rank that sends to or receives from every
// rank: the World's size, or on an intercommunicator the remote group's.
func blockCount(w *runtime.World) int {
	if w.IsInter() {
		return w.RemoteSize()
	}
	return w.Size()
}

// noInPlace is the error of a nil buffer, which means in place, on an intercommunicator,
// where MPI has no in-place form.
func noInPlace(op, what string, w *runtime.World) error {
	return interErr(op, w, invalid("nil %s: an intercommunicator's %s has no in-place form (pass a buffer)", what, op))
}

// GatherType collects every rank's scount copies of st over send into root's recv, rank
// r's data laid as copies r*rcount to (r+1)*rcount-1 of rt (MPI_Gather with derived
// datatypes). recv is used at root only; scount*st.Size() must equal rcount*rt.Size().
// At root, send nil means in place (MPI_IN_PLACE): root's copies are already at their
// place in recv, and scount and st are not used there. On an intercommunicator root is
// as for Gather: the root receives the remote group's blocks and its send is not used,
// the root's other group members pass nothing, and there is no in-place form.
func GatherType[S, R any](ctx context.Context, w *runtime.World, send []S, scount int, st datatype.Type, recv []R, rcount int, rt datatype.Type, root int) error {
	const op = "gather type"
	role, err := typedRole(op, w, root)
	if err != nil {
		return err
	}
	inter, atRoot := w.IsInter(), role == roleRoot
	switch {
	case role == roleIdle:
		return Gather[byte](ctx, w, nil, nil, root)
	case inter && !atRoot && send == nil:
		return noInPlace(op, "send", w)
	}
	inPlace := atRoot && !inter && send == nil
	sends := !atRoot || !inter && !inPlace // this rank's block travels
	var n int
	if sends {
		if _, err := typeArgs(op, w, send, scount, st); err != nil {
			return err
		}
		n, _ = st.PackSize(scount)
	} else {
		n, _ = rt.PackSize(rcount)
	}
	var ps, pa *packpool.Buf
	var mine, all []byte
	if atRoot {
		if err := recvArgs(op, w, recv, rcount, rt, n); err != nil {
			return err
		}
		pa = packpool.Get(n * blockCount(w))
		all = pa.B
	}
	if inPlace {
		// Root's own copies go into their block of all, which Gather leaves as it is.
		if err := packCopies(all[root*n:(root+1)*n], recv, root*rcount, rcount, rt); err != nil {
			return typeErr(op, w, err)
		}
	}
	if sends {
		ps = packpool.Get(n)
		mine = ps.B
		if _, err := datatype.Pack(mine, send, scount, st); err != nil {
			return typeErr(op, w, err)
		}
	}
	if err := Gather(ctx, w, mine, all, root); err != nil {
		return err
	}
	if ps != nil {
		packpool.Put(ps)
	}
	if atRoot {
		if _, err := datatype.Unpack(recv, all, rcount*blockCount(w), rt); err != nil {
			return typeErr(op, w, err)
		}
		packpool.Put(pa)
	}
	return nil
}

// ScatterType is GatherType's inverse (MPI_Scatter with derived datatypes): root's send
// holds Size()*scount copies of st, and rank r's recv gets copies r*scount to
// (r+1)*scount-1 as rcount copies of rt. send is used at root only. At root, recv nil
// means in place (MPI_IN_PLACE): root's copies stay where they are in send, and rcount
// and rt are not used there. On an intercommunicator root is as for Scatter: the root's
// send holds a block per rank of the remote group and its recv is not used, the root's
// other group members pass nothing, and there is no in-place form.
func ScatterType[S, R any](ctx context.Context, w *runtime.World, send []S, scount int, st datatype.Type, recv []R, rcount int, rt datatype.Type, root int) error {
	const op = "scatter type"
	role, err := typedRole(op, w, root)
	if err != nil {
		return err
	}
	inter, atRoot := w.IsInter(), role == roleRoot
	switch {
	case role == roleIdle:
		return Scatter[byte](ctx, w, nil, nil, root)
	case inter && !atRoot && recv == nil:
		return noInPlace(op, "recv", w)
	}
	receives := !atRoot || !inter && recv != nil // a block arrives for this rank
	var n int
	if receives {
		if _, err := typeArgs(op, w, recv, rcount, rt); err != nil {
			return err
		}
		n, _ = rt.PackSize(rcount)
	} else {
		n, _ = st.PackSize(scount)
	}
	var all, mine []byte
	var pa, pr *packpool.Buf
	if atRoot {
		if err := sendArgs(op, w, send, scount, st, n); err != nil {
			return err
		}
		pa = packpool.Get(n * blockCount(w))
		all = pa.B
		if _, err := datatype.Pack(all, send, scount*blockCount(w), st); err != nil {
			return typeErr(op, w, err)
		}
	}
	if receives {
		pr = packpool.Get(n)
		mine = pr.B
	}
	if err := Scatter(ctx, w, all, mine, root); err != nil {
		return err
	}
	if pr != nil {
		if _, err := datatype.Unpack(recv, mine, rcount, rt); err != nil {
			return typeErr(op, w, err)
		}
		packpool.Put(pr)
	}
	if pa != nil {
		packpool.Put(pa)
	}
	return nil
}

// packCopies packs copies first to first+count-1 of t over buf into dst.
func packCopies[T any](dst []byte, buf []T, first, count int, t datatype.Type) error {
	if count == 0 || t.Size() == 0 {
		return nil
	}
	at, err := t.Hindexed([]int{count}, []int{first * t.Extent()})
	if err != nil {
		return err
	}
	_, err = datatype.Pack(dst, buf, 1, at)
	return err
}

// AllgatherType is GatherType with every rank receiving (MPI_Allgather with derived
// datatypes). send nil means in place (MPI_IN_PLACE): each rank's copies are already at
// their place in recv, and scount and st are not used. On an intercommunicator recv
// holds a block per rank of the remote group, and there is no in-place form.
func AllgatherType[S, R any](ctx context.Context, w *runtime.World, send []S, scount int, st datatype.Type, recv []R, rcount int, rt datatype.Type) error {
	if w == nil {
		return fmt.Errorf("collectives: allgather type: %w: nil World", runtime.ErrInvalid)
	}
	if w.IsInter() && send == nil {
		return noInPlace("allgather type", "send", w)
	}
	inPlace := send == nil
	var n int
	if inPlace {
		n, _ = rt.PackSize(rcount)
	} else {
		if _, err := typeArgs("allgather type", w, send, scount, st); err != nil {
			return err
		}
		n, _ = st.PackSize(scount)
	}
	if err := recvArgs("allgather type", w, recv, rcount, rt, n); err != nil {
		return err
	}
	pa := packpool.Get(n * blockCount(w))
	var ps *packpool.Buf
	var mine []byte // nil: in place
	if inPlace {
		r := w.Rank()
		if err := packCopies(pa.B[r*n:(r+1)*n], recv, r*rcount, rcount, rt); err != nil {
			return typeErr("allgather type", w, err)
		}
	} else {
		ps = packpool.Get(n)
		mine = ps.B
		if _, err := datatype.Pack(mine, send, scount, st); err != nil {
			return typeErr("allgather type", w, err)
		}
	}
	if err := Allgather(ctx, w, mine, pa.B); err != nil {
		return err
	}
	if _, err := datatype.Unpack(recv, pa.B, rcount*blockCount(w), rt); err != nil {
		return typeErr("allgather type", w, err)
	}
	if ps != nil {
		packpool.Put(ps)
	}
	packpool.Put(pa)
	return nil
}

// AlltoallType sends copies r*scount to (r+1)*scount-1 of st over send to rank r, and
// lays rank r's data as copies r*rcount to (r+1)*rcount-1 of rt over recv (MPI_Alltoall
// with derived datatypes). send nil means in place (MPI_IN_PLACE): recv holds the copies
// to send, laid as the copies received are, and scount and st are not used. On an
// intercommunicator the blocks are the remote group's ranks', and there is no in-place
// form.
func AlltoallType[S, R any](ctx context.Context, w *runtime.World, send []S, scount int, st datatype.Type, recv []R, rcount int, rt datatype.Type) error {
	if w == nil {
		return fmt.Errorf("collectives: alltoall type: %w: nil World", runtime.ErrInvalid)
	}
	if w.IsInter() && send == nil {
		return noInPlace("alltoall type", "send", w)
	}
	if send == nil {
		// The copies to send are packed from recv before any is received.
		return alltoallType(ctx, w, recv, rcount, rt, recv, rcount, rt)
	}
	return alltoallType(ctx, w, send, scount, st, recv, rcount, rt)
}

func alltoallType[S, R any](ctx context.Context, w *runtime.World, send []S, scount int, st datatype.Type, recv []R, rcount int, rt datatype.Type) error {
	n, err := st.PackSize(scount)
	if err != nil {
		return typeErr("alltoall type", w, err)
	}
	if err := sendArgs("alltoall type", w, send, scount, st, n); err != nil {
		return err
	}
	if err := recvArgs("alltoall type", w, recv, rcount, rt, n); err != nil {
		return err
	}
	m := blockCount(w)
	ps, pr := packpool.Get(n*m), packpool.Get(n*m)
	if _, err := datatype.Pack(ps.B, send, scount*m, st); err != nil {
		return typeErr("alltoall type", w, err)
	}
	if err := Alltoall(ctx, w, ps.B, pr.B); err != nil {
		return err
	}
	if _, err := datatype.Unpack(recv, pr.B, rcount*m, rt); err != nil {
		return typeErr("alltoall type", w, err)
	}
	packpool.Put(ps)
	packpool.Put(pr)
	return nil
}

// typeArgs checks count copies of t over buf and returns buf's bytes.
func typeArgs[T any](op string, w *runtime.World, buf []T, count int, t datatype.Type) ([]byte, error) {
	if w == nil {
		return nil, fmt.Errorf("collectives: %s: %w: nil World", op, runtime.ErrInvalid)
	}
	b, err := datatype.AsBytes(buf)
	if err == nil {
		err = t.Check("layout over buf", count, len(b))
	}
	if err != nil {
		return nil, typeErr(op, w, err)
	}
	return b, nil
}

// recvArgs checks a receiving side of blockCount(w) blocks of rcount copies of rt, each block
// matching n packed bytes from every sender.
func recvArgs[R any](op string, w *runtime.World, recv []R, rcount int, rt datatype.Type, n int) error {
	rn, err := rt.PackSize(rcount)
	if err == nil && rn != n {
		err = fmt.Errorf("each rank's block is %d packed bytes, but %d copies of %v are %d", n, rcount, rt, rn)
	}
	if err != nil {
		return typeErr(op, w, err)
	}
	_, err = typeArgs(op, w, recv, rcount*blockCount(w), rt)
	return err
}

// sendArgs checks a sending side of blockCount(w) blocks of scount copies of st, each block n
// packed bytes.
func sendArgs[S any](op string, w *runtime.World, send []S, scount int, st datatype.Type, n int) error {
	sn, err := st.PackSize(scount)
	if err == nil && sn != n {
		err = fmt.Errorf("each rank's block is %d packed bytes, but %d copies of %v are %d", n, scount, st, sn)
	}
	if err != nil {
		return typeErr(op, w, err)
	}
	_, err = typeArgs(op, w, send, scount*blockCount(w), st)
	return err
}

func typeErr(op string, w *runtime.World, err error) error {
	return fmt.Errorf("collectives: %s: rank %d: %w: %w", op, w.Rank(), runtime.ErrInvalid, err)
}
