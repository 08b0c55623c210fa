package window_test

import (
	"os"
	"testing"
)

// TestMain removes the binaries the golaunch tests built once (launch_test.go), after
// every test and every -count repetition has used them.
func TestMain(m *testing.M) {
	code := m.Run()
	if launchBins.dir != "" {
		os.RemoveAll(launchBins.dir)
	}
	os.Exit(code)
}
