//go:build amd64 && !race

package trace

import (
	"sync/atomic"
	"unsafe"
)

// publish stores v into *p with release semantics: the stores before it are seen no
// later than v. On amd64 (TSO) a plain store is a release store, whereas p.Store is an
// XCHG, a locked instruction that waits for every earlier store to leave the core. In a
// ping-pong the last of those is the message for the peer, whose cache line the peer
// holds, so a locked instruction per event costs a line transfer. The compiler keeps
// stores in program order, and a plain store of an aligned word is atomic.
func publish(p *atomic.Uint64, v uint64) {
	*(*uint64)(unsafe.Pointer(p)) = v
}
