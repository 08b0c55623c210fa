//go:build cgo

package mpich

import (
	"context"
	"errors"
	"sync"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
)

// Completing one or some requests of a set (MPI_Waitany, MPI_Testany, MPI_Waitsome,
// MPI_Testsome) and MPI_Request_get_status. MPI_REQUEST_NULL entries and inactive
// persistent requests are skipped; a set with nothing else completes at once with
// MPI_UNDEFINED.

// lookupSet returns the requests of the n handles at hs, nil for MPI_REQUEST_NULL, and
// whether any is active.
func lookupSet(n int, hs *Request) ([]Request, []*request, bool, error) {
	if n < 0 {
		return nil, nil, false, errCount(n)
	}
	if n == 0 {
		return nil, nil, false, nil
	}
	h := unsafe.Slice(hs, n)
	rs := make([]*request, n)
	active := false
	for i, x := range h {
		if x == mpi_REQUEST_NULL {
			continue
		}
		r, ok := reqs.get(int32(x))
		if !ok {
			return nil, nil, false, errHandle("request", int32(x))
		}
		rs[i] = r
		active = active || r.active()
	}
	return h, rs, active, nil
}

// pending reports whether r is active and its outcome not held yet.
func (r *request) pending() bool { return r.active() && r.held == nil }

// p2pSet returns the runtime's requests of the pending point-to-point entries of rs, by
// index and nil elsewhere, and whether there is one.
func p2pSet(rs []*request) ([]*runtime.Request, bool) {
	set := make([]*runtime.Request, len(rs))
	some := false
	for i, r := range rs {
		if r.pending() && r.p2p != nil {
			set[i], some = r.p2p, true
		}
	}
	return set, some
}

// heldIndex returns the index of the first active request of rs that holds its
// outcome, or -1.
func heldIndex(rs []*request) int {
	for i, r := range rs {
		if r.active() && r.held != nil {
			return i
		}
	}
	return -1
}

// waitFirst blocks until an active request of rs has completed, holding its outcome,
// and returns its index. rs has an active entry. The runtime's WaitAny waits for the
// point-to-point requests together. Each request of another kind waits on a goroutine
// of its own, which ends the runtime's wait when its request completes.
func waitFirst(rs []*request) (int, error) {
	if i := heldIndex(rs); i >= 0 {
		return i, nil
	}
	set, p2p := p2pSet(rs)
	var others []int
	for i, r := range rs {
		if r.pending() && r.p2p == nil {
			others = append(others, i)
		}
	}
	if len(others) == 0 {
		i, st, err := runtime.WaitAny(bg, set)
		if i < 0 {
			return -1, err
		}
		rs[i].settle(outcome{st, err})
		return i, nil
	}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	var wg sync.WaitGroup
	for _, i := range others {
		wg.Add(1)
		go func(r *request) {
			defer wg.Done()
			r.block(ctx)
			cancel()
		}(rs[i])
	}
	found := -1
	var ferr error
	if p2p {
		i, st, err := runtime.WaitAny(ctx, set)
		switch {
		case i >= 0:
			rs[i].settle(outcome{st, err})
			found = i
		case ctx.Err() == nil:
			ferr = err
		}
	}
	if found < 0 && ferr == nil {
		<-ctx.Done()
	}
	cancel()
	wg.Wait()
	if found >= 0 || ferr != nil {
		return found, ferr
	}
	for _, i := range others {
		if rs[i].complete(false) {
			return i, nil
		}
	}
	return -1, mpiErr(mpi_ERR_INTERN, "a request's wait ended, but no request of the set has completed")
}

// testSet tests the pending requests of rs without blocking, and each that has
// completed holds its outcome. The point-to-point ones are tested together with one
// pass of the runtime's progress.
func testSet(rs []*request) error {
	set, p2p := p2pSet(rs)
	for p2p {
		i, ok, st, err := runtime.TestAny(set) // sets set[i] to nil
		if !ok && err != nil {
			return err
		}
		if !ok || i < 0 {
			break
		}
		rs[i].settle(outcome{st, err})
	}
	for _, r := range rs {
		if r.pending() && r.p2p == nil {
			r.complete(false)
		}
	}
	return nil
}

