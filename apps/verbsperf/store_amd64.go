//go:build amd64 && !race

package main

// storeRelease stores v into *p as a release store: on amd64 (TSO) a plain MOV, which is
// what a raw C flag ping-pong does and what the shm provider publishes with. An atomic
// Store would compile to XCHG, a locked read-modify-write that lengthens every half
// round trip while the peer polls the line, and would inflate the floor.
func storeRelease(p *uint64, v uint64) { *p = v }
