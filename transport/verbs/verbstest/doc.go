// Package verbstest is the conformance suite every verbs provider runs, in the manner of
// golang.org/x/net/nettest.TestConn: one set of cases, written against the public verbs
// API only, that pins the behaviour the verbs package documents.
//
// # Use
//
// A provider's test package registers the provider by importing it and hands the suite a
// [Factory]:
//
//	package shm_test
//
//	import (
//		"testing"
//
//		"github.com/gorma-hpc/gorma/transport/verbs"
//		_ "github.com/gorma-hpc/gorma/transport/verbs/shm"
//		"github.com/gorma-hpc/gorma/transport/verbs/verbstest"
//	)
//
//	var factory = verbstest.Factory{Provider: "shm", Config: func() verbs.Config { return verbs.Config{} }}
//
//	func TestMain(m *testing.M)         { verbstest.Main(m, factory) }
//	func TestConformance(t *testing.T) { verbstest.Run(t, factory) }
//
// [Main] is required: multi-process cases re-execute the test binary as helper processes,
// and Main is where such a process runs its role instead of the tests. After the tests it
// checks that no shared segment was left behind.
//
// # Cases
//
// [Run] runs, as subtests, cases for: device and memory-region basics and arena counters;
// the QP state machine and junk endpoint bytes; every opcode at sizes 0 B to 1 MiB and at
// unaligned offsets, to arena and user memory, from registered and unregistered buffers,
// checked byte for byte with canaries around the target; atomics; ordering (writes visible
// when a later Send arrives, Sends and completions in post order, Fence); unsignaled
// requests and send-queue slot accounting; ErrQueueFull on both queues and held Sends;
// every reachable error status (RemAccessErr for stale, reused, forged, out-of-range and
// right-less keys with the target untouched, RemInvReqErr, LocProtErr, LocLenErr,
// WRFlushErr, RetryExcErr) and the Err state that follows; concurrent atomics from several
// devices and processes and a compare-swap lock; every wait mode and CQ.Wait's context
// handling; helper processes that are SIGKILLed while a transfer is under way;
// hundreds of device and queue-pair open/use/close cycles, after which goroutines, fds,
// mappings, /dev/shm files and arena bytes must be back to their baseline; and stress
// cases (Stress/...): error runs among unsignaled requests that must not land, CQs filled
// to exactly their depth and one beyond, eight posters on one QP under back-pressure,
// waiters cancelled and closed under a stream of completions, Dereg racing RDMA, atomics
// at the edges of an MR, zero-length operations and QP transitions out of order. Cases
// needing a capability the provider does not advertise in its Caps are skipped.
//
// Stress/SharedCQDepth needs what the verbs API does not expose and is skipped unless
// the Factory supplies it: [Factory.CQHeld] (how many completions a CQ holds, from the
// provider's internal test files) and, for its Undersized half, [Factory.CQOverflow]
// (what the provider does beyond a CQ's depth, which CreateCQ leaves to it).
//
// # Bounds
//
// Every wait of the suite is bounded (10 s for an expected event); a provider that hangs
// fails the case rather than the whole test binary. Helper processes exit when their
// parent closes their stdin or dies, and in any case after two minutes.
//
// # Concurrency
//
// Run's cases run one after another; some start goroutines or processes of their own and
// wait for them before they return. Factory.Config may be called from any of the suite's
// goroutines.
package verbstest
