package window_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// TestLaunchFenceMismatch runs rmaprog's fence-mismatch scenario as a real job under
// GORMA_CHECK=1: rank 0 fences one window while the others fence another; every rank's
// Fence fails with an error naming both Fences, and the windows go on working.
func TestLaunchFenceMismatch(t *testing.T) {
	golaunch, rmaprog := buildLaunchBins(t)
	args := []string{"-n", "3", "--timeout", testbudget.Scale(60 * time.Second).String(), "-x", "GORMA_CHECK=1", rmaprog, "fence-mismatch"}
	stdout, stderr, err := runLaunch(t, golaunch, args)
	if err != nil || !strings.Contains(stdout, "PASS fence-mismatch 3 ranks") {
		t.Fatalf("golaunch %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
	}
	const rule = ": every rank of World must make its collective calls in the same order, with the same count, type, operator and root\n"
	for _, want := range []string{
		"[0] rank 0: window fence: rank 0 is in window.Fence #3 (win1, World), rank 2 in window.Fence #3 (win2, World)" + rule,
		"[1] rank 1: window fence: rank 0 is in window.Fence #3 (win1, World), rank 1 in window.Fence #3 (win2, World)" + rule,
		"[2] rank 2: window fence: rank 0 is in window.Fence #3 (win1, World), rank 2 in window.Fence #3 (win2, World)" + rule,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}
