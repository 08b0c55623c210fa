package verbstest_test

import (
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/tcp"
	"github.com/gorma-hpc/gorma/transport/verbs/verbstest"
)

// A provider's test package (which imports the provider for its registration) hands the
// suite a Factory from two functions:
//
//	func TestMain(m *testing.M)         { verbstest.Main(m, factory) }
//	func TestConformance(t *testing.T) { verbstest.Run(t, factory) }
func ExampleRun() {
	factory := verbstest.Factory{
		Provider: "tcp",
		Config: func() verbs.Config {
			return verbs.Config{Provider: tcp.Options{Secret: []byte("the same secret for every device")}}
		},
	}
	testMain := func(m *testing.M) { verbstest.Main(m, factory) }
	testConformance := func(t *testing.T) { verbstest.Run(t, factory) }
	_, _ = testMain, testConformance
}
