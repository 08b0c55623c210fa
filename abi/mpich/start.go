//go:build cgo

package mpich

import (
	"fmt"
	"unsafe"

	"github.com/gorma-hpc/gorma/collectives"
)

// startable returns the persistent collective request of handle h.
func startable(h Request) (*collectives.Request, error) {
	r, ok := reqs.get(int32(h))
	if !ok {
		return nil, errHandle("request", int32(h))
	}
	if !r.persistent || r.coll == nil {
		return nil, mpiErr(mpi_ERR_REQUEST, fmt.Sprintf("request %#x is not a persistent collective request: MPI_Start takes the request of an _init call", uint32(h)))
	}
	return r.coll, nil
}

// doStart is MPI_Start: the persistent collective request starts its call.
func doStart(req *Request) error {
	r, err := startable(*req)
	if err != nil {
		return err
	}
	return r.Start(bg)
}

// doStartall is MPI_Startall: the requests start in order, or, if one cannot, none does.
func doStartall(n int, rs *Request) error {
	if n < 0 {
		return errCount(n)
	}
	if n == 0 {
		return nil
	}
	colls := make([]*collectives.Request, n)
	for i, h := range unsafe.Slice(rs, n) {
		r, err := startable(h)
		if err != nil {
			return err
		}
		colls[i] = r
	}
	return collectives.Startall(bg, colls)
}
