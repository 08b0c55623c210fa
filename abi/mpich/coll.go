//go:build cgo

package mpich

// #include "zcalls.h"
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// inPlace reports whether p is MPI_IN_PLACE, (void *)-1.
func inPlace(p unsafe.Pointer) bool { return uintptr(p) == ^uintptr(0) }

// contigType is typeOf for a collective's buffer: the datatype must be contiguous.
func contigType(d Datatype) (*dtype, error) {
	t, err := typeOf(d)
	if err != nil {
		return nil, err
	}
	if !t.contig {
		return nil, errUnsupported("a collective call with a derived datatype that is not contiguous")
	}
	return t, nil
}

// contigBytes is bytesOf for a collective's buffer: its datatype must be contiguous.
func contigBytes(p unsafe.Pointer, count int, d Datatype) ([]byte, error) {
	t, err := contigType(d)
	if err != nil {
		return nil, err
	}
	return bytesOf(p, count, t)
}

// rootArg checks a rooted call's root and returns it as the collectives take it. On an
// intercommunicator the root passes MPI_ROOT, the rest of its group MPI_PROC_NULL and the
// other group the root's rank in its group: runtime.Root, runtime.ProcNull and the rank.
func rootArg(w *runtime.World, root int) (int, error) {
	if w.IsInter() {
		switch {
		case root == mpi_ROOT:
			return runtime.Root, nil
		case root == mpi_PROC_NULL:
			return runtime.ProcNull, nil
		case root >= 0 && root < w.RemoteSize():
			return root, nil
		}
		return 0, mpiErr(mpi_ERR_ROOT, fmt.Sprintf("root %d on an intercommunicator: the root passes MPI_ROOT, the rest of its group MPI_PROC_NULL, the other group the root's rank in [0, %d)", root, w.RemoteSize()))
	}
	if root < 0 || root >= w.Size() {
		return 0, mpiErr(mpi_ERR_ROOT, fmt.Sprintf("root %d is not in [0, %d)", root, w.Size()))
	}
	return root, nil
}

// isRoot reports whether root, as rootArg returns it, makes this rank the root: its own
// rank, or runtime.Root on an intercommunicator.
func isRoot(w *runtime.World, root int) bool {
	if w.IsInter() {
		return root == runtime.Root
	}
	return root == w.Rank()
}

// contributes reports whether this rank's own buffer takes part in a rooted call whose
// root rootArg returned: every rank's on an intracommunicator, on an intercommunicator
// the other group's only.
func contributes(w *runtime.World, root int) bool { return !w.IsInter() || root >= 0 }

// doBarrier is MPI_Barrier.
func doBarrier(c Comm) error {
	w, err := worldOf(c)
	if err != nil {
		return err
	}
	return collectives.Barrier(bg, w)
}

// doBcast is MPI_Bcast.
func doBcast(buf unsafe.Pointer, count int, d Datatype, root int, c Comm) error {
	w, t, b, root, err := bcastArgs(buf, count, d, root, c)
	if err != nil {
		return err
	}
	if t.contig {
		return collectives.Bcast(bg, w, b, root)
	}
	return collectives.BcastType(bg, w, b, count, t.layout, root)
}

// bcastArgs checks a broadcast's arguments and returns its World, its datatype, its
// buffer (nil where the buffer takes no part: the root's group but the root, on an
// intercommunicator) and its root as the collectives take it (rootArg).
func bcastArgs(buf unsafe.Pointer, count int, d Datatype, root int, c Comm) (*runtime.World, *dtype, []byte, int, error) {
	w, err := worldOf(c)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	if root, err = rootArg(w, root); err != nil {
		return nil, nil, nil, 0, err
	}
	t, err := typeOf(d)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	if w.IsInter() && root == runtime.ProcNull {
		return w, t, nil, root, nil
	}
	b, err := spanOf(buf, count, t)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	return w, t, b, root, nil
}

