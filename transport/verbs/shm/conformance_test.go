package shm_test

import (
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/shm"
	"github.com/gorma-hpc/gorma/transport/verbs/verbstest"
)

// factory opens small devices: the suite opens many, some in helper processes.
var factory = verbstest.Factory{
	Provider:   "shm",
	Config:     func() verbs.Config { return verbs.Config{ArenaSize: 256 << 20, MaxMRs: 1024} },
	CQHeld:     shm.CQHeld,
	CQOverflow: verbstest.CQOverflowKept,
}

func TestMain(m *testing.M) { verbstest.Main(m, factory) }

// TestConformance runs the shared verbs conformance suite against shm.
func TestConformance(t *testing.T) { verbstest.Run(t, factory) }
