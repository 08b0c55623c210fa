package coherence

import (
	"flag"
	"os"
	"testing"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

var soak = flag.Bool("coherence.soak", false, "run the simulations with many more seeds")

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(testbudget.Run(m))
}
