package datatype

import (
	"errors"
	"fmt"
	"unsafe"
)

// Sentinel errors. Every error of this package wraps one of them.
var (
	// ErrInvalid means a bad constructor argument: a negative count or block length,
	// mismatched slice lengths, a start outside its array, a Go type that holds pointers.
	ErrInvalid = errors.New("invalid datatype argument")
	// ErrRange means a buffer too short for the layout, or a layout that reaches before
	// the start of its buffer.
	ErrRange = errors.New("buffer out of the layout's range")
)

// MaxBlocks is the most blocks a normalized layout may hold. A constructor whose result
// would hold more fails with ErrInvalid (describe a huge repetitive layout by count in
// Pack, SendType or PutType rather than inside the type).
const MaxBlocks = 1 << 24

// maxBytes bounds every offset, extent and size, so that products of counts and extents
// never overflow an int.
const maxBytes = 1 << 50

// Elem is the element type of the element-granular constructors (Of, Contiguous, Vector,
// Indexed, IndexedBlock, Subarray): the fixed-size numbers of runtime.Elem.
type Elem interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 |
		~float32 | ~float64 | ~complex64 | ~complex128
}

// Block is one contiguous run of a layout's data: Len bytes at byte offset Off from the
// start of the buffer (Off may be negative in a type that is later placed at a positive
// displacement).
type Block struct {
	Off, Len int
}

// Type is an immutable description of a memory layout, MPI's typemap reduced to bytes:
// the blocks of data in the order they are packed, and a lower bound and extent that say
// where the next of count copies starts. The zero Type is empty: no data, extent 0.
// A Type is a small value; copies share its block list, which nothing modifies, so a
// Type may be used by any number of goroutines.
type Type struct {
	blocks   []Block // normalized: no empty block, no block starting where the one before ends
	size     int     // bytes of data: the sum of the blocks' lengths
	lb, ub   int     // bounds: extent is ub-lb
	tlb, tub int     // true bounds: the lowest and highest byte of data (+1); 0, 0 if empty
	// stride is the distance between consecutive blocks when there are two or more, all
	// of one length, evenly spaced (a vector's columns): Pack and Unpack walk them with
	// no table. 0 otherwise.
	stride int
}

// Of returns the type of one element of T: one block of unsafe.Sizeof(T) bytes at offset 0.
func Of[T Elem]() Type {
	var zero T
	n := int(unsafe.Sizeof(zero))
	return Type{blocks: []Block{{0, n}}, size: n, ub: n, tub: n}
}

// Size returns the bytes of data of one copy of t: what Pack writes per copy.
func (t Type) Size() int { return t.size }

// Extent returns ub - lb: how far apart consecutive copies of t lie in a buffer.
func (t Type) Extent() int { return t.ub - t.lb }

// LB returns t's lower bound (byte offset), MPI_Type_get_extent's lb.
func (t Type) LB() int { return t.lb }

// UB returns t's upper bound, LB() + Extent().
func (t Type) UB() int { return t.ub }

// TrueLB returns the offset of t's lowest byte of data (0 for an empty type).
func (t Type) TrueLB() int { return t.tlb }

// TrueExtent returns the span from t's lowest to its highest byte of data, inclusive.
func (t Type) TrueExtent() int { return t.tub - t.tlb }

// NumBlocks returns how many contiguous blocks one copy of t has after normalization.
func (t Type) NumBlocks() int { return len(t.blocks) }

// Block returns block i (0 <= i < NumBlocks()) of one copy of t, in packing order.
func (t Type) Block(i int) Block { return t.blocks[i] }

// Blocks returns a copy of t's normalized block list, in packing order.
func (t Type) Blocks() []Block { return append([]Block(nil), t.blocks...) }

// Contig reports whether count copies of t are one contiguous run of bytes, and if so
// its byte offset and length: then Pack is a single copy. The runtime and windows send,
// receive, put and get the buffer in place.
func (t Type) Contig(count int) (off, n int, ok bool) {
	if count <= 0 || t.size == 0 {
		return 0, 0, count >= 0
	}
	if len(t.blocks) != 1 {
		return 0, 0, false
	}
	b := t.blocks[0]
	if count > 1 && b.Len != t.Extent() {
		return 0, 0, false
	}
	return b.Off, b.Len * count, true
}

// String describes t's size, bounds and block count, for errors and debugging.
func (t Type) String() string {
	return fmt.Sprintf("datatype{size %d, lb %d, extent %d, %d blocks}", t.size, t.lb, t.Extent(), len(t.blocks))
}

// invalidf returns an ErrInvalid error naming the constructor.
func invalidf(op, format string, args ...any) error {
	return fmt.Errorf("datatype: %s: %w: %s", op, ErrInvalid, fmt.Sprintf(format, args...))
}

// rangef returns an ErrRange error naming the operation.
func rangef(op, format string, args ...any) error {
	return fmt.Errorf("datatype: %s: %w: %s", op, ErrRange, fmt.Sprintf(format, args...))
}
