package testbudget

import (
	"os"
	"testing"
)

// TestMain runs the tests under a package timeout that scales with the machine's load
// (internal/testbudget.Run).
func TestMain(m *testing.M) { os.Exit(Run(m)) }
