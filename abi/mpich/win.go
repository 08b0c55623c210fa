//go:build cgo

package mpich

import (
	"fmt"
	"unsafe"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// A win is a window: a window.Win of bytes, whose displacements this library scales by
// each target's displacement unit.
type win struct {
	w     *window.Win[byte]
	comm  *runtime.World
	units []int // each rank's disp_unit
	errh  Errhandler
	attrs winAttrs
}

var wins = newTable[*win](kindWin)

// winOf returns the window of handle h.
func winOf(h Win) (*win, error) {
	if wo, ok := wins.get(int32(h)); ok {
		return wo, nil
	}
	return nil, errHandle("window", int32(h))
}

// newWin registers w over comm co, gathering every rank's displacement unit. base and
// size are this rank's memory.
func newWin(w *window.Win[byte], co *comm, base unsafe.Pointer, size, unit int, out *Win) error {
	if unit <= 0 {
		w.Free(bg)
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("disp_unit %d is not positive", unit))
	}
	all := make([]int64, co.w.Size())
	if err := collectives.Allgather(bg, co.w, []int64{int64(unit)}, all); err != nil {
		w.Free(bg)
		return err
	}
	units := make([]int, len(all))
	for i, u := range all {
		units[i] = int(u)
	}
	*out = Win(wins.add(&win{w: w, comm: co.w, units: units, errh: co.errh, attrs: newWinAttrs(w, base, size, unit)}))
	return nil
}

// doWinAllocate is MPI_Win_allocate: size bytes of the runtime's arena per rank.
func doWinAllocate(size, unit int, info Info, c Comm, baseptr unsafe.Pointer, out *Win) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	if size < 0 {
		return mpiErr(mpi_ERR_SIZE, fmt.Sprintf("size %d is negative", size))
	}
	w, err := window.Allocate[byte](bg, co.w, size)
	if err != nil {
		return err
	}
	var base unsafe.Pointer
	if l := w.Local(); len(l) > 0 {
		base = unsafe.Pointer(&l[0])
	}
	*(*unsafe.Pointer)(baseptr) = base
	if err := newWin(w, co, base, size, unit, out); err != nil {
		return err
	}
	return setWinHints(*out, info)
}

// doWinCreate is MPI_Win_create: the caller's memory.
func doWinCreate(base unsafe.Pointer, size, unit int, info Info, c Comm, out *Win) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	if size < 0 {
		return mpiErr(mpi_ERR_SIZE, fmt.Sprintf("size %d is negative", size))
	}
	var buf []byte
	if size > 0 {
		if base == nil {
			return mpiErr(mpi_ERR_BUFFER, "base is NULL")
		}
		buf = unsafe.Slice((*byte)(base), size)
	}
	w, err := window.Create(bg, co.w, buf)
	if err != nil {
		return err
	}
	if err := newWin(w, co, base, size, unit, out); err != nil {
		return err
	}
	return setWinHints(*out, info)
}

// doWinFree is MPI_Win_free: the attributes' delete callbacks run first.
func doWinFree(h *Win) error {
	if _, err := winOf(*h); err == nil {
		if err := freeWinState(*h); err != nil {
			return err
		}
	}
	wo, ok := wins.del(int32(*h))
	if !ok {
		return errHandle("window", int32(*h))
	}
	*h = mpi_WIN_NULL
	wo.attrs.free()
	return wo.w.Free(bg)
}

// doWinSetErrhandler is MPI_Win_set_errhandler.
func doWinSetErrhandler(h Win, e Errhandler) error {
	wo, err := winOf(h)
	if err != nil {
		return err
	}
	if err := checkErrh(e, true); err != nil {
		return err
	}
	wo.errh = e
	return nil
}

// onWin runs f on the window of handle h.
func onWin(h Win, f func(w *window.Win[byte]) error) error {
	wo, err := winOf(h)
	if err != nil {
		return err
	}
	return f(wo.w)
}

// assert maps MPI_MODE_* (1024 and up) onto window's assertions, which keep their order.
func assert(a int) window.Assert { return window.Assert(a >> 10) }

