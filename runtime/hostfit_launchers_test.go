package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/tests/slurmtest"
)

// The tests of this file run apps/hello with GORMA_DEBUG=1 under each launcher's binding
// and read what every rank's waiting rule decided (hostfit.go's fitLine).

// fitRE matches a rank's host fit line.
var fitRE = regexp.MustCompile(`gorma: rank (\d+): host fit: (\d+) ranks on (\d+) processors \(([^)]*)\); ` +
	`this rank may run on (\d+), (\d+) alone, shared by (\d+) ranks: (oversubscribed|not oversubscribed), full (true|false); ` +
	`GOMAXPROCS (\d+) \((lowered|left)\); .*; affinities: (their own|this rank's, taken for all)`)

// fit is one rank's line, parsed.
type fit struct {
	local, cpus       int
	quota             string
	own, alone, share int
	oversub, full     bool
	procs             int
	lowered           bool
	siblings          bool // the ranks' own affinities, read from the kernel
}

// fits parses every rank's line from a launcher's stderr and checks that there is one
// per rank of n.
func fits(t *testing.T, stderr string, n int) map[int]fit {
	t.Helper()
	out := map[int]fit{}
	for _, m := range fitRE.FindAllStringSubmatch(stderr, -1) {
		num := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
		out[num(1)] = fit{local: num(2), cpus: num(3), quota: m[4], own: num(5), alone: num(6), share: num(7),
			oversub: m[8] == "oversubscribed", full: m[9] == "true", procs: num(10), lowered: m[11] == "lowered",
			siblings: m[12] == "their own"}
	}
	if len(out) != n {
		t.Fatalf("%d ranks printed a host fit, want %d:\n%s", len(out), n, stderr)
	}
	return out
}

// checkFits checks every rank's fit against want.
func checkFits(t *testing.T, got map[int]fit, want fit) {
	t.Helper()
	for r, f := range got {
		if f != want {
			t.Errorf("rank %d: %+v\nwant %+v", r, f, want)
		}
	}
}

// needTwoCPUs skips a binding test on a machine of one processor.
func needTwoCPUs(t *testing.T) {
	t.Helper()
	if goruntime.NumCPU() < 2 {
		t.Skipf("binding two ranks a core each needs 2 processors, this machine has %d", goruntime.NumCPU())
	}
}

// boundPair is the fit of each of two ranks bound to a core of their own: apart, each
// alone on its processor, the host full, GOMAXPROCS already 1 (Go's, from the affinity).
var boundPair = fit{local: 2, cpus: 2, quota: "no quota", own: 1, alone: 1, share: 1, full: true, procs: 1, siblings: true}

// TestFitSrun: under srun --cpu-bind=cores, 2 ranks a core each are not oversubscribed;
// under srun -c 2, a rank keeps the 2 processors it alone holds.
func TestFitSrun(t *testing.T) {
	srun := slurmtest.Up(t)
	needTwoCPUs(t)
	hello, _ := buildPMIBins(t)
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Minute))
		defer cancel()
		cmd := srun(ctx, args...)
		cmd.Env = append(cmd.Env, "GORMA_DEBUG=1")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("srun %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		return errb.String()
	}
	checkFits(t, fits(t, run("-n", "2", "--mpi=pmi2", "--cpu-bind=cores", hello), 2), boundPair)
	checkFits(t, fits(t, run("-n", "1", "-c", "2", "--mpi=pmi2", hello), 1),
		fit{local: 1, cpus: 2, quota: "no quota", own: 2, alone: 2, share: 1, procs: 2, siblings: true})
}

// TestFitHydra: under mpiexec.hydra -bind-to core, 2 ranks a core each are not
// oversubscribed.
func TestFitHydra(t *testing.T) {
	hydra := needHydra(t)
	needTwoCPUs(t)
	hello, _ := buildPMIBins(t)
	_, errb, err := launchErr(t, 2*time.Minute, []string{"GORMA_DEBUG=1"}, hydra, "-n", "2", "-bind-to", "core", hello)
	if err != nil {
		t.Fatalf("mpiexec.hydra -bind-to core: %v\n%s", err, errb)
	}
	checkFits(t, fits(t, errb, 2), boundPair)
}

// TestFitOpenMPI: under mpirun --bind-to core, 2 ranks a core each are not
// oversubscribed.
func TestFitOpenMPI(t *testing.T) {
	mpirun := needOpenMPI(t)
	needTwoCPUs(t)
	_, prog := buildPMIBins(t)
	_, errb, err := launchErr(t, 2*time.Minute, []string{"GORMA_DEBUG=1"}, mpirun,
		"--allow-run-as-root", "--bind-to", "core", "-n", "2", prog, "--size", "2")
	if err != nil {
		t.Fatalf("mpirun --bind-to core: %v\n%s", err, errb)
	}
	checkFits(t, fits(t, errb, 2), boundPair)
}

// golaunchBin builds golaunch once.
var golaunchBin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "runtime-golaunch-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "golaunch")
	cmd := exec.Command("go", "build", "-o", out, "../launcher/cmd/golaunch")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build golaunch: %v\n%s", err, msg)
	}
	return out, nil
})

