package hostgroup

import (
	"context"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
)

// Call is what the group needs of a collective call: its context, World and identity,
// the hook it flushes while it waits, and the Requests of a setup's messages. Package
// collectives' call satisfies it. A Call is used by one goroutine.
type Call interface {
	// Context bounds every wait of the call.
	Context() context.Context
	// World is the World whose ranks the group's members are. It is nil for a group
	// over plain memory (tests): no liveness check, and no setup, then.
	World() *runtime.World
	// ID names the call, alike at every rank.
	ID() CallID
	// Flush gives the call's observation a turn while it waits: long is true once the
	// wait has lasted a while.
	Flush(long bool)
	// Req returns the call's Request i, reused across calls.
	Req(i int) *runtime.Request
	// FreshScratch reports whether big buffers are acquired per call (ScratchFresh).
	FreshScratch() (bool, error)
}

// CallID names a call in meta words and errors.
type CallID struct {
	Number   uint64 // the call's number on its World, the same at every rank
	Kind     uint8  // the call's kind (Kind)
	Root     int    // the call's root, a member's World rank; -1 for none
	Tag      int    // the call's tag: its low bits tell consecutive calls apart
	SetupTag int    // the tag of a setup's messages: the call's, without its kind
}

// elemSize returns the size in bytes of one T.
func elemSize[T runtime.Elem]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

// bytesOf returns the bytes of s.
func bytesOf[T runtime.Elem](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*elemSize[T]())
}
