package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"--mark", "m"}, true},
		{[]string{"--mark", "m", "--case", "join", "--grow-to", "6", "--pause", "5ms", "--warmup", "10", "--json=x.json"}, true},
		{nil, false},
		{[]string{"--mark", "m", "--case", "join"}, false},
		{[]string{"--mark", "m", "--case", "grow"}, false},
		{[]string{"--mark", "m", "--warmup", "0"}, false},
		{[]string{"--mark", "m", "--pause", "-1ms"}, false},
		{[]string{"--mark", "m", "extra"}, false},
	} {
		if _, err := parseFlags(tc.args); (err == nil) != tc.ok {
			t.Errorf("parseFlags(%q) = %v, want ok %v", tc.args, err, tc.ok)
		}
	}
}

func TestReadMark(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		text string
		want int64
		ok   bool
	}{
		{"1732600000.123456\n", 1732600000123456000, true},
		{"1732600000\n", 1732600000000000000, true},
		{"1732600000.000000001", 1732600000000000001, true},
		{"1732600000,123456", 0, false},
		{"1732600000.1234567890", 0, false},
		{"", 0, false},
	} {
		path := filepath.Join(dir, "mark")
		if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := readMark(path)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("readMark(%q) = %d, %v; want %d, ok %v", tc.text, got, err, tc.want, tc.ok)
		}
	}
	if _, err := readMark(filepath.Join(dir, "absent")); err == nil {
		t.Error("readMark of a missing file succeeded")
	}
}

func TestColumn(t *testing.T) {
	v := []int64{1, 10, 100, 2, 20, 200}
	if got := column(v, 3, 1); !slices.Equal(got, []int64{10, 20}) {
		t.Errorf("column = %v", got)
	}
	if lo, hi := extremes([]int64{5, -3, 9}); lo != -3 || hi != 9 {
		t.Errorf("extremes = %d, %d", lo, hi)
	}
}

// TestKill runs the kill case through golaunch --ft as scripts/ftbench.sh does: a mark,
// then SIGKILL to rank 2 of 4. It checks the report's shape, not its times.
func TestKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds golaunch and runs a job")
	}
	dir := t.TempDir()
	golaunch, prog := filepath.Join(dir, "golaunch"), filepath.Join(dir, "ftbench")
	for _, args := range [][]string{
		{"build", "-o", golaunch, "../../launcher/cmd/golaunch"},
		{"build", "-o", prog, "."},
	} {
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	state, mark, doc := filepath.Join(dir, "state"), filepath.Join(dir, "mark"), filepath.Join(dir, "kill.json")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := testbudget.Context(context.Background(), 2*time.Minute, "the job's end")
	defer cancel()
	cmd := exec.CommandContext(ctx, golaunch, "--ft", "-n", "4", "--tag-output=false", prog,
		"--warmup", "20", "--state-dir", state, "--mark", mark, "--json="+doc)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFile(t, ctx, filepath.Join(state, "ready"))
	b, err := os.ReadFile(filepath.Join(state, "rank2.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.Fields(string(b))[0])
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := os.WriteFile(mark, fmt.Appendf(nil, "%d.%06d\n", now.Unix(), now.Nanosecond()/1e3), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("golaunch: %v (%v)\n%s", err, context.Cause(ctx), out.String())
	}
	b, err = os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Case != "kill" || rep.Before != 4 || rep.Ranks != 3 || rep.Hosts != 1 || rep.HostsWas != 1 ||
		!(0 <= rep.DetectS && rep.DetectS <= rep.ShrinkS && rep.ShrinkS <= rep.RecoverS) {
		t.Errorf("report %+v: want kill, 4 ranks then 3, one host, 0 <= detect <= shrink <= recover", rep)
	}
}

// waitFile waits until path exists or ctx ends.
func waitFile(t *testing.T, ctx context.Context, path string) {
	t.Helper()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", path, context.Cause(ctx))
		case <-time.After(5 * time.Millisecond):
		}
	}
}
