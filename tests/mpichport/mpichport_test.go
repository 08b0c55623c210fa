package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// TestMPICHPorts builds golaunch and this program once (without -race: the runtime's
// races are its own tests' business) and runs every scenario but the known-failing ones
// through golaunch with the rank count MPICH's testlist.in gives it, one after another:
// the job must exit 0 and rank 0 must print its PASS line.
func TestMPICHPorts(t *testing.T) {
	dir := t.TempDir()
	golaunch, prog := filepath.Join(dir, "golaunch"), filepath.Join(dir, "mpichport")
	for _, args := range [][]string{
		{"build", "-o", golaunch, "../../launcher/cmd/golaunch"},
		{"build", "-o", prog, "."},
	} {
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, name := range names() {
		sc := scenarios[name]
		t.Run(name, func(t *testing.T) {
			if why, ok := knownFailing[name]; ok {
				t.Skipf("known departure from MPI (%s): %s", sc.mpich, why)
			}
			limit := testbudget.Scale(timeLimit(name))
			args := []string{"-n", fmt.Sprint(sc.ranks), "--timeout", limit.String(), prog, name}
			stdout, stderr, err := launch(golaunch, args, limit+testbudget.Scale(30*time.Second))
			if err != nil {
				t.Fatalf("%s: golaunch %s: %v\nstdout:\n%s\nstderr:\n%s", sc.mpich, strings.Join(args, " "), err, stdout, stderr)
			}
			if want := "PASS " + name + "\n"; !strings.Contains(stdout, want) {
				t.Fatalf("%s: golaunch %s: no %q line\nstdout:\n%s\nstderr:\n%s", sc.mpich, strings.Join(args, " "), want, stdout, stderr)
			}
		})
	}
}

// TestRegistry checks that every scenario is named DIR-NAME after an MPICH test with its
// file and a rank count, that every known-failing name is a scenario, and that
// scenarios.md lists every scenario, with its file when that is not DIR/NAME.c.
func TestRegistry(t *testing.T) {
	raw, err := os.ReadFile("scenarios.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := bytes.ReplaceAll(raw, []byte("\n    "), []byte(" ")) // join the wrapped lines
	for _, name := range names() {
		sc := scenarios[name]
		dir, short, ok := strings.Cut(name, "-")
		if !ok || sc.ranks < 1 || !strings.HasPrefix(sc.mpich, dir+"/") || !strings.HasSuffix(sc.mpich, ".c") {
			t.Errorf("%s: MPICH file %q, %d ranks: want DIR-NAME, a DIR/*.c file and at least one rank", name, sc.mpich, sc.ranks)
			continue
		}
		if !regexp.MustCompile(`[\s:]` + regexp.QuoteMeta(short) + `(\s|$)`).Match(doc) {
			t.Errorf("scenarios.md does not list %s", name)
		}
		if sc.mpich != dir+"/"+short+".c" && !regexp.MustCompile(regexp.QuoteMeta(sc.mpich)+`:[^\n]*\s`+regexp.QuoteMeta(short)+`(\s|$)`).Match(doc) {
			t.Errorf("scenarios.md does not say %s is built from %s", name, sc.mpich)
		}
	}
	for name := range knownFailing {
		if _, ok := scenarios[name]; !ok {
			t.Errorf("knownFailing names %s, which is no scenario", name)
		}
	}
	for name := range timeLimits {
		if _, ok := scenarios[name]; !ok {
			t.Errorf("timeLimits names %s, which is no scenario", name)
		}
	}
}

// timeLimits are the time limits that MPICH's testlist files give a scenario
// (timeLimit=, in seconds) at its rank count, where they exceed the default of 60 s.
// These scenarios loop long: ctxsplit runs 100000 Splits.
var timeLimits = map[string]time.Duration{
	"comm-ctxalloc":    300 * time.Second,
	"comm-ctxsplit":    300 * time.Second,
	"coll-allgatherv4": 600 * time.Second,
}

// timeLimit is the scenario's time limit before the load scaling: its entry in
// timeLimits, or 60 s.
func timeLimit(name string) time.Duration {
	if d, ok := timeLimits[name]; ok {
		return d
	}
	return 60 * time.Second
}

// launch runs golaunch with args and returns its output; err is the job's failure, or
// that golaunch had not exited within budget.
func launch(golaunch string, args []string, budget time.Duration) (stdout, stderr string, err error) {
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
