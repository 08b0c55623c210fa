package coherence

import (
	"flag"
	"os"
	"testing"
)

var soak = flag.Bool("coherence.soak", false, "run the simulations with many more seeds")

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(m.Run())
}
