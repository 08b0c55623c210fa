//go:build amd64 && !race

package shm

import (
	"sync/atomic"
	"unsafe"
)

// publish stores v into *p with release semantics: every store before it becomes visible
// to other cores no later than v. On amd64 (TSO) an ordinary MOV is a release store,
// whereas p.Store compiles to XCHG, a locked read-modify-write that adds to every half
// round trip when the peer is polling the line (`go test -bench FlagPingPong
// ./transport/verbs/shm` measures it). The compiler keeps stores in program order, and a
// plain store of an aligned word is atomic.
//
// A publish is not ordered before later loads: call fence between a publish and a load
// that must not pass it (the doorbell's waiters check).
func publish(p *atomic.Uint64, v uint64) {
	*(*uint64)(unsafe.Pointer(p)) = v
}

// publish32 is publish for a 32-bit word.
func publish32(p *atomic.Int32, v int32) {
	*(*int32)(unsafe.Pointer(p)) = v
}

// fence is a full memory barrier (a locked OR of zero into the stack, as Linux's smp_mb
// on x86): stores before it are visible to every core before loads after it run. It
// touches only a line this core owns, so it costs a few nanoseconds.
func fence()