// doWinFence is MPI_Win_fence.
func doWinFence(a int, h Win) error {
	return onWin(h, func(w *window.Win[byte]) error { return w.Fence(bg, assert(a)) })
}

// doWinLock is MPI_Win_lock.
func doWinLock(lockType, rank, a int, h Win) error {
	wo, err := winOf(h)
	if err != nil {
		return err
	}
	var lt window.LockType
	switch lockType {
	case mpi_LOCK_EXCLUSIVE:
		lt = window.Exclusive
	case mpi_LOCK_SHARED:
		lt = window.Shared
	default:
		return mpiErr(mpi_ERR_LOCKTYPE, fmt.Sprintf("lock type %d is neither MPI_LOCK_EXCLUSIVE nor MPI_LOCK_SHARED", lockType))
	}
	return wo.w.Lock(bg, lt, rank, assert(a))
}

// doWinUnlock is MPI_Win_unlock.
func doWinUnlock(rank int, h Win) error {
	return onWin(h, func(w *window.Win[byte]) error { return w.Unlock(bg, rank) })
}

// doWinLockAll is MPI_Win_lock_all.
func doWinLockAll(a int, h Win) error {
	return onWin(h, func(w *window.Win[byte]) error { return w.LockAll(bg, assert(a)) })
}

// doWinUnlockAll is MPI_Win_unlock_all.
func doWinUnlockAll(h Win) error {
	return onWin(h, func(w *window.Win[byte]) error { return w.UnlockAll(bg) })
}

// doWinFlush is MPI_Win_flush.
func doWinFlush(rank int, h Win) error {
	return onWin(h, func(w *window.Win[byte]) error { return w.Flush(bg, rank) })
}

// doWinFlushAll is MPI_Win_flush_all.
func doWinFlushAll(h Win) error {
	return onWin(h, func(w *window.Win[byte]) error { return w.FlushAll(bg) })
}

// doWinFlushLocal is MPI_Win_flush_local.
func doWinFlushLocal(rank int, h Win) error {
	return onWin(h, func(w *window.Win[byte]) error { return w.FlushLocal(bg, rank) })
}

// doWinFlushLocalAll is MPI_Win_flush_local_all.
func doWinFlushLocalAll(h Win) error {
	return onWin(h, func(w *window.Win[byte]) error { return w.FlushLocalAll(bg) })
}

// doWinSync is MPI_Win_sync.
func doWinSync(h Win) error {
	return onWin(h, func(w *window.Win[byte]) error { return w.Sync(bg) })
}

// ranksOf translates group g into ranks of the window's communicator.
func (wo *win) ranksOf(g Group) ([]int, error) {
	grp, err := groupOf(g)
	if err != nil {
		return nil, err
	}
	idx := make([]int, grp.Size())
	for i := range idx {
		idx[i] = i
	}
	r, err := grp.TranslateRanks(idx, wo.comm.Group())
	if err != nil {
		return nil, mpiErr(mpi_ERR_GROUP, err.Error())
	}
	for i, x := range r {
		if x < 0 {
			return nil, mpiErr(mpi_ERR_GROUP, fmt.Sprintf("group rank %d is not in the window's communicator", i))
		}
	}
	return r, nil
}

// doWinPost is MPI_Win_post.
func doWinPost(g Group, a int, h Win) error {
	wo, err := winOf(h)
	if err != nil {
		return err
	}
	ranks, err := wo.ranksOf(g)
	if err != nil {
		return err
	}
	return wo.w.Post(bg, ranks, assert(a))
}

// doWinStart is MPI_Win_start.
func doWinStart(g Group, a int, h Win) error {
	wo, err := winOf(h)
	if err != nil {
		return err
	}
	ranks, err := wo.ranksOf(g)
	if err != nil {
		return err
	}
	return wo.w.Start(bg, ranks, assert(a))
}

// doWinComplete is MPI_Win_complete.
func doWinComplete(h Win) error {
	return onWin(h, func(w *window.Win[byte]) error { return w.Complete(bg) })
}

