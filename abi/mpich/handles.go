//go:build cgo

package mpich

import (
	"fmt"
	"sync"
)

// The handle types of mpi.h: each is a C int in MPICH's encoding.
type (
	Comm       int32
	Datatype   int32
	Op         int32
	Group      int32
	Win        int32
	Request    int32
	Errhandler int32
	Info       int32
	Message    int32
)

// Status is MPI_Status: 5 ints. count_lo and count_hi_and_cancelled hold the byte
// count (bits 32 and up shifted left by one) and the cancelled flag (bit 0).
type Status struct {
	countLo, countHiCancelled int32
	Source, Tag, Error        int32
}

// statusIgnore is MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE: (MPI_Status *)1.
const statusIgnore = 1

// MPICH's handle encoding: bits 30-31 say how the object is found (1: built in, 2: in
// a table), bits 26-29 say its kind. Handles this library makes are table handles: the
// kind's bits, then the slot.
const (
	handleDirect = int32(-0x80000000) // 2 << 30
	kindShift    = 26
	kindComm     = 1
	kindGroup    = 2
	kindDatatype = 3
	kindErrh     = 5
	kindOp       = 6
	kindInfo     = 7
	kindWin      = 8
	kindKeyval   = 9
	kindRequest  = 11
	slotMask     = 1<<kindShift - 1
	// firstSlot keeps clear of MPICH's predefined table handles (the pair types of
	// MINLOC and MAXLOC are 0x8c000000 and up).
	firstSlot = 0x100
)

// A table maps this library's handles of one kind to their objects.
type table[T any] struct {
	mu    sync.Mutex
	kind  int32
	slots []T
	used  []bool
	free  []int32
}

func newTable[T any](kind int32) *table[T] { return &table[T]{kind: kind} }

func (t *table[T]) handle(slot int32) int32 {
	return handleDirect | t.kind<<kindShift | (slot + firstSlot)
}

// add stores v and returns its handle.
func (t *table[T]) add(v T) int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var s int32
	if n := len(t.free); n > 0 {
		s = t.free[n-1]
		t.free = t.free[:n-1]
		t.slots[s], t.used[s] = v, true
	} else {
		s = int32(len(t.slots))
		t.slots = append(t.slots, v)
		t.used = append(t.used, true)
	}
	return t.handle(s)
}

// slot returns h's slot, or -1 if h is not a handle of this table.
func (t *table[T]) slot(h int32) int32 {
	if h&^slotMask != handleDirect|t.kind<<kindShift {
		return -1
	}
	s := h&slotMask - firstSlot
	if s < 0 || int(s) >= len(t.used) || !t.used[s] {
		return -1
	}
	return s
}

// get returns h's object.
func (t *table[T]) get(h int32) (T, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.slot(h)
	if s < 0 {
		var zero T
		return zero, false
	}
	return t.slots[s], true
}

// del frees h's slot and returns what it held.
func (t *table[T]) del(h int32) (T, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var zero T
	s := t.slot(h)
	if s < 0 {
		return zero, false
	}
	v := t.slots[s]
	t.slots[s], t.used[s] = zero, false
	t.free = append(t.free, s)
	return v, true
}

// errHandle is an invalid-handle error naming the handle in hex, as MPICH prints it.
func errHandle(what string, h int32) error {
	return mpiErr(classFor(what), fmt.Sprintf("invalid %s handle %#x", what, uint32(h)))
}

func classFor(what string) int {
	switch what {
	case "communicator":
		return mpi_ERR_COMM
	case "datatype":
		return mpi_ERR_TYPE
	case "request":
		return mpi_ERR_REQUEST
	case "operation":
		return mpi_ERR_OP
	case "group":
		return mpi_ERR_GROUP
	case "window":
		return mpi_ERR_WIN
	case "info":
		return mpi_ERR_INFO
	case "error handler":
		return mpi_ERR_ARG
	case "keyval":
		return mpi_ERR_KEYVAL
	}
	return mpi_ERR_ARG
}
