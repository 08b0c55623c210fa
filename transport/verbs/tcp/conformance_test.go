package tcp_test

import (
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/idlewatch"
	"github.com/gorma-hpc/gorma/transport/verbs/tcp"
	"github.com/gorma-hpc/gorma/transport/verbs/verbstest"
)

// secret authenticates every device of the test binary and its helper processes.
var secret = []byte("verbstest-tcp-conformance-secret")

var factory = verbstest.Factory{
	Provider:   "tcp",
	Config:     func() verbs.Config { return verbs.Config{ArenaSize: 256 << 20, Provider: tcp.Options{Secret: secret}} },
	CQHeld:     tcp.CQHeld,
	CQOverflow: verbstest.CQOverflowOverrun,
}

func TestMain(m *testing.M) { verbstest.Main(m, factory) }

// TestConformance runs the shared verbs conformance suite against tcp.
func TestConformance(t *testing.T) { verbstest.Run(t, factory) }

// TestConformanceIdleWatch runs the suite again with an idle-role watch on every device
// this process opens, as a rank started by golaunch has (the suite's helper processes
// open factory's devices). The watcher ends each watch when its device closes.
func TestConformanceIdleWatch(t *testing.T) {
	w := idlewatch.NewWatcher(0)
	defer w.Close()
	f := factory
	f.Config = func() verbs.Config {
		cfg := factory.Config()
		if files, _, err := w.Add(); err == nil {
			cfg.Provider = tcp.Options{Secret: secret, IdleWatch: &files}
		}
		return cfg
	}
	verbstest.Run(t, f)
}
