package hostgroup

import (
	"os"
	"testing"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// TestMain runs the tests under a package timeout that scales with the machine's load
// (internal/testbudget.Run).
func TestMain(m *testing.M) { os.Exit(testbudget.Run(m)) }