// doWinWait is MPI_Win_wait.
func doWinWait(h Win) error {
	return onWin(h, func(w *window.Win[byte]) error { return w.Wait(bg) })
}

// rmaArgs checks a one-sided call's origin and target and returns the window, the
// origin's bytes and datatype, the target's datatype and its byte displacement.
func rmaArgs(h Win, org unsafe.Pointer, ocount int, od Datatype, rank, disp, tcount int, td Datatype) (*win, []byte, *dtype, *dtype, int, error) {
	wo, err := winOf(h)
	if err != nil {
		return nil, nil, nil, nil, 0, err
	}
	if rank < 0 || rank >= len(wo.units) {
		return nil, nil, nil, nil, 0, errRank(rank, len(wo.units))
	}
	ot, err := typeOf(od)
	if err != nil {
		return nil, nil, nil, nil, 0, err
	}
	tt, err := typeOf(td)
	if err != nil {
		return nil, nil, nil, nil, 0, err
	}
	b, err := spanOf(org, ocount, ot)
	if err != nil {
		return nil, nil, nil, nil, 0, err
	}
	if tcount < 0 {
		return nil, nil, nil, nil, 0, errCount(tcount)
	}
	if ot.size*ocount != tt.size*tcount {
		return nil, nil, nil, nil, 0, mpiErr(mpi_ERR_SIZE, fmt.Sprintf("the origin holds %d bytes and the target %d", ot.size*ocount, tt.size*tcount))
	}
	off, err := wo.targetOff(h, rank, disp)
	return wo, b, ot, tt, off, err
}

// doPut is MPI_Put.
func doPut(org unsafe.Pointer, ocount int, od Datatype, rank, disp, tcount int, td Datatype, h Win) error {
	wo, b, ot, tt, off, err := rmaArgs(h, org, ocount, od, rank, disp, tcount, td)
	if err != nil {
		return err
	}
	if ot.contig && tt.contig {
		return wo.w.Put(b, rank, off)
	}
	return wo.w.PutType(b, ocount, ot.layout, rank, off, tcount, tt.layout)
}

// doGet is MPI_Get.
func doGet(org unsafe.Pointer, ocount int, od Datatype, rank, disp, tcount int, td Datatype, h Win) error {
	wo, b, ot, tt, off, err := rmaArgs(h, org, ocount, od, rank, disp, tcount, td)
	if err != nil {
		return err
	}
	if ot.contig && tt.contig {
		return wo.w.Get(b, rank, off)
	}
	return wo.w.GetType(b, ocount, ot.layout, rank, off, tcount, tt.layout)
}

// byteOps caches each predefined operation over bytes: the kind's typed operation
// applied to the bytes' elements. The window's accumulates hold the target's
// accumulate word across a whole run of a layout, and cut long runs at multiples of
// 1 MiB; a datatype of one kind has runs of whole elements, so no element is split.
var byteOps [nKinds][16]collectives.Op[byte]

// initByteOps fills byteOps from builtinOps.
func initByteOps() {
	for k := kind(1); k < nKinds; k++ {
		for i := range builtinOps[k] {
			if builtinOps[k][i] != nil {
				byteOps[k][i] = byteOpBy[k](builtinOps[k][i])
			}
		}
		byteOps[k][mpi_REPLACE&0xff] = collectives.Replace[byte]()
		byteOps[k][mpi_NO_OP&0xff] = collectives.NoOp[byte]()
	}
}

// asBytes wraps a typed operation o (a collectives.Op[T]) as one over bytes.
func asBytes[T runtime.Elem](o any) collectives.Op[byte] {
	op := o.(collectives.Op[T])
	size := int(unsafe.Sizeof(*new(T)))
	return collectives.NewOp(op.Name(), func(inout, in []byte) {
		n := min(len(inout), len(in)) / size
		if n == 0 {
			return
		}
		op.Apply(unsafe.Slice((*T)(unsafe.Pointer(&inout[0])), n), unsafe.Slice((*T)(unsafe.Pointer(&in[0])), n))
	}, op.Commutative())
}