// reportOne reports the completed request r of handle *h into st, and retires it.
func reportOne(h *Request, r *request, st *Status) error {
	rs, err := r.report()
	st.set(rs)
	return errors.Join(err, r.retire(h))
}

// doWaitany is MPI_Waitany.
func doWaitany(n int, hs *Request, index *int32, st *Status) error {
	h, rs, active, err := lookupSet(n, hs)
	if err != nil {
		return err
	}
	if !active {
		*index = mpi_UNDEFINED
		st.empty()
		return nil
	}
	i, err := waitFirst(rs)
	if err != nil {
		return err
	}
	*index = int32(i)
	return reportOne(&h[i], rs[i], st)
}

// doTestany is MPI_Testany.
func doTestany(n int, hs *Request, index, flag *int32, st *Status) error {
	h, rs, active, err := lookupSet(n, hs)
	if err != nil {
		return err
	}
	if !active {
		*flag, *index = 1, mpi_UNDEFINED
		st.empty()
		return nil
	}
	i := heldIndex(rs)
	if i < 0 {
		if err := testSet(rs); err != nil {
			return err
		}
		i = heldIndex(rs)
	}
	if i < 0 {
		*flag, *index = 0, mpi_UNDEFINED
		return nil
	}
	*flag, *index = 1, int32(i)
	return reportOne(&h[i], rs[i], st)
}

// doWaitsome is MPI_Waitsome.
func doWaitsome(n int, hs *Request, outcount, indices *int32, sts *Status) error {
	return some(n, hs, outcount, indices, sts, true)
}

// doTestsome is MPI_Testsome.
func doTestsome(n int, hs *Request, outcount, indices *int32, sts *Status) error {
	return some(n, hs, outcount, indices, sts, false)
}

// some is MPI_Waitsome (block) and MPI_Testsome: it reports every completed request,
// its index and status in the first entries of indices and sts. A failed request's
// error is in its status's MPI_ERROR, and the call returns MPI_ERR_IN_STATUS, as
// MPI_Waitall does.
func some(n int, hs *Request, outcount, indices *int32, sts *Status, block bool) error {
	h, rs, active, err := lookupSet(n, hs)
	if err != nil {
		return err
	}
	if !active {
		*outcount = mpi_UNDEFINED
		return nil
	}
	if block {
		if _, err := waitFirst(rs); err != nil {
			return err
		}
	}
	if err := testSet(rs); err != nil {
		return err
	}
	idx := unsafe.Slice(indices, n)
	var ss []Status
	if sts != nil {
		ss = unsafe.Slice(sts, n)
	}
	k, failed := 0, 0
	var first error
	for i, r := range rs {
		if !r.active() || r.held == nil {
			continue
		}
		var st *Status
		if ss != nil {
			st = &ss[k]
		}
		err := reportOne(&h[i], r, st)
		idx[k] = int32(i)
		k++
		switch {
		case err != nil:
			failed++
			if first == nil {
				first = err
			}
			if st != nil {
				st.Error = int32(classOf(err))
			}
		case st != nil:
			st.Error = mpi_SUCCESS
		}
	}
	*outcount = int32(k)
	if failed > 1 || (failed == 1 && ss != nil) {
		return mpiErr(mpi_ERR_IN_STATUS, first.Error())
	}
	return first
}

// doRequestGetStatus is MPI_Request_get_status: MPI_Test that leaves the request as it
// is. A completed request holds its outcome for the wait or test that reports it.
func doRequestGetStatus(h Request, flag *int32, st *Status) error {
	if h == mpi_REQUEST_NULL {
		*flag = 1
		st.empty()
		return nil
	}
	r, ok := reqs.get(int32(h))
	if !ok {
		return errHandle("request", int32(h))
	}
	if !r.complete(false) {
		*flag = 0
		return nil
	}
	*flag = 1
	if r.held == nil {
		st.empty() // inactive
		return nil
	}
	o := r.outcome()
	st.set(o.st)
	return o.err
}
