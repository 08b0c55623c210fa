package window_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// The RMA scenarios of tests/rmaprog, run as real jobs through golaunch: each
// rank a process, over shm (the default on one host) and over tcp (--transport tcp).

// launchBins are golaunch and rmaprog, built once per test binary (without -race: the
// rank programs' races are the window package's own tests' business, and building is
// quicker), removed by TestMain when every test (and every -count repetition) has run.
var launchBins struct {
	once     sync.Once
	dir      string
	golaunch string
	rmaprog  string
	err      error
}

func buildLaunchBins(t *testing.T) (golaunch, rmaprog string) {
	t.Helper()
	b := &launchBins
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "window-launch-"); b.err != nil {
			return
		}
		b.golaunch, b.rmaprog = filepath.Join(b.dir, "golaunch"), filepath.Join(b.dir, "rmaprog")
		for _, args := range [][]string{
			{"build", "-o", b.golaunch, "../launcher/cmd/golaunch"},
			{"build", "-o", b.rmaprog, "../tests/rmaprog"},
		} {
			cmd := exec.Command("go", args...)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				b.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
				return
			}
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.golaunch, b.rmaprog
}

// rmaScenarios are rmaprog's scenarios (see its doc.go).
var rmaScenarios = []string{
	"acc", "fop-acc", "cas-mutex", "lock-counter", "fence", "pscw", "dynamic", "shared", "request", "passive",
	"split",
}

// launchMatrix is where each scenario runs: shm with 2, 4 and 8 ranks, tcp with 2 and 4.
// With -short: 2 ranks on each transport.
func launchMatrix() []struct {
	transport string
	n         int
} {
	type cell = struct {
		transport string
		n         int
	}
	if testing.Short() {
		return []cell{{"shm", 2}, {"tcp", 2}}
	}
	return []cell{{"shm", 2}, {"shm", 4}, {"shm", 8}, {"tcp", 2}, {"tcp", 4}}
}

// TestLaunchRMA runs every scenario of rmaprog through golaunch on every cell of the
// matrix: the job must exit 0 and rank 0 must print its PASS line. A scenario verifies its
// own results and names the mismatch on stderr; the test shows the job's output.
func TestLaunchRMA(t *testing.T) {
	golaunch, rmaprog := buildLaunchBins(t)
	for _, sc := range rmaScenarios {
		t.Run(sc, func(t *testing.T) {
			for _, c := range launchMatrix() {
				t.Run(fmt.Sprintf("%s-%d", c.transport, c.n), func(t *testing.T) {
					args := []string{"-n", fmt.Sprint(c.n), "--timeout", testbudget.Scale(60 * time.Second).String()}
					if c.transport != "shm" {
						args = append(args, "--transport", c.transport)
					}
					args = append(args, rmaprog, sc, "--rounds", "30")
					stdout, stderr, err := runLaunch(t, golaunch, args)
					if err != nil {
						t.Fatalf("golaunch %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
					}
					if want := fmt.Sprintf("PASS %s %d ranks", sc, c.n); !strings.Contains(stdout, want) {
						t.Fatalf("golaunch %s: no %q line\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), want, stdout, stderr)
					}
				})
			}
		})
	}
}

// runLaunch runs golaunch with args and at most 90 s scaled by the test slack; err
// reports a non-zero exit.
func runLaunch(t *testing.T, golaunch string, args []string) (stdout, stderr string, err error) {
	t.Helper()
	budget := testbudget.Scale(90 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	cmd := exec.CommandContext(ctx, golaunch, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ctx.Err() != nil {
		err = errors.Join(err, fmt.Errorf("golaunch had not exited within %v", budget))
	}
	return out.String(), errb.String(), err
}