// rooted checks a Gather's or Scatter's arguments: the root's buffer of a block per
// rank (peers: on an intercommunicator the remote group's), at the root only, and each
// rank's own block, nil where the root passes MPI_IN_PLACE and where the rank has none
// (the root's group, on an intercommunicator). It returns root as rootArg does.
func rooted(c Comm, root int, all unsafe.Pointer, allCount int, allType Datatype,
	own unsafe.Pointer, ownCount int, ownType Datatype) (w *runtime.World, rootBuf, ownBuf []byte, r int, err error) {
	if w, err = worldOf(c); err != nil {
		return nil, nil, nil, 0, err
	}
	if r, err = rootArg(w, root); err != nil {
		return nil, nil, nil, 0, err
	}
	if err = checkCount(allCount); err != nil {
		return nil, nil, nil, 0, err
	}
	if isRoot(w, r) {
		if rootBuf, err = contigBytes(all, allCount*peers(w), allType); err != nil {
			return nil, nil, nil, 0, err
		}
	}
	if contributes(w, r) && !(isRoot(w, r) && inPlace(own)) {
		if ownBuf, err = contigBytes(own, ownCount, ownType); err != nil {
			return nil, nil, nil, 0, err
		}
	}
	return w, rootBuf, ownBuf, r, nil
}

// doGather is MPI_Gather.
func doGather(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm) error {
	w, r, s, root, err := rooted(c, root, rbuf, rcount, rd, sbuf, scount, sd)
	if err != nil {
		return err
	}
	return collectives.Gather(bg, w, s, r, root)
}

// doScatter is MPI_Scatter.
func doScatter(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm) error {
	w, s, r, root, err := rooted(c, root, sbuf, scount, sd, rbuf, rcount, rd)
	if err != nil {
		return err
	}
	return collectives.Scatter(bg, w, s, r, root)
}

// doAllgather is MPI_Allgather.
func doAllgather(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm) error {
	w, s, r, err := toAll(sbuf, scount, sd, rbuf, rcount, rd, c, false)
	if err != nil {
		return err
	}
	return collectives.Allgather(bg, w, s, r)
}

// doAlltoall is MPI_Alltoall.
func doAlltoall(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm) error {
	w, s, r, err := toAll(sbuf, scount, sd, rbuf, rcount, rd, c, true)
	if err != nil {
		return err
	}
	return collectives.Alltoall(bg, w, s, r)
}

// toAll checks an Allgather's (perRank false) or an Alltoall's (perRank true)
// arguments: recv holds a block per rank (peers), send one block or one per rank. send
// is nil for MPI_IN_PLACE.
func toAll(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm,
	perRank bool) (w *runtime.World, send, recv []byte, err error) {
	if w, err = worldOf(c); err != nil {
		return nil, nil, nil, err
	}
	if err = checkCount(max(rcount, scount)); err != nil {
		return nil, nil, nil, err
	}
	if recv, err = contigBytes(rbuf, rcount*peers(w), rd); err != nil {
		return nil, nil, nil, err
	}
	if perRank {
		scount *= peers(w)
	}
	if !inPlace(sbuf) {
		if send, err = contigBytes(sbuf, scount, sd); err != nil {
			return nil, nil, nil, err
		}
	}
	return w, send, recv, nil
}

// A reduction is one reducing call, with what its typed form needs.
type reduction struct {
	mode       int
	how        how
	w          *runtime.World
	send, recv unsafe.Pointer
	n          int
	counts     []int // modeReduceScatter: each rank's block, in elements of dt
	op         Op
	dt         Datatype
	root       int
}

// The reducing calls.
const (
	modeAllreduce = iota
	modeReduce
	modeScan
	modeExscan
	modeReduceLocal
	modeReduceScatter      // MPI_Reduce_scatter: a block of counts[r] elements per rank
	modeReduceScatterBlock // MPI_Reduce_scatter_block: a block of n elements per rank
)

// lengths returns the elements in the send and the receive buffer of a, with a.n and
// a.counts in elements of the kind; 0 for a buffer the call does not use.
func (a *reduction) lengths() (send, recv int) {
	switch a.mode {
	case modeReduce:
		switch {
		case !contributes(a.w, a.root):
			if isRoot(a.w, a.root) {
				return 0, a.n
			}
			return 0, 0
		case !isRoot(a.w, a.root):
			return a.n, 0
		}
	case modeReduceScatterBlock:
		all := a.n * a.w.Size()
		if inPlace(a.send) {
			return 0, all
		}
		return all, a.n
	case modeReduceScatter:
		all := 0
		for _, n := range a.counts {
			all += n
		}
		if inPlace(a.send) {
			return 0, all
		}
		return all, a.counts[a.w.Rank()]
	}
	return a.n, a.n
}

