package hostgroup

import (
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
)

// storeRelease stores v at *p with release ordering: no earlier store is seen after it.
// On amd64 (x86-TSO) every store has release ordering, so a plain store suffices, and
// unlike atomic.StoreUint64 (an XCHG, a full fence) it does not stall the core until the
// cache line is owned. The member goes on to poll its peers meanwhile. The compiler
// keeps stores in program order; *p is in a shared mapping, outside the race detector's
// view.
func storeRelease(p *uint64, v uint64) { *p = v }

// copyNTMin is the shortest copy (bytes) that copyShared makes with non-temporal stores.
const copyNTMin = 4 << 10

// ntAuto says whether the big buffers of Alltoall and ReduceScatter take
// non-temporal stores by default (EnvTune's nt=auto), in groups of ntSpreadMin members
// or more.
const ntAuto = true

// copyShared copies src into dst, scratch that peers will read, and returns the number of
// elements copied. From copyNTMin bytes it stores the whole cache lines of dst with
// non-temporal stores: they go to memory without first fetching the line, and so
// without waiting for the peers that read it last to give it up, which a plain store
// must do line after line. When the two cores do not share a cache (this machine kind's
// slow state), that wait made the copy into scratch the largest part of a long shm
// Allreduce; the readers then load the lines from memory, streaming. Like any store
// before a publish, the copy is seen before the release store that follows it (the
// non-temporal part ends with SFENCE).
func copyShared[T runtime.Elem](dst, src []T) int {
	n := min(len(dst), len(src))
	nb := n * elemSize[T]()
	if nb < copyNTMin {
		return copy(dst, src)
	}
	d, s := bytesOf(dst[:n]), bytesOf(src[:n])
	head := int(-uintptr(unsafe.Pointer(&d[0])) & 63)
	lines := (nb - head) / 64
	copy(d[:head], s[:head])
	copyNTLines(unsafe.Pointer(&d[head]), unsafe.Pointer(&s[head]), uintptr(lines))
	tail := head + lines*64
	copy(d[tail:], s[tail:])
	return n
}

//go:noescape
func copyNTLines(dst, src unsafe.Pointer, lines uintptr)
