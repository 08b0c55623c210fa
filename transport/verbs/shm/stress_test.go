package shm

import "github.com/gorma-hpc/gorma/transport/verbs"

// The shm stress tests (flushed writes, shared CQ depth, concurrent posters, Dereg during
// RDMA, atomic edges, zero length, states out of order) are provider-agnostic and run as
// the conformance suite's Stress cases (verbstest, stress*.go). What stays here is the test
// hook the suite needs from shm's internals.

// CQHeld reports how many completions cq holds that Poll has not returned, counting its
// overflow list; shm never drops one. It is verbstest.Factory.CQHeld for the conformance
// suite (conformance_test.go): nothing in the verbs API tells.
func CQHeld(c verbs.CQ) (held int, overrun bool) {
	q := c.(*cq)
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n + len(q.overflow), false
}
