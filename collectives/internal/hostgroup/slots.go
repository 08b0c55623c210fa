package hostgroup

import (
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
)

func word(b []byte, off int) *uint64 { return (*uint64)(unsafe.Pointer(&b[off])) }

// view returns n elements of member i's region from byte offset off.
func view[T runtime.Elem](g *Group, i, off, n int) []T {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&g.mem[i][off])), n)
}

// flagOff returns the offset of the flag line of step v.
func flagOff(v uint64) int { return offFlag + int(v&1)*lineBytes }

// SmallSlot returns n elements of member i's slot for step v: inline in the step's flag
// line up to InlineMax bytes, a small slot otherwise.
func SmallSlot[T runtime.Elem](g *Group, i int, v uint64, n int) []T {
	if n*elemSize[T]() <= InlineMax {
		return view[T](g, i, flagOff(v)+FlagData, n)
	}
	return view[T](g, i, offSmall+int(v&1)*SmallMax, n)
}

// Big returns n elements of member i's big buffer b.
func Big[T runtime.Elem](g *Group, i, b, n int) []T {
	if g.bigMem != nil {
		return unsafe.Slice((*T)(unsafe.Pointer(&g.bigMem[i][b*g.chunk])), n)
	}
	return view[T](g, i, offSmall+2*SmallMax+b*g.chunk, n)
}

// Moved counts the bytes a member copies through scratch: stored into its own, and
// loaded from the members' (its own slot included where an algorithm reads it back).
// collectives/design.md's byte model gives them per call, and TestSHMByteModel checks
// the counts against it. Plain adds: a group serves one call at a time.
type Moved struct{ Stored, Loaded int }

// ScratchIn copies src into dst, this member's scratch, and counts the bytes.
func ScratchIn[T runtime.Elem](g *Group, dst, src []T) {
	g.Moved.Stored += copy(dst, src) * elemSize[T]()
}

// ScratchInBig copies src into dst, this member's big buffer, and counts the bytes: with
// non-temporal stores (copyShared) where the tuning says so for the caller's kind of
// block. spread is true for blocks that one other member each reads (Alltoall,
// ReduceScatter, the rooted moves), false for blocks that every member reads.
func ScratchInBig[T runtime.Elem](g *Group, dst, src []T, spread bool) {
	if nt := g.nt || spread && g.ntSpread; !nt {
		ScratchIn(g, dst, src)
		return
	}
	g.Moved.Stored += copyShared(dst, src) * elemSize[T]()
}

// ScratchOut copies src, a member's scratch, into dst, and counts the bytes.
func ScratchOut[T runtime.Elem](g *Group, dst, src []T) {
	g.Moved.Loaded += copy(dst, src) * elemSize[T]()
}

// VWord returns word off of member i's flag line for step v.
func VWord(g *Group, i int, v uint64, off int) *uint64 { return word(g.mem[i], flagOff(v)+off) }

// VSlot returns n elements of member i's small slot for step v, from byte offset off.
// Unlike SmallSlot it never uses the flag line, whose data words carry the agreement.
func VSlot[T runtime.Elem](g *Group, i int, v uint64, off, n int) []T {
	return view[T](g, i, offSmall+int(v&1)*SmallMax+off, n)
}
