package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// mainEnv makes the test binary behave as verbsperf, so that the end-to-end tests run the
// real program, whose peer is the same binary re-executed (os.Executable).
const mainEnv = "VERBSPERF_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(testbudget.Run(m))
}

// verbsperf runs the program with args and returns its stdout; it fails the test on a
// non-zero exit.
func verbsperf(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	budget := testbudget.Scale(3 * time.Minute)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("verbsperf %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, &stdout, &stderr)
		}
	case <-time.After(budget):
		cmd.Process.Kill()
		t.Fatalf("verbsperf %s: no exit after %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), budget, &stdout, &stderr)
	}
	return stdout.Bytes()
}

func TestBadProviderExitCode(t *testing.T) {
	cmd := exec.Command(os.Args[0], "--provider", "ib")
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("--provider ib: %v, want exit code 2", err)
	}
	if !strings.Contains(string(out), `unknown --provider "ib": choose shm, tcp or all`) {
		t.Errorf("--provider ib said %q", out)
	}
}

// TestFloorsEndToEnd runs the floors through the real two-process program.
func TestFloorsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two processes")
	}
	out := verbsperf(t, "--quick", "--test", "floors", "--iters", "50", "--max-size", "64K", "--json")
	var doc Document
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	got := map[string]int{}
	for _, r := range doc.Results {
		got[r.Test] = len(r.Rows)
		for _, row := range r.Rows {
			if row.MedianUS <= 0 && row.GBps <= 0 {
				t.Errorf("%s: row %+v has no figure", r.Test, row)
			}
		}
	}
	want := map[string]int{"flag_pp": 1, "tcp_pp": 1, "tcp_stream": 3, "memcpy": 3, "segment": 1}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d rows, want %d (all: %v)", k, got[k], n, got)
		}
	}
}

// TestProvidersEndToEnd runs every provider test once, briefly, over shm and tcp, and
// checks that every table has its rows. It asserts no timing.
func TestProvidersEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two processes")
	}
	out := verbsperf(t, "--quick", "--provider", "all", "--test", "all", "--iters", "20", "--max-size", "64K")
	text := string(out)
	for _, p := range []string{"shm", "tcp"} {
		for _, table := range []string{"write_lat pingpong", "write_lat completion", "read_lat completion",
			"atomic_lat fetch_add", "atomic_lat cmp_swap", "send_lat pingpong", "write_bw", "read_bw",
			"arena alloc_free"} {
			if !strings.Contains(text, "\n# "+p+" "+table+": ") {
				t.Errorf("no %s %s table in:\n%s", p, table, text)
			}
		}
	}
	if strings.Contains(text, "skipped") {
		t.Errorf("a test was skipped:\n%s", text)
	}
	if !strings.Contains(text, "# summary:") {
		t.Errorf("no summary in:\n%s", text)
	}
	if !strings.Contains(text, "idle-watch=true") {
		t.Errorf("the header does not say that tcp ran with idle-role watches:\n%s", text)
	}
}

// TestIdleWatchOff: tcp without the watcher process (each wait wakes the reader itself).
func TestIdleWatchOff(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two processes")
	}
	out := verbsperf(t, "--quick", "--provider", "tcp", "--test", "read_lat,send_lat,read_bw", "--iters", "20",
		"--max-size", "64K", "--idle-watch=false", "--json")
	var doc Document
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if doc.Config.IdleWatch {
		t.Error("the JSON config says idle_watch although --idle-watch=false")
	}
	if len(doc.Results) < 3 {
		t.Errorf("%d results, want read_lat, send_lat and read_bw: %+v", len(doc.Results), doc.Results)
	}
}
