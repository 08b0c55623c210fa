package shm

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/arena"
)

// RDMA and atomics are performed entirely by the initiator. Every access pins the remote
// key in the peer's key table (validating generation, bounds and rights in one atomic
// add), copies or runs the atomic on the peer's arena through our mapping of it, and
// unpins. The target process does nothing. A refused pin leaves target memory untouched
// and completes the request with RemAccessErr.
//
// Memory the peer registered with RegMR is not in its arena; it is reached with
// process_vm_readv/writev at the address its key table records. The pin keeps the
// registration (and so the peer's reference to the buffer) alive during the copy.

// localOK reports whether buf lies in the local MR named by lkey with the rights want.
// lkey 0 means unregistered Go memory, which RDMA and atomics accept.
func (q *qp) localOK(buf []byte, lkey uint64, want verbs.Access) bool {
	if lkey == 0 {
		return true
	}
	m := q.dev.mrs.lookup(lkey)
	if m == nil || m.pd != q.pd || !m.access.Has(want) {
		return false
	}
	_, ok := verbs.SliceOffset(m.buf, buf)
	return ok
}

// window returns n bytes at offset off of the pinned arena target tg in our mapping of the
// peer's arena, checking bounds against the mapping (the key table is shared memory).
func (q *qp) window(tg *arena.Target, off, n uint64) ([]byte, bool) {
	size := uint64(len(q.rmem))
	if tg.Kind != arena.KindArena || tg.Base > size || off > size-tg.Base || n > size-tg.Base-off {
		return nil, false
	}
	s := tg.Base + off
	return q.rmem[s : s+n : s+n], true
}

func (q *qp) rdmaWrite(wr *verbs.SendWR) verbs.Status {
	key, off, n := wr.Remote.RKey, wr.Remote.Offset, uint64(len(wr.Local))
	tg, ok := q.rtab.Pin(key, off, n, verbs.RemoteWrite)
	if !ok {
		return verbs.RemAccessErr
	}
	st := verbs.Success
	if tg.Kind == arena.KindUser {
		st = cma(true, q.peerPID, tg.Base+off, wr.Local)
	} else if dst, ok := q.window(&tg, off, n); ok {
		copy(dst, wr.Local)
	} else {
		st = verbs.RemAccessErr
	}
	q.rtab.Unpin(key)
	return st
}

func (q *qp) rdmaRead(wr *verbs.SendWR) verbs.Status {
	key, off, n := wr.Remote.RKey, wr.Remote.Offset, uint64(len(wr.Local))
	tg, ok := q.rtab.Pin(key, off, n, verbs.RemoteRead)
	if !ok {
		return verbs.RemAccessErr
	}
	st := verbs.Success
	if tg.Kind == arena.KindUser {
		st = cma(false, q.peerPID, tg.Base+off, wr.Local)
	} else if src, ok := q.window(&tg, off, n); ok {
		copy(wr.Local, src)
	} else {
		st = verbs.RemAccessErr
	}
	q.rtab.Unpin(key)
	return st
}

// atomic runs AtomicFetchAdd or AtomicCmpSwap on 8 aligned bytes of the peer's arena and
// stores the original value little-endian in wr.Local (8 bytes, checked at post).
func (q *qp) atomic(wr *verbs.SendWR) verbs.Status {
	key, off := wr.Remote.RKey, wr.Remote.Offset
	tg, ok := q.rtab.Pin(key, off, 8, verbs.RemoteAtomic)
	if !ok {
		return verbs.RemAccessErr
	}
	var old uint64
	st := verbs.Success
	if w, ok := q.window(&tg, off, 8); !ok {
		st = verbs.RemAccessErr // user memory cannot hold atomics; RegMR refuses RemoteAtomic
	} else if uintptr(unsafe.Pointer(&w[0]))%8 != 0 {
		st = verbs.RemInvReqErr
	} else {
		p := (*atomic.Uint64)(unsafe.Pointer(&w[0]))
		if wr.Op == verbs.OpAtomicFetchAdd {
			old = p.Add(wr.CompareAdd) - wr.CompareAdd
		} else {
			old = cmpSwap(p, wr.CompareAdd, wr.Swap)
		}
	}
	q.rtab.Unpin(key)
	if st == verbs.Success {
		binary.LittleEndian.PutUint64(wr.Local, old)
	}
	return st
}

// cmpSwap stores swap if *p == cmp and returns the value *p held before, atomically.
func cmpSwap(p *atomic.Uint64, cmp, swap uint64) uint64 {
	for {
		old := p.Load()
		if old != cmp || p.CompareAndSwap(cmp, swap) {
			return old
		}
	}
}

// cma copies between local and n bytes at addr in process pid (write: local → remote).
func cma(write bool, pid int32, addr uint64, local []byte) verbs.Status {
	for len(local) > 0 {
		liov := []unix.Iovec{{Base: &local[0]}}
		liov[0].SetLen(len(local))
		riov := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(local)}}
		var n int
		var err error
		if write {
			n, err = unix.ProcessVMWritev(int(pid), liov, riov, 0)
		} else {
			n, err = unix.ProcessVMReadv(int(pid), liov, riov, 0)
		}
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.ESRCH:
			return verbs.RetryExcErr // the owner is gone
		case err != nil || n <= 0:
			return verbs.RemAccessErr // EFAULT, or EPERM where ptrace rules forbid CMA
		}
		local = local[n:]
		addr += uint64(n)
	}
	return verbs.Success
}
