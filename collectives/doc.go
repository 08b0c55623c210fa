// Package collectives holds gorma's collective operations and the reduction operators
// they (and window accumulates) apply.
//
// # Reduction operators
//
// An Op[T] combines two equally long slices element by element: Apply(inout, in) sets
// inout[i] = inout[i] ∘ in[i]. The predefined operators are Sum, Prod, Min, Max (ordered
// types), Band, Bor, Bxor (integer types), and the two that MPI defines for one-sided
// accumulates: Replace (inout[i] = in[i]) and NoOp (inout unchanged, for fetching with
// GetAccumulate). NewOp makes a user-defined operator with a commutativity flag.
//
//	sum := collectives.Sum[float64]()
//	a, b := []float64{1, 2}, []float64{10, 20}
//	sum.Apply(a, b) // a == [11 22]
//
// Ops are small values, safe to copy and to use from any number of goroutines. Apply
// allocates nothing.
package collectives
