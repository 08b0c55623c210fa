package testbudget

import (
	"os"
	"testing"
)

// EnvRequireEngines names the variable that turns a test's skip for a missing real
// engine into a failure: with GORMA_REQUIRE_ENGINES=1, SkipEngine fails the test. CI
// sets it (.ci/run), so that a run which passes has run every test that names a real
// component: Slurm, Hydra, Open MPI and its programs, network namespaces, a second user,
// a renderer.
const EnvRequireEngines = "GORMA_REQUIRE_ENGINES"

// SkipEngine skips t, which needs a real engine that this machine lacks or this process
// cannot use; the message says which and how to get it. Under GORMA_REQUIRE_ENGINES=1 it
// fails t with that message instead.
func SkipEngine(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(EnvRequireEngines) == "1" {
		t.Fatalf("%s=1, and this test cannot run its real engine: "+format, append([]any{EnvRequireEngines}, args...)...)
	}
	t.Skipf(format, args...)
}
