//go:build cgo

package mpich

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// The vector collectives (Gatherv, Scatterv, Allgatherv, Alltoallv, Alltoallw) and
// the reductions that scatter (Reduce_scatter, Reduce_scatter_block), in their
// blocking, nonblocking and persistent forms; Reduce_local and Op_commutative.
//
// A vector call's counts and displacements arrive as C arrays of int, or of MPI_Count
// and MPI_Aint in the _c forms: the generic functions take either. The collectives
// package counts bytes here: a block of count elements of a contiguous datatype of size
// s is count*s bytes at displacement displ*s.

// maxCount bounds a count, as bytesOf does: a larger one is refused with MPI_ERR_COUNT.
const maxCount = math.MaxInt32 * (1 << 16)

// checkCount checks a count of elements.
func checkCount(n int) error {
	if n < 0 || n > maxCount {
		return errCount(n)
	}
	return nil
}

// vecOf copies the C array p of n counts (displ false) or displacements (displ true),
// named what in errors.
func vecOf[I int32 | int64](p *I, n int, what string, displ bool) ([]int, error) {
	if n > 0 && p == nil {
		return nil, mpiErr(mpi_ERR_ARG, fmt.Sprintf("%s is NULL: pass an array of %d entries", what, n))
	}
	v := ints(p, n)
	for i, x := range v {
		switch {
		case !displ:
			if err := checkCount(x); err != nil {
				return nil, mpiErr(mpi_ERR_COUNT, fmt.Sprintf("%s[%d] is %d: %v", what, i, x, err))
			}
		case x < 0:
			return nil, errUnsupported(fmt.Sprintf("%s[%d] = %d: a negative displacement", what, i, x))
		case x > maxCount:
			return nil, mpiErr(mpi_ERR_ARG, fmt.Sprintf("%s[%d] = %d is too large", what, i, x))
		}
	}
	return v, nil
}

// blocks checks one block per rank of the buffer p, of contiguous datatype d: counts
// and displacements in elements of d. It returns both in bytes and the buffer, as long
// as the furthest block's end.
func blocks[I int32 | int64](p unsafe.Pointer, counts, displs *I, d Datatype, n int, side string) (cs, ds []int, buf []byte, err error) {
	t, err := contigType(d)
	if err != nil {
		return nil, nil, nil, err
	}
	if cs, err = vecOf(counts, n, side+"counts", false); err != nil {
		return nil, nil, nil, err
	}
	if ds, err = vecOf(displs, n, side+"displs", true); err != nil {
		return nil, nil, nil, err
	}
	end := 0
	for i := range cs {
		if cs[i] > 0 {
			end = max(end, ds[i]+cs[i])
		}
		cs[i] *= t.size
		ds[i] *= t.size
	}
	if buf, err = bytesOf(p, end, t); err != nil {
		return nil, nil, nil, err
	}
	return cs, ds, buf, nil
}

// packed reports whether the blocks lie one after the other in rank order, as the
// collectives' Allgatherv and Alltoallv place them.
func packed(counts, displs []int) bool {
	at := 0
	for i, n := range counts {
		if displs[i] != at {
			return false
		}
		at += n
	}
	return true
}

// gatherv is MPI_Gatherv in form h.
func gatherv[I int32 | int64](h how, sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer,
	rcounts, displs *I, rd Datatype, root int, c Comm) (*collectives.Request, error) {
	w, err := worldOf(c)
	if err != nil {
		return nil, err
	}
	if root, err = rootArg(w, root); err != nil {
		return nil, err
	}
	var counts, offs []int
	var r, s []byte
	if isRoot(w, root) {
		if counts, offs, r, err = blocks(rbuf, rcounts, displs, rd, peers(w), "recv"); err != nil {
			return nil, err
		}
	}
	if contributes(w, root) && !(isRoot(w, root) && inPlace(sbuf)) {
		if s, err = contigBytes(sbuf, scount, sd); err != nil {
			return nil, err
		}
	}
	switch h {
	case blocking:
		return nil, collectives.Gatherv(bg, w, s, r, counts, offs, root)
	case nonblocking:
		return collectives.Igatherv(bg, w, s, r, counts, offs, root), nil
	}
	return collectives.GathervInit(w, s, r, counts, offs, root), nil
}

