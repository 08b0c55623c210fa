package collectives

import (
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
)

// ReduceLocal sets inout[i] = in[i] ∘ inout[i] with op, in this process alone
// (MPI_Reduce_local): in is the left operand, as a lower rank's contribution is in the
// collectives. len(in) must equal len(inout) and the two must not overlap. A
// non-commutative operator needs a copy of in (one allocation of len(in) elements); a
// commutative one combines in place.
func ReduceLocal[T runtime.Elem](in, inout []T, op Op[T]) error {
	switch {
	case !op.Valid():
		return errLocal(invalid("zero Op"))
	case len(in) != len(inout):
		return errLocal(invalid("len(in) %d != len(inout) %d", len(in), len(inout)))
	case overlap(in, inout):
		return errLocal(invalid("in and inout overlap"))
	case len(in) == 0:
		return nil
	case op.commutative:
		op.fn(inout, in)
		return nil
	}
	acc := make([]T, len(in))
	copy(acc, in)
	op.fn(acc, inout)
	copy(inout, acc)
	return nil
}

// errLocal names ReduceLocal in err as the collectives' errors name their call.
func errLocal(err error) error { return fmt.Errorf("collectives: reduce_local: %w", err) }