// TestFitQuota: 2 unbound ranks of golaunch fill the 2 processors of a host with no
// quota; in a cgroup whose CPU quota is one processor they are oversubscribed.
func TestFitQuota(t *testing.T) {
	needTwoCPUs(t)
	golaunch, err := golaunchBin()
	if err != nil {
		t.Fatal(err)
	}
	hello, _ := buildPMIBins(t)
	_, errb, err := launchErr(t, 2*time.Minute, []string{"GORMA_DEBUG=1"}, golaunch, "-n", "2", hello)
	if err != nil {
		t.Fatalf("golaunch -n 2: %v\n%s", err, errb)
	}
	host := goruntime.NumCPU()
	want := fit{local: 2, cpus: host, quota: "no quota", own: host, share: 2, procs: host, siblings: true} // half a host or less
	if host == 2 {
		want.full, want.procs, want.lowered = true, 1, true // a full host: one P
	}
	checkFits(t, fits(t, errb, 2), want)

	enter := quotaCgroup(t, 1)
	_, errb, err = launchErr(t, 2*time.Minute, []string{"GORMA_DEBUG=1"}, "sh", "-c", enter+` && exec "$@"`, "sh", golaunch, "-n", "2", hello)
	if err != nil {
		t.Fatalf("golaunch -n 2 in a cgroup of one processor's quota: %v\n%s", err, errb)
	}
	got := fits(t, errb, 2)
	for r, f := range got { // Go's own GOMAXPROCS may follow the quota already
		f.lowered = false
		got[r] = f
	}
	checkFits(t, got, fit{local: 2, cpus: 1, quota: "quota 1.00", own: host, share: 2, oversub: true, full: true, procs: 1, siblings: true})
}

// quotaCgroup makes a cgroup whose CPU quota is cpus processors (v2's cpu.max, or v1's
// cpu controller) and returns a shell command that moves the shell into it. The cgroup
// is removed when the test ends.
func quotaCgroup(t *testing.T, cpus int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		testbudget.SkipEngine(t, "a cgroup with a CPU quota needs root")
	}
	name := fmt.Sprintf("gorma-fit-%d", os.Getpid())
	quota := fmt.Sprint(cpus * 100000)
	var dir string
	var writes [][2]string
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil && hasWord(string(b), "cpu") {
		dir = filepath.Join("/sys/fs/cgroup", name)
		writes = [][2]string{{"cpu.max", quota + " 100000"}}
		if err := os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+cpu"), 0); err != nil {
			testbudget.SkipEngine(t, "cgroup v2 does not delegate the cpu controller here: %v", err)
		}
	} else {
		for _, root := range []string{"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"} {
			if _, err := os.Stat(filepath.Join(root, "cpu.cfs_quota_us")); err == nil {
				dir = filepath.Join(root, name)
				break
			}
		}
		if dir == "" {
			testbudget.SkipEngine(t, "no cgroup cpu controller (v2 cpu.max or v1 cpu.cfs_quota_us) under /sys/fs/cgroup")
		}
		writes = [][2]string{{"cpu.cfs_period_us", "100000"}, {"cpu.cfs_quota_us", quota}}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		testbudget.SkipEngine(t, "cannot make a cgroup: %v", err)
	}
	t.Cleanup(func() {
		for range 50 { // the job's processes leave it as they are reaped
			if os.Remove(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("cgroup %s is still busy", dir)
	})
	for _, w := range writes {
		if err := os.WriteFile(filepath.Join(dir, w[0]), []byte(w[1]), 0); err != nil {
			t.Fatalf("cgroup %s: write %s: %v", dir, w[0], err)
		}
	}
	return "echo $$ > " + filepath.Join(dir, "cgroup.procs")
}

func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// TestTeamsSrun: 4 ranks that srun binds two to each processor, on a host whose two
// processors have caches of their own (a pretend sysfs tree, GORMA_TEST_SYSCPU), run the
// host's collectives in teams of the caches: a rank connects to its team and, as its
// team's head, to the other head. Where the domains are unknown (no tree) or ranks span
// both (unbound), the host is one group, and every rank connects to all.
func TestTeamsSrun(t *testing.T) {
	srun := slurmtest.Up(t)
	needTwoCPUs(t)
	_, prog := buildPMIBins(t)
	tree := t.TempDir()
	for cpu := range 2 {
		dir := filepath.Join(tree, fmt.Sprintf("cpu%d", cpu), "cache", "index0")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string]string{"level": "3", "type": "Unified", "shared_cpu_list": fmt.Sprint(cpu)} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func(env []string, args ...string) map[int]int {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Minute))
		defer cancel()
		args = append(args, "--mpi=pmi2", prog, "--teams")
		cmd := srun(ctx, args...)
		cmd.Env = append(cmd.Env, env...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("srun %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		conns := map[int]int{}
		for _, line := range strings.Split(out.String(), "\n") {
			var r, n int
			if _, err := fmt.Sscanf(line, "connections %d %d", &r, &n); err == nil {
				conns[r] = n
			}
		}
		return conns
	}
	pairs := []string{"-n", "4", "--cpu-bind=map_cpu:0,0,1,1"}
	withTree := []string{"GORMA_TEST_SYSCPU=" + tree}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want map[int]int
	}{
		{"teams of the caches", withTree, pairs, map[int]int{0: 2, 1: 1, 2: 2, 3: 1}},
		{"domains unknown", []string{"GORMA_TEST_SYSCPU=" + t.TempDir()}, pairs, map[int]int{0: 3, 1: 3, 2: 3, 3: 3}},
		{"unbound", withTree, []string{"-n", "4"}, map[int]int{0: 3, 1: 3, 2: 3, 3: 3}},
	} {
		if got := run(tc.env, tc.args...); !maps.Equal(got, tc.want) {
			t.Errorf("%s: connections by rank %v, want %v", tc.name, got, tc.want)
		}
	}
}