// scatterv is MPI_Scatterv in form h.
func scatterv[I int32 | int64](h how, sbuf unsafe.Pointer, scounts, displs *I, sd Datatype,
	rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm) (*collectives.Request, error) {
	w, err := worldOf(c)
	if err != nil {
		return nil, err
	}
	if root, err = rootArg(w, root); err != nil {
		return nil, err
	}
	var counts, offs []int
	var r, s []byte
	if isRoot(w, root) {
		if counts, offs, s, err = blocks(sbuf, scounts, displs, sd, peers(w), "send"); err != nil {
			return nil, err
		}
	}
	if contributes(w, root) && !(isRoot(w, root) && inPlace(rbuf)) {
		if r, err = contigBytes(rbuf, rcount, rd); err != nil {
			return nil, err
		}
	}
	switch h {
	case blocking:
		return nil, collectives.Scatterv(bg, w, s, counts, offs, r, root)
	case nonblocking:
		return collectives.Iscatterv(bg, w, s, counts, offs, r, root), nil
	}
	return collectives.ScattervInit(w, s, counts, offs, r, root), nil
}

// allgatherv is MPI_Allgatherv in form h. Blocks packed in rank order go to the
// collectives' Allgatherv; others to Alltoallw, each rank sending its one block to all.
func allgatherv[I int32 | int64](h how, sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer,
	rcounts, displs *I, rd Datatype, c Comm) (*collectives.Request, error) {
	w, err := worldOf(c)
	if err != nil {
		return nil, err
	}
	counts, offs, r, err := blocks(rbuf, rcounts, displs, rd, peers(w), "recv")
	if err != nil {
		return nil, err
	}
	var s []byte
	if !inPlace(sbuf) {
		if s, err = contigBytes(sbuf, scount, sd); err != nil {
			return nil, err
		}
	}
	if packed(counts, offs) {
		switch h {
		case blocking:
			return nil, collectives.Allgatherv(bg, w, s, r, counts)
		case nonblocking:
			return collectives.Iallgatherv(bg, w, s, r, counts), nil
		}
		return collectives.AllgathervInit(w, s, r, counts), nil
	}
	if s == nil {
		if h == persistent {
			return nil, errUnsupported("MPI_Allgatherv_init with MPI_IN_PLACE and displacements that are not the prefix sums of the counts")
		}
		// The block to send is read now: a copy, which recv's own block receives back.
		me := w.Rank()
		s = append([]byte{}, r[offs[me]:offs[me]+counts[me]]...)
	}
	sb := collectives.ByteBlocks{Counts: make([]int, peers(w)), Displs: make([]int, peers(w))}
	for i := range sb.Counts {
		sb.Counts[i] = len(s)
	}
	return alltoallw(h, w, s, sb, r, collectives.ByteBlocks{Counts: counts, Displs: offs})
}

// alltoallv is MPI_Alltoallv in form h. Blocks packed in rank order on both sides go to
// the collectives' Alltoallv; others to Alltoallw.
func alltoallv[I int32 | int64](h how, sbuf unsafe.Pointer, scounts, sdispls *I, sd Datatype,
	rbuf unsafe.Pointer, rcounts, rdispls *I, rd Datatype, c Comm) (*collectives.Request, error) {
	w, err := worldOf(c)
	if err != nil {
		return nil, err
	}
	rc, ro, r, err := blocks(rbuf, rcounts, rdispls, rd, peers(w), "recv")
	if err != nil {
		return nil, err
	}
	var sc, so []int
	var s []byte
	if !inPlace(sbuf) {
		if sc, so, s, err = blocks(sbuf, scounts, sdispls, sd, peers(w), "send"); err != nil {
			return nil, err
		}
	}
	if packed(rc, ro) && (s == nil || packed(sc, so)) {
		switch h {
		case blocking:
			return nil, collectives.Alltoallv(bg, w, s, sc, r, rc)
		case nonblocking:
			return collectives.Ialltoallv(bg, w, s, sc, r, rc), nil
		}
		return collectives.AlltoallvInit(w, s, sc, r, rc), nil
	}
	var sb collectives.ByteBlocks
	if s != nil {
		sb = collectives.ByteBlocks{Counts: sc, Displs: so}
	}
	return alltoallw(h, w, s, sb, r, collectives.ByteBlocks{Counts: rc, Displs: ro})
}

