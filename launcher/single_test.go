package launcher

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// singleprogProg is the single-copy rank program, built once (without -race) on first use.
var singleprogProg = &program{pkg: "../tests/singleprog"}

// TestSingleCopy runs Bcast, Allgather, Alltoall and Scatter of 1 and 4 MiB among 4 processes of
// one host (singleprog checks every element) and reads from the job's timeline which
// algorithm each call took at each rank:
//   - by default every call moves by single copy (cross-memory attach);
//   - with rank 1's first single-copy read refused (GORMA_TEST_REFUSE_READ), the 1 MiB
//     Bcast, which that read served, goes through scratch at every rank, and the rest by
//     single copy; with its eighth refused, so does the 1 MiB Scatter;
//   - with process_vm_readv refused by a seccomp filter in every rank, the runtime learns
//     at connect that no rank may read another, and no call tries single copy: Bcast and
//     Allgather and Scatter go through scratch, Alltoall pairwise.
func TestSingleCopy(t *testing.T) {
	bin := singleprogProg.path(t)
	const n = 4
	for _, tc := range []struct {
		name  string
		flags []string
		want  map[string]int // timeline slices by name, over every rank
	}{
		{"attach", nil, map[string]int{"Bcast single": 2 * n, "Allgather single": 2 * n, "Alltoall single": 2 * n,
			"Scatter single": 2 * n}},
		{"refused read", []string{"--refuse", "1:1"},
			map[string]int{"Bcast shm": n, "Bcast single": n, "Allgather single": 2 * n, "Alltoall single": 2 * n,
				"Scatter single": 2 * n}},
		{"refused scatter read", []string{"--refuse", "1:8"}, // rank 1's reads: Bcast 1, Allgather 3, Alltoall 3, Scatter 1
			map[string]int{"Bcast single": 2 * n, "Allgather single": 2 * n, "Alltoall single": 2 * n,
				"Scatter shm": n, "Scatter single": n}},
		{"seccomp", []string{"--seccomp"}, map[string]int{"Bcast shm": 2 * n, "Allgather shm": 2 * n, "Alltoall pairwise": 2 * n,
			"Scatter shm": 2 * n}},
		{"yama 1", nil, map[string]int{"Bcast single": 2 * n, "Allgather single": 2 * n, "Alltoall single": 2 * n,
			"Scatter single": 2 * n}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "yama 1" {
				yamaScope(t, "1")
			}
			tpath := filepath.Join(t.TempDir(), "trace.json")
			args := append([]string{"--trace", tpath, "-n", fmt.Sprint(n), bin}, tc.flags...)
			r := runGL(t, "", args...)
			if strings.Contains(r.stdout, "singleprog: no seccomp") {
				t.Skipf("the kernel takes no seccomp filter here:\n%s", r.stdout)
			}
			if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("PASS singleprog %d ranks", n)) {
				t.Fatalf("golaunch singleprog %v: exit %d\nstdout:\n%s\nstderr:\n%s", tc.flags, r.code, r.stdout, r.stderr)
			}
			got := map[string]int{}
			for _, e := range readTrace(t, tpath).TraceEvents {
				if call, _, _ := strings.Cut(e.Name, " "); e.Ph == "X" && (call == "Bcast" || call == "Allgather" || call == "Alltoall" || call == "Scatter") {
					got[e.Name]++
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("calls by algorithm in the timeline: %v, want %v", got, tc.want)
			}
		})
	}
}

// yamaScope sets Yama's ptrace_scope to v for the test, which needs root; the test is
// skipped on a kernel without Yama. At scope 1 a process may attach only to its
// descendants, and golaunch's ranks are siblings: the runtime lifts it for them
// (PR_SET_PTRACER_ANY), so single copy still works.
func yamaScope(t *testing.T, v string) {
	t.Helper()
	const path = "/proc/sys/kernel/yama/ptrace_scope"
	old, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("the kernel has no Yama (%v)", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("setting Yama's ptrace_scope needs root")
	}
	if err := os.WriteFile(path, []byte(v), 0o644); err != nil {
		t.Skipf("ptrace_scope cannot be set to %s here: %v", v, err)
	}
	t.Cleanup(func() { os.WriteFile(path, old, 0o644) })
}
