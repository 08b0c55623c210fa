package window_test

import (
	"os"
	"testing"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// TestMain removes the binaries the golaunch tests built once (launch_test.go), after
// every test and every -count repetition has used them.
func TestMain(m *testing.M) {
	code := testbudget.Run(m)
	if launchBins.dir != "" {
		os.RemoveAll(launchBins.dir)
	}
	os.Exit(code)
}