// reduceT runs the reduction with elements of type T. It takes a by value, so that a
// call allocates nothing; a nonblocking or persistent call returns its request.
func reduceT[T runtime.Elem](a reduction) (*collectives.Request, error) {
	op, err := opFor[T](a.op, a.dt)
	if err != nil {
		return nil, err
	}
	ns, nr := a.lengths()
	var s, r []T
	if a.send != nil && !inPlace(a.send) {
		s = unsafe.Slice((*T)(a.send), ns)
	}
	if a.recv != nil && nr > 0 {
		r = unsafe.Slice((*T)(a.recv), nr)
	}
	switch a.how {
	case nonblocking:
		return startReduce(a, s, r, op)
	case persistent:
		return initReduce(a, s, r, op)
	}
	switch a.mode {
	case modeAllreduce:
		return nil, collectives.Allreduce(bg, a.w, s, r, op)
	case modeReduce:
		return nil, collectives.Reduce(bg, a.w, s, r, op, a.root)
	case modeScan:
		return nil, collectives.Scan(bg, a.w, s, r, op)
	case modeExscan:
		return nil, collectives.Exscan(bg, a.w, s, r, op)
	case modeReduceLocal:
		return nil, collectives.ReduceLocal(s, r, op)
	case modeReduceScatter:
		return nil, collectives.ReduceScatterV(bg, a.w, s, r, a.counts, op)
	case modeReduceScatterBlock:
		return nil, collectives.ReduceScatter(bg, a.w, s, r, op)
	}
	return nil, a.errMode()
}

// errMode is the internal error of a mode that a form of call does not take.
func (a *reduction) errMode() error {
	return mpiErr(mpi_ERR_INTERN, fmt.Sprintf("reduction mode %d, form %d", a.mode, a.how))
}

// reduceBy is reduceT for each kind.
var reduceBy = [nKinds]func(reduction) (*collectives.Request, error){
	kI8: reduceT[int8], kI16: reduceT[int16], kI32: reduceT[int32], kI64: reduceT[int64],
	kU8: reduceT[uint8], kU16: reduceT[uint16], kU32: reduceT[uint32], kU64: reduceT[uint64],
	kF32: reduceT[float32], kF64: reduceT[float64], kC64: reduceT[complex64], kC128: reduceT[complex128],
}

// reduce checks a reduction's arguments and runs it with its datatype's elements; a
// nonblocking or persistent call returns its request.
func reduce(a reduction, c Comm) (*collectives.Request, error) {
	if a.mode != modeReduceLocal {
		w, err := worldOf(c)
		if err != nil {
			return nil, err
		}
		a.w = w
	}
	if a.mode == modeReduce {
		r, err := rootArg(a.w, a.root)
		if err != nil {
			return nil, err
		}
		a.root = r
	}
	t, err := typeOf(a.dt)
	if err != nil {
		return nil, err
	}
	if err := checkCount(a.n); err != nil {
		return nil, err
	}
	if isLoc(a.op) || t.kind == kNone || !t.contig || t.size%kindSize[t.kind] != 0 {
		l := a // a copy in this branch alone: a itself stays on the stack, so a call allocates nothing
		return reduceLayout(&l, t)
	}
	if m := t.size / kindSize[t.kind]; m != 1 {
		a.n *= m
		if a.counts != nil {
			cs := make([]int, len(a.counts))
			for i, n := range a.counts {
				cs[i] = n * m
			}
			a.counts = cs
		}
	}
	return reduceBy[t.kind](a)
}

// doAllreduce is MPI_Allreduce.
func doAllreduce(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, c Comm) error {
	_, err := reduce(reduction{mode: modeAllreduce, send: sbuf, recv: rbuf, n: count, op: op, dt: d}, c)
	return err
}

// doReduce is MPI_Reduce.
func doReduce(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, root int, c Comm) error {
	_, err := reduce(reduction{mode: modeReduce, send: sbuf, recv: rbuf, n: count, op: op, dt: d, root: root}, c)
	return err
}

