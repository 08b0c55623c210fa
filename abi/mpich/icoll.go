//go:build cgo

package mpich

import (
	"unsafe"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// The nonblocking collectives (MPI_Ibarrier and the other I calls). Each checks its
// arguments as its blocking form does, then starts the collectives package's I
// function; the request completes through MPI_Wait and MPI_Test. The calls without a
// vector share their checks with the persistent forms (pcoll.go) through one function
// that takes the form.

// how a collective call runs: to its end, started, or made persistent.
type how uint8

const (
	blocking how = iota
	nonblocking
	persistent
)

// newReq returns a function that stores a nonblocking or persistent call's request r in
// *req, or returns the call's error; *req is set only on success.
func newReq(req *Request, h how) func(r *collectives.Request, err error) error {
	return func(r *collectives.Request, err error) error {
		if err != nil {
			return err
		}
		if h == persistent {
			addPersistent(&request{coll: r}, req)
			return nil
		}
		*req = Request(reqs.add(&request{coll: r}))
		return nil
	}
}

// startReduce starts a reduction of elements of type T (nonblocking).
func startReduce[T runtime.Elem](a reduction, s, r []T, op collectives.Op[T]) (*collectives.Request, error) {
	switch a.mode {
	case modeAllreduce:
		return collectives.Iallreduce(bg, a.w, s, r, op), nil
	case modeReduce:
		return collectives.Ireduce(bg, a.w, s, r, op, a.root), nil
	case modeScan:
		return collectives.Iscan(bg, a.w, s, r, op), nil
	case modeExscan:
		return collectives.Iexscan(bg, a.w, s, r, op), nil
	case modeReduceScatter:
		return collectives.IreduceScatterV(bg, a.w, s, r, a.counts, op), nil
	case modeReduceScatterBlock:
		return collectives.IreduceScatter(bg, a.w, s, r, op), nil
	}
	return nil, a.errMode()
}

// barrierReq is MPI_Ibarrier (h nonblocking) or MPI_Barrier_init (h persistent).
func barrierReq(h how, c Comm) (*collectives.Request, error) {
	w, err := worldOf(c)
	if err != nil {
		return nil, err
	}
	if h == nonblocking {
		return collectives.Ibarrier(bg, w), nil
	}
	return collectives.BarrierInit(w), nil
}

// bcastReq is MPI_Ibcast or MPI_Bcast_init.
func bcastReq(h how, buf unsafe.Pointer, count int, d Datatype, root int, c Comm) (*collectives.Request, error) {
	w, t, b, root, err := bcastArgs(buf, count, d, root, c)
	if err != nil {
		return nil, err
	}
	if !t.contig {
		return nil, errUnsupported("a nonblocking or persistent broadcast of a derived datatype that is not contiguous")
	}
	if h == nonblocking {
		return collectives.Ibcast(bg, w, b, root), nil
	}
	return collectives.BcastInit(w, b, root), nil
}

// gatherReq is MPI_Igather or MPI_Gather_init.
func gatherReq(h how, sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm) (*collectives.Request, error) {
	w, r, s, root, err := rooted(c, root, rbuf, rcount, rd, sbuf, scount, sd)
	if err != nil {
		return nil, err
	}
	if h == nonblocking {
		return collectives.Igather(bg, w, s, r, root), nil
	}
	return collectives.GatherInit(w, s, r, root), nil
}

// scatterReq is MPI_Iscatter or MPI_Scatter_init.
func scatterReq(h how, sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm) (*collectives.Request, error) {
	w, s, r, root, err := rooted(c, root, sbuf, scount, sd, rbuf, rcount, rd)
	if err != nil {
		return nil, err
	}
	if h == nonblocking {
		return collectives.Iscatter(bg, w, s, r, root), nil
	}
	return collectives.ScatterInit(w, s, r, root), nil
}

// allgatherReq is MPI_Iallgather or MPI_Allgather_init.
func allgatherReq(h how, sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm) (*collectives.Request, error) {
	w, s, r, err := toAll(sbuf, scount, sd, rbuf, rcount, rd, c, false)
	if err != nil {
		return nil, err
	}
	if h == nonblocking {
		return collectives.Iallgather(bg, w, s, r), nil
	}
	return collectives.AllgatherInit(w, s, r), nil
}

// alltoallReq is MPI_Ialltoall or MPI_Alltoall_init.
func alltoallReq(h how, sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm) (*collectives.Request, error) {
	w, s, r, err := toAll(sbuf, scount, sd, rbuf, rcount, rd, c, true)
	if err != nil {
		return nil, err
	}
	if h == nonblocking {
		return collectives.Ialltoall(bg, w, s, r), nil
	}
	return collectives.AlltoallInit(w, s, r), nil
}

// reduceReq is a reduction's nonblocking or persistent form.
func reduceReq(h how, mode int, sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, root int, c Comm) (*collectives.Request, error) {
	return reduce(reduction{mode: mode, how: h, send: sbuf, recv: rbuf, n: count, op: op, dt: d, root: root}, c)
}

// doIbarrier is MPI_Ibarrier.
func doIbarrier(c Comm, req *Request) error {
	return newReq(req, nonblocking)(barrierReq(nonblocking, c))
}

// doIbcast is MPI_Ibcast.
func doIbcast(buf unsafe.Pointer, count int, d Datatype, root int, c Comm, req *Request) error {
	return newReq(req, nonblocking)(bcastReq(nonblocking, buf, count, d, root, c))
}

// doIbcastC is MPI_Ibcast_c.
func doIbcastC(buf unsafe.Pointer, count int, d Datatype, root int, c Comm, req *Request) error {
	return doIbcast(buf, count, d, root, c, req)
}

// doIgather is MPI_Igather.
func doIgather(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm, req *Request) error {
	return newReq(req, nonblocking)(gatherReq(nonblocking, sbuf, scount, sd, rbuf, rcount, rd, root, c))
}

// doIgatherC is MPI_Igather_c.
func doIgatherC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm, req *Request) error {
	return doIgather(sbuf, scount, sd, rbuf, rcount, rd, root, c, req)
}

