package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

const mainEnv = "SOCKPEERS_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(testbudget.Run(m))
}

// TestPeers runs the grpc test over unix and every test over shmipc, briefly, through
// the real two-process program (no timing is checked).
func TestPeers(t *testing.T) {
	small := []string{"--sizes", "64,4K", "--iters", "50", "--stream-sizes", "64K", "--stream-bytes", "1M",
		"--reps", "1", "--duration", "50ms", "--warmup", "20ms", "--clients", "4"}
	for _, tc := range []struct{ transport, tests string }{
		{"unix", "grpc"},
		{"shmipc", "pingpong,stream,connrate,http,grpc"},
	} {
		cmd := exec.Command(os.Args[0], append([]string{"--transport", tc.transport, "--test", tc.tests}, small...)...)
		cmd.Env = append(os.Environ(), mainEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", tc.transport, tc.tests, err, out)
		}
		for _, test := range strings.Split(tc.tests, ",") {
			if !strings.Contains(string(out), "# "+test+" over "+tc.transport+": ") {
				t.Errorf("%s: no %s table in\n%s", tc.transport, test, out)
			}
		}
	}
}