// typedBlocks checks MPI_Alltoallw's blocks of the buffer p: counts in elements of each
// block's contiguous datatype, displacements in bytes. It returns the blocks and the
// buffer, as long as the furthest block's end.
func typedBlocks[I int32 | int64](p unsafe.Pointer, counts, displs *I, types *Datatype, n int, side string) (collectives.ByteBlocks, []byte, error) {
	var b collectives.ByteBlocks
	var err error
	if b.Counts, err = vecOf(counts, n, side+"counts", false); err != nil {
		return b, nil, err
	}
	if b.Displs, err = vecOf(displs, n, side+"displs", true); err != nil {
		return b, nil, err
	}
	if n > 0 && types == nil {
		return b, nil, mpiErr(mpi_ERR_ARG, fmt.Sprintf("%stypes is NULL: pass an array of %d datatypes", side, n))
	}
	b.Sizes = make([]int, n)
	end := 0
	for i, d := range unsafe.Slice(types, n) {
		t, err := contigType(d)
		if err != nil {
			return b, nil, err
		}
		b.Sizes[i] = t.size
		if t.size == 0 { // an empty datatype: the block is empty
			b.Sizes[i], b.Counts[i] = 1, 0
		}
		if b.Counts[i] > 0 {
			end = max(end, b.Displs[i]+b.Counts[i]*b.Sizes[i])
		}
	}
	buf, err := bytesOf(p, end, builtins[mpi_BYTE&0xff])
	return b, buf, err
}

// alltoallwCall is MPI_Alltoallw in form h.
func alltoallwCall[I int32 | int64](h how, sbuf unsafe.Pointer, scounts, sdispls *I, stypes *Datatype,
	rbuf unsafe.Pointer, rcounts, rdispls *I, rtypes *Datatype, c Comm) (*collectives.Request, error) {
	w, err := worldOf(c)
	if err != nil {
		return nil, err
	}
	rb, r, err := typedBlocks(rbuf, rcounts, rdispls, rtypes, peers(w), "recv")
	if err != nil {
		return nil, err
	}
	var sb collectives.ByteBlocks
	var s []byte
	if !inPlace(sbuf) {
		if sb, s, err = typedBlocks(sbuf, scounts, sdispls, stypes, peers(w), "send"); err != nil {
			return nil, err
		}
	}
	return alltoallw(h, w, s, sb, r, rb)
}

// alltoallw runs the collectives' Alltoallw in form h; send nil and sb zero is in place.
func alltoallw(h how, w *runtime.World, s []byte, sb collectives.ByteBlocks, r []byte, rb collectives.ByteBlocks) (*collectives.Request, error) {
	switch h {
	case blocking:
		return nil, collectives.Alltoallw(bg, w, s, sb, r, rb)
	case nonblocking:
		return collectives.Ialltoallw(bg, w, s, sb, r, rb), nil
	}
	return collectives.AlltoallwInit(w, s, sb, r, rb), nil
}

// reduceScatter is MPI_Reduce_scatter in form h.
func reduceScatter[I int32 | int64](h how, sbuf, rbuf unsafe.Pointer, rcounts *I, d Datatype, op Op, c Comm) (*collectives.Request, error) {
	w, err := worldOf(c)
	if err != nil {
		return nil, err
	}
	counts, err := vecOf(rcounts, w.Size(), "recvcounts", false)
	if err != nil {
		return nil, err
	}
	return reduce(reduction{mode: modeReduceScatter, how: h, send: sbuf, recv: rbuf, counts: counts, op: op, dt: d}, c)
}