// doScan is MPI_Scan.
func doScan(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, c Comm) error {
	_, err := reduce(reduction{mode: modeScan, send: sbuf, recv: rbuf, n: count, op: op, dt: d}, c)
	return err
}

// doExscan is MPI_Exscan.
func doExscan(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, c Comm) error {
	_, err := reduce(reduction{mode: modeExscan, send: sbuf, recv: rbuf, n: count, op: op, dt: d}, c)
	return err
}

// doIallreduce is MPI_Iallreduce.
func doIallreduce(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, c Comm, req *Request) error {
	return newReq(req, nonblocking)(reduce(reduction{mode: modeAllreduce, how: nonblocking, send: sbuf, recv: rbuf, n: count, op: op, dt: d}, c))
}

// reduceLayout runs a reduction whose datatype is a layout, not a run of one kind's
// elements: a user operation over the layout's copies (collectives' Type forms).
func reduceLayout(a *reduction, t *dtype) (*collectives.Request, error) {
	var loc func(inout, in []byte, count int)
	u, ok := userOps.get(int32(a.op))
	switch {
	case isLoc(a.op):
		var err error
		if loc, err = locFunc(a.op, a.dt, t.extent); err != nil {
			return nil, err
		}
		u = &userOp{commute: true}
	case !ok:
		return nil, errUnsupported(fmt.Sprintf("a predefined operation on datatype %#x, which is not one kind's elements", uint32(a.dt)))
	}
	var s, r []byte
	var err error
	if a.send != nil && !inPlace(a.send) && (a.mode != modeReduce || contributes(a.w, a.root)) {
		if s, err = spanOf(a.send, a.n, t); err != nil {
			return nil, err
		}
	}
	if a.recv != nil && !(a.mode == modeReduce && !isRoot(a.w, a.root)) {
		if r, err = spanOf(a.recv, a.n, t); err != nil {
			return nil, err
		}
	}
	if a.mode == modeReduceLocal {
		if loc != nil {
			loc(r, s, a.n)
			return nil, nil
		}
		return nil, reduceLocalLayout(a, u)
	}
	name := fmt.Sprintf("MPI_Op %#x", uint32(a.op))
	if loc != nil {
		name = opName(a.op)
	}
	op := collectives.NewTypeOp(name, func(inout, in []byte, count int) {
		switch {
		case count == 0:
		case loc != nil:
			loc(inout, in, count)
		case u.commute:
			callUserOp(u, unsafe.Pointer(&in[0]), unsafe.Pointer(&inout[0]), count, a.dt)
		default:
			// The C function sets its second buffer to first ∘ second; the collectives
			// want inout ∘ in in inout. A copy of in takes the result, and the
			// layout's bytes go back to inout.
			tmp := append([]byte(nil), in...)
			callUserOp(u, unsafe.Pointer(&inout[0]), unsafe.Pointer(&tmp[0]), count, a.dt)
			for i := range count {
				for _, b := range t.layout.Blocks() {
					o := i*t.extent + b.Off
					copy(inout[o:o+b.Len], tmp[o:o+b.Len])
				}
			}
		}
	}, u.commute)
	switch {
	case a.mode == modeAllreduce && a.how == blocking:
		return nil, collectives.AllreduceType(bg, a.w, s, r, a.n, t.layout, op)
	case a.mode == modeAllreduce && a.how == nonblocking:
		return collectives.IallreduceType(bg, a.w, s, r, a.n, t.layout, op), nil
	case a.mode == modeAllreduce && a.how == persistent:
		return collectives.AllreduceTypeInit(a.w, s, r, a.n, t.layout, op), nil
	case a.mode == modeReduce && a.how == blocking:
		return nil, collectives.ReduceType(bg, a.w, s, r, a.n, t.layout, op, a.root)
	case a.mode == modeReduce && a.how == nonblocking:
		return collectives.IreduceType(bg, a.w, s, r, a.n, t.layout, op, a.root), nil
	case a.mode == modeReduce && a.how == persistent:
		return collectives.ReduceTypeInit(a.w, s, r, a.n, t.layout, op, a.root), nil
	}
	return nil, errUnsupported(fmt.Sprintf("this reduction on datatype %#x, which is not one kind's elements", uint32(a.dt)))
}
