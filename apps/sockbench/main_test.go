package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/bench/connbench"
	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// mainEnv makes the test binary behave as sockbench, so that the tests run the real
// program, whose server is the same binary re-executed.
const mainEnv = "SOCKBENCH_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		main()
		return
	}
	os.Exit(testbudget.Run(m))
}

func sockbench(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	budget := testbudget.Scale(2 * time.Minute)
	select {
	case err = <-done:
	case <-time.After(budget):
		cmd.Process.Kill()
		err = <-done
		t.Errorf("sockbench %s: no exit after %v", strings.Join(args, " "), budget)
	}
	return out.String(), errb.String(), err
}

// readDoc reads the JSON document that sockbench wrote to file.
func readDoc(t *testing.T, file string) connbench.Document {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc connbench.Document
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("--json: %v\n%s", err, b)
	}
	return doc
}

// TestEveryTest runs each test briefly over unix and tcp through the real two-process
// program and checks the tables and the JSON document (never the figures).
func TestEveryTest(t *testing.T) {
	small := []string{"--sizes", "64,4K,64K,1M", "--iters", "50", "--stream-sizes", "64K,4K",
		"--stream-bytes", "256K", "--reps", "2", "--duration", "50ms", "--warmup", "20ms", "--clients", "4"}
	for _, tr := range []string{"unix", "tcp"} {
		for _, test := range []string{"pingpong", "stream", "connrate", "http"} {
			t.Run(tr+"/"+test, func(t *testing.T) {
				file := filepath.Join(t.TempDir(), "out.json")
				args := append([]string{"--transport", tr, "--test", test, "--json=" + file}, small...)
				out, stderr, err := sockbench(t, args...)
				if err != nil {
					t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
				}
				if !strings.HasPrefix(out, "# "+test+" over "+tr+": ") {
					t.Errorf("output does not open with its table's title:\n%s", out)
				}
				doc := readDoc(t, file)
				wantRows := map[string]int{"pingpong": 4, "stream": 2, "connrate": 1, "http": 1}[test]
				if len(doc.Results) != 1 || doc.Results[0].Name != test || len(doc.Results[0].Rows) != wantRows {
					t.Fatalf("results %+v, want one %s table of %d rows", doc.Results, test, wantRows)
				}
				for _, r := range doc.Results[0].Rows {
					if r.MedianUS <= 0 && r.MBps <= 0 && r.PerS <= 0 {
						t.Errorf("row %+v has no figure", r)
					}
				}
			})
		}
	}
}

// TestRateCountsOne gives the rate tests a 1 ns span: each still counts at least one call,
// as it must on a host too loaded to complete one within a short --duration.
func TestRateCountsOne(t *testing.T) {
	file := filepath.Join(t.TempDir(), "out.json")
	out, stderr, err := sockbench(t, "--transport", "unix", "--test", "connrate,http", "--duration", "1ns",
		"--warmup", "0s", "--clients", "2", "--json="+file)
	if err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
	}
	doc := readDoc(t, file)
	if len(doc.Results) != 2 {
		t.Fatalf("results %+v, want connrate and http", doc.Results)
	}
	for _, res := range doc.Results {
		for _, r := range res.Rows {
			if r.Count < 1 || r.PerS <= 0 {
				t.Errorf("%s: row %+v counts no call", res.Name, r)
			}
		}
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--transport", "pigeon"}, {"--test", "ftp"}, {"--sizes", "x"}, {"--role", "server"}} {
		_, stderr, err := sockbench(t, args...)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
			t.Errorf("%v: %v (%s), want exit code 2", args, err, stderr)
		}
	}
}

// TestServerRole serves with --role server and measures against it with --addr.
func TestServerRole(t *testing.T) {
	addr := filepath.Join(t.TempDir(), "sock")
	srv := exec.Command(os.Args[0], "--role", "server", "--transport", "unix", "--addr", addr)
	srv.Env = append(os.Environ(), mainEnv+"=1")
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	line := make([]byte, 256)
	n, err := stdout.Read(line)
	if err != nil || !strings.HasPrefix(string(line[:n]), "ready ") {
		t.Fatalf("server said %q, %v", line[:n], err)
	}
	out, stderr, err := sockbench(t, "--addr", addr, "--test", "pingpong", "--sizes", "64", "--iters", "20")
	if err != nil || !strings.Contains(out, "# pingpong over unix") {
		t.Fatalf("%v\n%s\n%s", err, out, stderr)
	}
}
