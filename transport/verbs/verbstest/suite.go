package verbstest

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gorma-hpc/gorma/internal/testbudget"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Factory tells the suite how to open devices of the provider under test.
type Factory struct {
	// Provider is the registry name passed to verbs.Open, such as "shm".
	Provider string
	// Config returns the configuration of each new device; nil means the zero Config. It
	// must return the same provider options (Config.Provider: a secret, for a provider
	// that authenticates) on every call and in every process of the test binary: every
	// device of a case. Every helper process (which calls it too), must be able to
	// connect to every other.
	Config func() verbs.Config

	// CQHeld reports how many completions cq holds that Poll has not returned yet, and
	// whether it has dropped one (overrun). Nothing in the verbs API tells, so a provider's
	// test package supplies it from an internal test file. Stress/SharedCQDepth uses it to
	// fill a CQ to exactly its depth before the first Poll; nil skips that case.
	CQHeld func(cq verbs.CQ) (held int, overrun bool)
	// CQOverflow is what the provider does with completions beyond a CQ's depth, which
	// verbs.Device.CreateCQ leaves to the provider. Stress/SharedCQDepth/Undersized checks
	// it; CQOverflowUnknown skips that case.
	CQOverflow CQOverflow
}

// CQOverflow names what a provider does with completions beyond a CQ's depth.
type CQOverflow int

const (
	// CQOverflowUnknown: the Factory does not say.
	CQOverflowUnknown CQOverflow = iota
	// CQOverflowKept: the excess is kept (shm's overflow list) and polled in order after
	// the completions that fitted; nothing fails.
	CQOverflowKept
	// CQOverflowOverrun: the excess is dropped and every later Poll reports ErrCQOverrun,
	// after returning the completions the CQ held (tcp, as libibverbs).
	CQOverflowOverrun
)

// mainCalled records that Main runs this test binary, so helper processes can be started.
var mainCalled atomic.Bool

// testCase is one top-level conformance case.
type testCase struct {
	name string
	fn   func(*testing.T, Factory)
}

// cases are run in this order, each as a subtest of Run's t.
var cases = []testCase{
	{"Device", testDevice},
	{"MR", testMR},
	{"Stats", testStats},
	{"DeclaredCaps", testDeclaredCaps},
	{"QPStates", testQPStates},
	{"ToErrFromEveryState", testToErrFromEveryState},
	{"BadEndpoint", testBadEndpoint},
	{"Transfer", testTransfer},
	{"ByteLen", testByteLen},
	{"Atomic", testAtomicOps},
	{"Loopback", testLoopback},
	{"PassiveTarget", testPassiveTarget},
	{"WRReuse", testWRReuse},
	{"Fence", testFence},
	{"Ordering", testOrdering},
	{"SharedCQ", testSharedCQ},
	{"Unsignaled", testUnsignaled},
	{"SendQueueFull", testSendQueueFull},
	{"RecvQueueFull", testRecvQueueFull},
	{"HeldSends", testHeldSends},
	{"RemoteAccessErrors", testRemoteAccessErrors},
	{"MisalignedAtomic", testMisalignedAtomic},
	{"LocalProtection", testLocalProtection},
	{"SendUnregistered", testSendUnregistered},
	{"RecvProtection", testRecvProtection},
	{"LocLen", testLocLen},
	{"InvalidRequests", testInvalidRequests},
	{"Flush", testFlush},
	{"PeerClose", testPeerClose},
	{"ConcurrentAtomics", testConcurrentAtomics},
	{"CmpSwapMutex", testCmpSwapMutex},
	{"ConcurrentPosters", testConcurrentPosters},
	{"WaitModes", testWaitModes},
	{"CQWait", testCQWait},
	{"MultiProcess", testMultiProcess},
	{"DeviceCycles", testDeviceCycles},
	{"QPCycles", testQPCycles},
	{"Stress", testStress},
}

// Run runs every conformance case as subtests of t. Cases needing a capability the
// provider does not advertise are skipped. Select cases with -run, for example
// -run 'Conformance/RemoteAccessErrors/RDMAWrite'.
func Run(t *testing.T, f Factory) {
	if f.Provider == "" {
		t.Fatal("verbstest: Factory.Provider is empty")
	}
	if _, ok := verbs.Lookup(f.Provider); !ok {
		t.Fatalf("verbstest: provider %q is not registered (registered: %s); the provider's test must import the provider package",
			f.Provider, strings.Join(verbs.Providers(), ", "))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, f) })
	}
}

// Main must be called from the provider test package's TestMain. When the test binary was
// re-executed as a helper process by a multi-process case, it runs that role and exits.
// Otherwise it runs m.Run, then checks that no shared segment was left behind (no new
// /dev/shm/gorma-* file that no process holds, and no memfd or segment still open or
// mapped by this process), and exits.
func Main(m *testing.M, f Factory) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runRole(role, f))
	}
	mainCalled.Store(true)
	stranded, own := strandedSegments(), ownSharedMemory()
	code := testbudget.Run(m)
	var leaks []string
	if left := newStranded(stranded); len(left) > 0 {
		leaks = append(leaks, fmt.Sprintf("segment files nobody holds: %v", left))
	}
	if held := sharedMemoryLeaks(own); len(held) > 0 {
		leaks = append(leaks, fmt.Sprintf("still held by the test process: %v", held))
	}
	if len(leaks) > 0 {
		fmt.Fprintf(os.Stderr, "verbstest: shared memory left behind after all tests of %s:\n  %s\n",
			f.Provider, strings.Join(leaks, "\n  "))
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
