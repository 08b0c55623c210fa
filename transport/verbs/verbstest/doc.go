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
// [Run] runs, as subtests: device, memory-region and arena basics. The QP state machine and
// junk endpoint bytes. Every opcode from 0 B to 1 MiB, at unaligned offsets, to arena and
// user memory, checked byte for byte with canaries around the target. Atomics. ordering.
// Unsignaled requests and send-queue accounting. ErrQueueFull. Every reachable error status
// and the Err state that follows. concurrent atomics from several devices and processes.
// Every wait mode and CQ.Wait's context handling. Helper processes SIGKILLed mid-transfer.
// Open/use/close cycles after which goroutines, fds, mappings, /dev/shm files and arena
// bytes are back to their baseline. And stress cases (Stress/...). Cases needing a
// capability the provider does not advertise in its Caps are skipped. Stress/SharedCQDepth
// runs only when the Factory supplies [Factory.CQHeld] and, for its Undersized half,
// [Factory.CQOverflow].
//
// # Details the suite pins
//
//   - An illegal state transition returns an error and leaves the state unchanged; a post
//     the state does not allow fails with ErrQPState.
//   - Once an error completion has been polled, the QP's State is Err.
//   - The first failure after a peer dies or closes its QP is RetryExcErr, never a bare
//     WRFlushErr, so the application learns why its QP failed.
//   - A non-empty Send with LKey 0, or a receive buffer outside its MR, fails either at
//     the post (ErrInvalid) or as a LocProtErr completion; nothing arrives.
//   - WC.ByteLen of an initiator completion is the number of bytes transferred.
//
// Left to the provider: the sender's status when the receiver's buffer is too small (shm
// reports Success and fails the next request; tcp reports RemInvReqErr), and whether a
// local error also fails the peer's QP.
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
