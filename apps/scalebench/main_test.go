package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"--iters", "5", "--big-iters", "2", "--window-size", "64K", "--json=x.json"}, true},
		{[]string{"--launch-ns", "1700000000000000000", "--shm-base-kb", "1024", "--json"}, true},
		{[]string{"--iters", "0"}, false},
		{[]string{"--big-iters", "0"}, false},
		{[]string{"--window-size", "0"}, false},
		{[]string{"--launch-ns", "-1"}, false},
		{[]string{"extra"}, false},
	} {
		if _, err := parseFlags(tc.args); (err == nil) != tc.ok {
			t.Errorf("parseFlags(%q) = %v, want ok %v", tc.args, err, tc.ok)
		}
	}
}

func TestKBField(t *testing.T) {
	const status = "Name:\tscalebench\nVmHWM:\t   13982 kB\nRssAnon:\t    4898 kB\nShmem:  7228 kB\n"
	for name, want := range map[string]int64{"VmHWM": 13982, "RssAnon": 4898, "Shmem": 7228} {
		if v, err := kbField(status, name); err != nil || v != want {
			t.Errorf("kbField(%s) = %d, %v; want %d", name, v, err, want)
		}
	}
	for _, name := range []string{"RssShmem", "Name", "Vm"} {
		if v, err := kbField(status, name); err == nil {
			t.Errorf("kbField(%s) = %d, want an error", name, v)
		}
	}
	if _, err := procKB("/proc/self/status", "VmHWM", "RssAnon", "RssShmem"); err != nil {
		t.Error(err)
	}
	if n, err := openFDs(); err != nil || n < 3 {
		t.Errorf("openFDs = %d, %v; want at least stdin, stdout, stderr", n, err)
	}
}

// TestLaunch runs scalebench through golaunch with 4 ranks and checks its JSON line.
func TestLaunch(t *testing.T) {
	if testing.Short() {
		t.Skip("builds golaunch and runs a 4-rank job")
	}
	dir := t.TempDir()
	golaunch, prog := filepath.Join(dir, "golaunch"), filepath.Join(dir, "scalebench")
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
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Minute))
	defer cancel()
	launch := time.Now()
	cmd := exec.CommandContext(ctx, golaunch, "-n", "4", "--timeout", testbudget.Scale(90*time.Second).String(), "--tag-output=false", prog,
		"--iters", "10", "--big-iters", "2", "--window-size", "256K", "--launch-ns", strconv.FormatInt(launch.UnixNano(), 10), "--json")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("golaunch: %v\n%s", err, out)
	}
	var rep report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("output is not one JSON document: %v\n%s", err, out)
	}
	wall := time.Since(launch).Seconds()
	if rep.Ranks != 4 || rep.Hosts != 1 || rep.System != "gorma" || rep.WindowBytes != 256<<10 || rep.LaunchFrom != "script" {
		t.Errorf("report header %+v", rep)
	}
	for _, f := range figures {
		if f.name == "" {
			continue
		}
		s, ok := rep.Figures[f.name]
		if !ok || s.Median <= 0 || s.Median > s.Max {
			t.Errorf("%s: %+v (present %v), want 0 < median <= max", f.name, s, ok)
		}
	}
	if s := rep.Figures["startup_s"]; s.Max > wall || s.Max < rep.Figures["init_s"].Median {
		t.Errorf("startup %+v: want at most the job's %.3f s and at least a rank's Init", s, wall)
	}
	if rep.ShmPeakKB <= 0 || rep.ShmKB != rep.ShmPeakKB-rep.ShmBaseKB || rep.ShmBaseFrom != "ranks before Init" {
		t.Errorf("shared memory: base %d, peak %d, delta %d (%s)", rep.ShmBaseKB, rep.ShmPeakKB, rep.ShmKB, rep.ShmBaseFrom)
	}
	if hwm, anon := rep.Figures["vmhwm_kb"], rep.Figures["rss_anon_kb"]; anon.Median > hwm.Median || rep.Figures["fds"].Median < 3 {
		t.Errorf("rss_anon %+v above vmhwm %+v, or fewer than 3 descriptors", anon, hwm)
	}
}