var byteOpBy = [nKinds]func(any) collectives.Op[byte]{
	kI8: asBytes[int8], kI16: asBytes[int16], kI32: asBytes[int32], kI64: asBytes[int64],
	kU8: asBytes[uint8], kU16: asBytes[uint16], kU32: asBytes[uint32], kU64: asBytes[uint64],
	kF32: asBytes[float32], kF64: asBytes[float64], kC64: asBytes[complex64], kC128: asBytes[complex128],
}

// accOp is op over bytes of datatype t.
func accOp(op Op, t *dtype) (collectives.Op[byte], error) {
	if op&^0xff != builtinOp {
		return collectives.Op[byte]{}, errUnsupported("a user MPI_Op in a one-sided accumulate (MPI forbids it too)")
	}
	if t.kind != kNone {
		if o := byteOps[t.kind][op&0xff]; o.Valid() {
			return o, nil
		}
	}
	switch op {
	case mpi_REPLACE:
		return collectives.Replace[byte](), nil
	case mpi_NO_OP:
		return collectives.NoOp[byte](), nil
	}
	return collectives.Op[byte]{}, mpiErr(mpi_ERR_OP, fmt.Sprintf("operation %#x is not defined on this datatype in a one-sided accumulate", uint32(op)))
}

// doAccumulate is MPI_Accumulate.
func doAccumulate(org unsafe.Pointer, ocount int, od Datatype, rank, disp, tcount int, td Datatype, op Op, h Win) error {
	wo, b, ot, tt, off, err := rmaArgs(h, org, ocount, od, rank, disp, tcount, td)
	if err != nil {
		return err
	}
	o, err := accOp(op, tt)
	if err != nil {
		return err
	}
	if ot.contig && tt.contig {
		return wo.w.Accumulate(b, rank, off, o)
	}
	return wo.w.AccumulateType(b, ocount, ot.layout, rank, off, tcount, tt.layout, o)
}

// doGetAccumulate is MPI_Get_accumulate. With MPI_NO_OP the origin is not read. A
// derived datatype goes run by run of the target's layout, each run atomic per element
// as MPI asks: the origin is packed first and the result unpacked last.
func doGetAccumulate(org unsafe.Pointer, ocount int, od Datatype, res unsafe.Pointer, rcount int, rd Datatype,
	rank, disp, tcount int, td Datatype, op Op, h Win) error {
	wo, err := winOf(h)
	if err != nil {
		return err
	}
	if rank < 0 || rank >= len(wo.units) {
		return errRank(rank, len(wo.units))
	}
	tt, err := typeOf(td)
	if err != nil {
		return err
	}
	rt, err := typeOf(rd)
	if err != nil {
		return err
	}
	r, err := spanOf(res, rcount, rt)
	if err != nil {
		return err
	}
	if tcount < 0 {
		return errCount(tcount)
	}
	n := tt.size * tcount
	if rt.size*rcount != n {
		return mpiErr(mpi_ERR_SIZE, fmt.Sprintf("the result holds %d bytes and the target %d", rt.size*rcount, n))
	}
	var b []byte
	ot := tt
	if op != mpi_NO_OP {
		if ot, err = typeOf(od); err != nil {
			return err
		}
		if b, err = spanOf(org, ocount, ot); err != nil {
			return err
		}
		if ot.size*ocount != n {
			return mpiErr(mpi_ERR_SIZE, fmt.Sprintf("the origin holds %d bytes and the target %d", ot.size*ocount, n))
		}
	}
	o, err := accOp(op, tt)
	if err != nil {
		return err
	}
	off, err := wo.targetOff(h, rank, disp)
	if err != nil {
		return err
	}
	if ot.contig && tt.contig && rt.contig {
		return wo.w.GetAccumulate(b, r, rank, off, o)
	}
	var packed []byte
	if b != nil {
		packed = make([]byte, n)
		if _, err := datatype.Pack(packed, b, ocount, ot.layout); err != nil {
			return err
		}
	}
	got := make([]byte, n)
	pos := 0
	for k := range tcount {
		for _, run := range tt.layout.Blocks() {
			var in []byte
			if packed != nil {
				in = packed[pos : pos+run.Len]
			}
			if err := wo.w.GetAccumulate(in, got[pos:pos+run.Len], rank, off+k*tt.extent+run.Off, o); err != nil {
				return err
			}
			pos += run.Len
		}
	}
	_, err = datatype.Unpack(r, got, rcount, rt.layout)
	return err
}