// doIgatherv is MPI_Igatherv.
func doIgatherv(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcounts, displs *int32, rd Datatype, root int, c Comm, req *Request) error {
	return newReq(req, nonblocking)(gatherv(nonblocking, sbuf, scount, sd, rbuf, rcounts, displs, rd, root, c))
}

// doIgathervC is MPI_Igatherv_c.
func doIgathervC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcounts, displs *int64, rd Datatype, root int, c Comm, req *Request) error {
	return newReq(req, nonblocking)(gatherv(nonblocking, sbuf, scount, sd, rbuf, rcounts, displs, rd, root, c))
}

// doIscatter is MPI_Iscatter.
func doIscatter(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm, req *Request) error {
	return newReq(req, nonblocking)(scatterReq(nonblocking, sbuf, scount, sd, rbuf, rcount, rd, root, c))
}

// doIscatterC is MPI_Iscatter_c.
func doIscatterC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm, req *Request) error {
	return doIscatter(sbuf, scount, sd, rbuf, rcount, rd, root, c, req)
}

// doIscatterv is MPI_Iscatterv.
func doIscatterv(sbuf unsafe.Pointer, scounts, displs *int32, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm, req *Request) error {
	return newReq(req, nonblocking)(scatterv(nonblocking, sbuf, scounts, displs, sd, rbuf, rcount, rd, root, c))
}

// doIscattervC is MPI_Iscatterv_c.
func doIscattervC(sbuf unsafe.Pointer, scounts, displs *int64, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, root int, c Comm, req *Request) error {
	return newReq(req, nonblocking)(scatterv(nonblocking, sbuf, scounts, displs, sd, rbuf, rcount, rd, root, c))
}

// doIallgather is MPI_Iallgather.
func doIallgather(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm, req *Request) error {
	return newReq(req, nonblocking)(allgatherReq(nonblocking, sbuf, scount, sd, rbuf, rcount, rd, c))
}

// doIallgatherC is MPI_Iallgather_c.
func doIallgatherC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm, req *Request) error {
	return doIallgather(sbuf, scount, sd, rbuf, rcount, rd, c, req)
}

// doIallgatherv is MPI_Iallgatherv.
func doIallgatherv(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcounts, displs *int32, rd Datatype, c Comm, req *Request) error {
	return newReq(req, nonblocking)(allgatherv(nonblocking, sbuf, scount, sd, rbuf, rcounts, displs, rd, c))
}

// doIallgathervC is MPI_Iallgatherv_c.
func doIallgathervC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcounts, displs *int64, rd Datatype, c Comm, req *Request) error {
	return newReq(req, nonblocking)(allgatherv(nonblocking, sbuf, scount, sd, rbuf, rcounts, displs, rd, c))
}

// doIalltoall is MPI_Ialltoall.
func doIalltoall(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm, req *Request) error {
	return newReq(req, nonblocking)(alltoallReq(nonblocking, sbuf, scount, sd, rbuf, rcount, rd, c))
}

// doIalltoallC is MPI_Ialltoall_c.
func doIalltoallC(sbuf unsafe.Pointer, scount int, sd Datatype, rbuf unsafe.Pointer, rcount int, rd Datatype, c Comm, req *Request) error {
	return doIalltoall(sbuf, scount, sd, rbuf, rcount, rd, c, req)
}

