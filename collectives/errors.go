package collectives

import "errors"

// Sentinel errors of this package; errors from the collectives also wrap the runtime's
// sentinels (runtime.ErrInvalid for bad arguments, runtime.ErrTruncated when a peer sent
// more than expected, runtime.ErrConfig for a bad environment override, *runtime.ProcError
// for failed ranks) and context errors.
var (
	// ErrMismatch means a rank received a message of another length than the algorithm
	// expects: the ranks called the collective with different counts (or a different
	// collective).
	ErrMismatch = errors.New("mismatched collective call")
	// ErrConcurrent means a collective was called on a World while another collective call
	// on the same World was running in another goroutine.
	ErrConcurrent = errors.New("concurrent collective calls on one World")
)