// reduceScatterBlock is MPI_Reduce_scatter_block in form h.
func reduceScatterBlock(h how, sbuf, rbuf unsafe.Pointer, rcount int, d Datatype, op Op, c Comm) (*collectives.Request, error) {
	return reduce(reduction{mode: modeReduceScatterBlock, how: h, send: sbuf, recv: rbuf, n: rcount, op: op, dt: d}, c)
}

// blockingCall drops the request of a blocking call's result.
func blockingCall(_ *collectives.Request, err error) error { return err }

// doGatherv is MPI_Gatherv.
func doGatherv(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcounts, displs *int32, rd Datatype, root int, c Comm) error {
	return blockingCall(gatherv(blocking, sbuf, scount, sd, rbuf, rcounts, displs, rd, root, c))
}

// doGathervC is MPI_Gatherv_c.
func doGathervC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcounts, displs *int64, rd Datatype, root int, c Comm) error {
	return blockingCall(gatherv(blocking, sbuf, scount, sd, rbuf, rcounts, displs, rd, root, c))
}

// doScatterv is MPI_Scatterv.
func doScatterv(sbuf unsafe.Pointer, scounts, displs *int32, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm) error {
	return blockingCall(scatterv(blocking, sbuf, scounts, displs, sd, rbuf, rcount, rd, root, c))
}

// doScattervC is MPI_Scatterv_c.
func doScattervC(sbuf unsafe.Pointer, scounts, displs *int64, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm) error {
	return blockingCall(scatterv(blocking, sbuf, scounts, displs, sd, rbuf, rcount, rd, root, c))
}

// doAllgatherv is MPI_Allgatherv.
func doAllgatherv(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcounts, displs *int32, rd Datatype, c Comm) error {
	return blockingCall(allgatherv(blocking, sbuf, scount, sd, rbuf, rcounts, displs, rd, c))
}

// doAllgathervC is MPI_Allgatherv_c.
func doAllgathervC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcounts, displs *int64, rd Datatype, c Comm) error {
	return blockingCall(allgatherv(blocking, sbuf, scount, sd, rbuf, rcounts, displs, rd, c))
}

// doAlltoallv is MPI_Alltoallv.
func doAlltoallv(sbuf unsafe.Pointer, scounts, sdispls *int32, sd Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int32, rd Datatype, c Comm) error {
	return blockingCall(alltoallv(blocking, sbuf, scounts, sdispls, sd, rbuf, rcounts, rdispls, rd, c))
}

// doAlltoallvC is MPI_Alltoallv_c.
func doAlltoallvC(sbuf unsafe.Pointer, scounts, sdispls *int64, sd Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int64, rd Datatype, c Comm) error {
	return blockingCall(alltoallv(blocking, sbuf, scounts, sdispls, sd, rbuf, rcounts, rdispls, rd, c))
}

// doAlltoallw is MPI_Alltoallw.
func doAlltoallw(sbuf unsafe.Pointer, scounts, sdispls *int32, sts *Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int32, rts *Datatype, c Comm) error {
	return blockingCall(alltoallwCall(blocking, sbuf, scounts, sdispls, sts, rbuf, rcounts, rdispls, rts, c))
}

// doAlltoallwC is MPI_Alltoallw_c.
func doAlltoallwC(sbuf unsafe.Pointer, scounts, sdispls *int64, sts *Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int64, rts *Datatype, c Comm) error {
	return blockingCall(alltoallwCall(blocking, sbuf, scounts, sdispls, sts, rbuf, rcounts, rdispls, rts, c))
}

// doReduceScatter is MPI_Reduce_scatter.
func doReduceScatter(sbuf, rbuf unsafe.Pointer, rcounts *int32, d Datatype, op Op, c Comm) error {
	return blockingCall(reduceScatter(blocking, sbuf, rbuf, rcounts, d, op, c))
}

// doReduceScatterC is MPI_Reduce_scatter_c.
func doReduceScatterC(sbuf, rbuf unsafe.Pointer, rcounts *int64, d Datatype, op Op, c Comm) error {
	return blockingCall(reduceScatter(blocking, sbuf, rbuf, rcounts, d, op, c))
}

