// Package datatype describes memory layouts as MPI's derived datatypes do: a Type is an
// immutable list of byte blocks (offset, length) in packing order, with a lower bound and
// an extent that place consecutive copies. It owns the constructors, the normalized
// block list, and Pack and Unpack; it imports nothing of the module, and runtime
// (SendType, RecvType, SendrecvType), window (PutType, GetType, AccumulateType) and
// collectives (BcastType, GatherType, ScatterType, AllgatherType, AlltoallType) take
// its layouts.
//
//	col, err := datatype.Vector[float64](rows, 1, cols) // a column of a row-major matrix
//	n, err := datatype.Pack(packed, matrix[j:], 1, col) // its rows elements, in order
//	err = runtime.SendType(ctx, w, matrix[j:], 1, col, dest, tag)
//
// Element-granular constructors are generic over the element (Contiguous, Vector,
// Hvector, Indexed, Hindexed, IndexedBlock, HindexedBlock, Subarray). The methods of the
// same names build a type out of another (MPI's nesting), Struct places typed fields at
// byte offsets, FromStruct reads a Go struct's fields, and Resized sets the bounds.
// Offsets are bytes from the start of the buffer a type is laid over; a layout's data
// must lie inside that buffer (Check), and Pack, Unpack and the layers above check it.
// Over checks count copies over a buffer once and returns a Laid, whose Pack and
// UnpackPrefix move the bytes later without checking again (the runtime's typed calls).
//
// Errors wrap ErrInvalid (a bad constructor argument) or ErrRange (a buffer that does
// not hold the layout), and name the call and what is wrong.
//
// # Concurrency contract
//
// A Type is a value that never changes after its constructor returns: any number of
// goroutines may use one. Pack and Unpack hold no state and allocate nothing; the
// buffers are the caller's. A Laid holds its buffer and is used by one goroutine at a
// time. design.md describes the representation and how Pack walks it.
package datatype
