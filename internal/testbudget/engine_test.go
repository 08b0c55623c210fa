package testbudget

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestSkipEngine runs TestSkipEngineHelper in a child, with and without
// GORMA_REQUIRE_ENGINES=1: it skips, then fails with the skip's message.
func TestSkipEngine(t *testing.T) {
	if os.Getenv("TESTBUDGET_ENGINE_CHILD") == "1" {
		t.Skip("the child of TestSkipEngine")
	}
	for _, c := range []struct {
		require string
		ok      bool
		want    string
	}{
		{"", true, "--- SKIP: TestSkipEngineHelper"},
		{"0", true, "--- SKIP: TestSkipEngineHelper"},
		{"1", false, "--- FAIL: TestSkipEngineHelper"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSkipEngineHelper$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "TESTBUDGET_ENGINE_CHILD=1", EnvRequireEngines+"="+c.require)
		out, err := cmd.CombinedOutput()
		if (err == nil) != c.ok || !strings.Contains(string(out), c.want) || !strings.Contains(string(out), "frobnicator 7 not found") {
			t.Errorf("%s=%q: err %v, want ok=%v and %q with the message\n%s", EnvRequireEngines, c.require, err, c.ok, c.want, out)
		}
	}
}

// TestSkipEngineHelper is the child of TestSkipEngine: an engine that is never there.
func TestSkipEngineHelper(t *testing.T) {
	if os.Getenv("TESTBUDGET_ENGINE_CHILD") != "1" {
		t.Skip("the child of TestSkipEngine")
	}
	SkipEngine(t, "frobnicator %d not found", 7)
}