// doIalltoallv is MPI_Ialltoallv.
func doIalltoallv(sbuf unsafe.Pointer, scounts, sdispls *int32, sd Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int32, rd Datatype, c Comm, req *Request) error {
	return newReq(req, nonblocking)(alltoallv(nonblocking, sbuf, scounts, sdispls, sd, rbuf, rcounts, rdispls, rd, c))
}

// doIalltoallvC is MPI_Ialltoallv_c.
func doIalltoallvC(sbuf unsafe.Pointer, scounts, sdispls *int64, sd Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int64, rd Datatype, c Comm, req *Request) error {
	return newReq(req, nonblocking)(alltoallv(nonblocking, sbuf, scounts, sdispls, sd, rbuf, rcounts, rdispls, rd, c))
}

// doIalltoallw is MPI_Ialltoallw.
func doIalltoallw(sbuf unsafe.Pointer, scounts, sdispls *int32, sts *Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int32, rts *Datatype, c Comm, req *Request) error {
	return newReq(req, nonblocking)(alltoallwCall(nonblocking, sbuf, scounts, sdispls, sts, rbuf, rcounts, rdispls, rts, c))
}

// doIalltoallwC is MPI_Ialltoallw_c.
func doIalltoallwC(sbuf unsafe.Pointer, scounts, sdispls *int64, sts *Datatype, rbuf unsafe.Pointer, rcounts, rdispls *int64, rts *Datatype, c Comm, req *Request) error {
	return newReq(req, nonblocking)(alltoallwCall(nonblocking, sbuf, scounts, sdispls, sts, rbuf, rcounts, rdispls, rts, c))
}

// doIallreduceC is MPI_Iallreduce_c.
func doIallreduceC(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, c Comm, req *Request) error {
	return doIallreduce(sbuf, rbuf, count, d, op, c, req)
}

// doIreduce is MPI_Ireduce.
func doIreduce(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, root int, c Comm, req *Request) error {
	return newReq(req, nonblocking)(reduceReq(nonblocking, modeReduce, sbuf, rbuf, count, d, op, root, c))
}

// doIreduceC is MPI_Ireduce_c.
func doIreduceC(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, root int, c Comm, req *Request) error {
	return doIreduce(sbuf, rbuf, count, d, op, root, c, req)
}

// doIscan is MPI_Iscan.
func doIscan(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, c Comm, req *Request) error {
	return newReq(req, nonblocking)(reduceReq(nonblocking, modeScan, sbuf, rbuf, count, d, op, 0, c))
}

// doIscanC is MPI_Iscan_c.
func doIscanC(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, c Comm, req *Request) error {
	return doIscan(sbuf, rbuf, count, d, op, c, req)
}

// doIexscan is MPI_Iexscan.
func doIexscan(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, c Comm, req *Request) error {
	return newReq(req, nonblocking)(reduceReq(nonblocking, modeExscan, sbuf, rbuf, count, d, op, 0, c))
}

// doIexscanC is MPI_Iexscan_c.
func doIexscanC(sbuf, rbuf unsafe.Pointer, count int, d Datatype, op Op, c Comm, req *Request) error {
	return doIexscan(sbuf, rbuf, count, d, op, c, req)
}

// doIreduceScatter is MPI_Ireduce_scatter.
func doIreduceScatter(sbuf, rbuf unsafe.Pointer, rcounts *int32, d Datatype, op Op, c Comm, req *Request) error {
	return newReq(req, nonblocking)(reduceScatter(nonblocking, sbuf, rbuf, rcounts, d, op, c))
}

// doIreduceScatterC is MPI_Ireduce_scatter_c.
func doIreduceScatterC(sbuf, rbuf unsafe.Pointer, rcounts *int64, d Datatype, op Op, c Comm, req *Request) error {
	return newReq(req, nonblocking)(reduceScatter(nonblocking, sbuf, rbuf, rcounts, d, op, c))
}

// doIreduceScatterBlock is MPI_Ireduce_scatter_block.
func doIreduceScatterBlock(sbuf, rbuf unsafe.Pointer, rcount int, d Datatype, op Op, c Comm, req *Request) error {
	return newReq(req, nonblocking)(reduceScatterBlock(nonblocking, sbuf, rbuf, rcount, d, op, c))
}

// doIreduceScatterBlockC is MPI_Ireduce_scatter_block_c.
func doIreduceScatterBlockC(sbuf, rbuf unsafe.Pointer, rcount int, d Datatype, op Op, c Comm, req *Request) error {
	return doIreduceScatterBlock(sbuf, rbuf, rcount, d, op, c, req)
}
