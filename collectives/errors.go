package collectives

import (
	"errors"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
)

// Sentinel errors of this package; errors from the collectives also wrap the runtime's
// sentinels (runtime.ErrInvalid for bad arguments, runtime.ErrTruncated when a peer sent
// more than expected, runtime.ErrConfig for a bad environment override, *runtime.ProcError
// for failed ranks) and context errors.
var (
	// ErrMismatch means the ranks made different collective calls. A rank received a
	// message of another length than the algorithm expects (different counts, or a
	// different collective), or, under GORMA_CHECK=1, the check before the call found
	// another call, count, type, operator or root at another rank (a
	// *runtime.MismatchError naming both calls). It is runtime.ErrMismatch.
	ErrMismatch = runtime.ErrMismatch
	// ErrConcurrent means a collective was called on a World while another collective call
	// on the same World was running in another goroutine.
	ErrConcurrent = errors.New("concurrent collective calls on one World")
)

// errNotInter is begin's error for a call with no intercommunicator form.
func errNotInter(name string) error {
	return fmt.Errorf("collectives: %s: %w: no intercommunicator form (gorma's: Barrier, Bcast, Reduce, Allreduce, Gather(v), Scatter(v), Allgather(v), Alltoall(v, w), ReduceScatter(V), their I and Init forms, and BcastType, GatherType, ScatterType, AllgatherType, AlltoallType, ReduceType and AllreduceType); Merge the intercommunicator and call it on the result", name, runtime.ErrInvalid)
}