// doFetchAndOp is MPI_Fetch_and_op: one element, through the window's GetAccumulate.
func doFetchAndOp(org, res unsafe.Pointer, d Datatype, rank, disp int, op Op, h Win) error {
	return doGetAccumulate(org, 1, d, res, 1, d, rank, disp, 1, d, op, h)
}

// doCompareAndSwap is MPI_Compare_and_swap: one element, swapped where its bytes are
// compare's, under the target's accumulate word.
func doCompareAndSwap(org, cmp, res unsafe.Pointer, d Datatype, rank, disp int, h Win) error {
	wo, b, _, t, off, err := rmaArgs(h, org, 1, d, rank, disp, 1, d)
	if err != nil {
		return err
	}
	if t.kind == kNone || t.kind >= kF32 {
		return mpiErr(mpi_ERR_TYPE, fmt.Sprintf("datatype %#x is not an integer, logical or byte type", uint32(d)))
	}
	want := unsafe.Slice((*byte)(cmp), t.size)
	swap := collectives.NewOp("MPI_Compare_and_swap", func(inout, in []byte) {
		if string(inout) == string(want) {
			copy(inout, in)
		}
	}, false)
	return wo.w.GetAccumulate(b, unsafe.Slice((*byte)(res), t.size), rank, off, swap)
}

// doRput is MPI_Rput: MPI_Put with a request that completes it locally.
func doRput(org unsafe.Pointer, ocount int, od Datatype, rank, disp, tcount int, td Datatype, h Win, req *Request) error {
	wo, b, _, off, err := reqArgs("MPI_Rput", h, org, ocount, od, rank, disp, tcount, td)
	if err != nil {
		return err
	}
	r, err := wo.w.Rput(b, rank, off)
	return addRMA(r, err, req)
}

// doRget is MPI_Rget.
func doRget(org unsafe.Pointer, ocount int, od Datatype, rank, disp, tcount int, td Datatype, h Win, req *Request) error {
	wo, b, _, off, err := reqArgs("MPI_Rget", h, org, ocount, od, rank, disp, tcount, td)
	if err != nil {
		return err
	}
	r, err := wo.w.Rget(b, rank, off)
	return addRMA(r, err, req)
}

// doRaccumulate is MPI_Raccumulate.
func doRaccumulate(org unsafe.Pointer, ocount int, od Datatype, rank, disp, tcount int, td Datatype, op Op, h Win, req *Request) error {
	wo, b, tt, off, err := reqArgs("MPI_Raccumulate", h, org, ocount, od, rank, disp, tcount, td)
	if err != nil {
		return err
	}
	o, err := accOp(op, tt)
	if err != nil {
		return err
	}
	r, err := wo.w.Raccumulate(b, rank, off, o)
	return addRMA(r, err, req)
}

// reqArgs is rmaArgs for the request-based calls, which take contiguous datatypes.
func reqArgs(call string, h Win, org unsafe.Pointer, ocount int, od Datatype, rank, disp, tcount int, td Datatype) (*win, []byte, *dtype, int, error) {
	wo, b, ot, tt, off, err := rmaArgs(h, org, ocount, od, rank, disp, tcount, td)
	if err == nil && (!ot.contig || !tt.contig) {
		err = errUnsupported(call + " with a derived datatype")
	}
	return wo, b, tt, off, err
}

// addRMA registers a one-sided operation's request.
func addRMA(r *window.Request, err error, req *Request) error {
	if err != nil {
		return err
	}
	*req = Request(reqs.add(&request{rma: r}))
	return nil
}