// doReduceScatterBlock is MPI_Reduce_scatter_block.
func doReduceScatterBlock(sbuf, rbuf unsafe.Pointer, rcount int, d Datatype, op Op, c Comm) error {
	return blockingCall(reduceScatterBlock(blocking, sbuf, rbuf, rcount, d, op, c))
}

// doReduceScatterBlockC is MPI_Reduce_scatter_block_c.
func doReduceScatterBlockC(sbuf, rbuf unsafe.Pointer, rcount int, d Datatype, op Op, c Comm) error {
	return doReduceScatterBlock(sbuf, rbuf, rcount, d, op, c)
}

// doReduceLocal is MPI_Reduce_local: inout = in op inout, in this process.
func doReduceLocal(in, inout unsafe.Pointer, count int, d Datatype, op Op) error {
	if inPlace(in) || inPlace(inout) {
		return mpiErr(mpi_ERR_BUFFER, "MPI_Reduce_local takes no MPI_IN_PLACE: pass both buffers")
	}
	if count > 0 && (in == nil || inout == nil) {
		return mpiErr(mpi_ERR_BUFFER, fmt.Sprintf("a buffer is NULL for %d elements", count))
	}
	return blockingCall(reduce(reduction{mode: modeReduceLocal, send: in, recv: inout, n: count, op: op, dt: d}, mpi_COMM_NULL))
}

// doReduceLocalC is MPI_Reduce_local_c.
func doReduceLocalC(in, inout unsafe.Pointer, count int, d Datatype, op Op) error {
	return doReduceLocal(in, inout, count, d, op)
}

// reduceLocalLayout is MPI_Reduce_local with a user operation on a datatype that is not
// one kind's elements: the operation's own function over the count copies, whose
// buffers reduceLayout checked.
func reduceLocalLayout(a *reduction, u *userOp) error {
	if a.n > 0 {
		callUserOp(u, a.send, a.recv, a.n, a.dt)
	}
	return nil
}

// doOpCommutative is MPI_Op_commutative: every predefined operation is commutative.
func doOpCommutative(op Op, commute *int32) error {
	if op&^0xff == builtinOp && op >= mpi_MAX && op <= mpi_NO_OP {
		*commute = 1
		return nil
	}
	u, ok := userOps.get(int32(op))
	if !ok {
		return errHandle("operation", int32(op))
	}
	*commute = b2i(u.commute)
	return nil
}

// The large-count forms of the blocking calls without a vector: a count is an
// MPI_Count, checked as the int forms check theirs.

// doBcastC is MPI_Bcast_c.
func doBcastC(buf unsafe.Pointer, count int, d Datatype, root int, c Comm) error {
	return doBcast(buf, count, d, root, c)
}

// doGatherC is MPI_Gather_c.
func doGatherC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm) error {
	return doGather(sbuf, scount, sd, rbuf, rcount, rd, root, c)
}

// doScatterC is MPI_Scatter_c.
func doScatterC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm) error {
	return doScatter(sbuf, scount, sd, rbuf, rcount, rd, root, c)
}

// doAllgatherC is MPI_Allgather_c.
func doAllgatherC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm) error {
	return doAllgather(sbuf, scount, sd, rbuf, rcount, rd, c)
}

// doAlltoallC is MPI_Alltoall_c.
func doAlltoallC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm) error {
	return doAlltoall(sbuf, scount, sd, rbuf, rcount, rd, c)
}

// doAllreduceC is MPI_Allreduce_c.
func doAllreduceC(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, c Comm) error {
	return doAllreduce(sbuf, rbuf, count, d, op, c)
}

// doReduceC is MPI_Reduce_c.
func doReduceC(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, root int, c Comm) error {
	return doReduce(sbuf, rbuf, count, d, op, root, c)
}

// doScanC is MPI_Scan_c.
func doScanC(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, c Comm) error {
	return doScan(sbuf, rbuf, count, d, op, c)
}

// doExscanC is MPI_Exscan_c.
func doExscanC(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, c Comm) error {
	return doExscan(sbuf, rbuf, count, d, op, c)
}
