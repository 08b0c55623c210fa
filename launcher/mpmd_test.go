package launcher

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var appProg = &program{pkg: "../tests/appprog"}

// appProgs returns appprog and a copy of it under another name, appprog_b: two programs
// of an MPMD job.
func appProgs(t *testing.T) (string, string) {
	t.Helper()
	a := appProg.path(t)
	b := filepath.Join(t.TempDir(), "appprog_b")
	data, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// checkApps fails unless every rank r of stdout printed its program's AppNum apps[r], its
// program's name and -x value, and the World-wide sums (one Allreduce across every
// program's ranks).
func checkApps(t *testing.T, r result, apps []int, names, vals []string, hosts []string) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	sum := 0
	for _, a := range apps {
		sum += a
	}
	n := len(apps)
	for rank, a := range apps {
		want := fmt.Sprintf("[%d] app %d %d %d %s ", rank, rank, n, a, names[a])
		if hosts != nil {
			want += hosts[rank] + " "
		}
		mustContain(t, "stdout", r.stdout, want)
		line := lineWith(r.stdout, fmt.Sprintf("[%d] app ", rank))
		if !strings.Contains(line, " GL_APP="+vals[a]+" ") {
			t.Errorf("rank %d: %q, want GL_APP=%s", rank, line, vals[a])
		}
		mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] sum %d %d %d\n", rank, rank, sum, n))
	}
}

func lineWith(s, substr string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			return l + "\n"
		}
	}
	return ""
}

// An MPMD command line runs one job: the first program's ranks first, every rank knows
// its program's number (World.AppNum), and the ranks of both programs form one World.
func TestMPMD(t *testing.T) {
	a, b := appProgs(t)
	r := runGL(t, "", "-x", "GL_APP=all", "-n", "2", a, "x", ":", "-n", "3", "-x", "GL_APP=b", b, "y", "c:d")
	checkApps(t, r, []int{0, 0, 1, 1, 1}, []string{"appprog", "appprog_b"}, []string{"all", "b"}, nil)
	for rank := range 2 {
		mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] app %d 5 0 appprog %s GL_APP=all x\n", rank, rank, hostName()))
	}
	for rank := 2; rank < 5; rank++ {
		mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] app %d 5 1 appprog_b %s GL_APP=b y c:d\n", rank, rank, hostName()))
	}

	// -- before the last program: ':' is its argument.
	r = runGL(t, "", "-n", "1", a, ":", "-n", "1", "--", b, ":", "z")
	checkApps(t, r, []int{0, 1}, []string{"appprog", "appprog_b"}, []string{"", ""}, nil)
	mustContain(t, "stdout", r.stdout, "[1] app 1 2 1 appprog_b "+hostName()+" GL_APP= : z\n")
}

// A ':' that cannot separate programs, and an MPMD program that is not there, are usage
// errors: no rank starts.
func TestMPMDUsageErrors(t *testing.T) {
	a, _ := appProgs(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-n", "1", a, ":"}, "':' at the end of the command line"},
		{[]string{":", a}, "':' cannot come first"},
		{[]string{"-n", "1", a, ":", a}, "each program of an MPMD job needs its own -n"},
		{[]string{"-n", "1", a, ":", "-n", "1", "no-such-program-gorma"}, `program "no-such-program-gorma" not found in PATH`},
	}
	for _, tt := range tests {
		r := runGL(t, "", tt.args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("golaunch %q: exit %d, want 2 with %q:\n%s", tt.args, r.code, tt.want, r.stderr)
		}
		if strings.Contains(r.stdout, "app ") {
			t.Errorf("golaunch %q started ranks:\n%s", tt.args, r.stdout)
		}
	}
}

// MPMD through --join: the programs' ranks spread over the agents as one job; with
// --npernode 1 and --map-by node each agent runs one rank of each program.
func TestMPMDJoin(t *testing.T) {
	a, b := appProgs(t)
	c := startCluster(t, 2, 2)
	r := runGL(t, "", c.submit("-x", "GL_APP=g", "-n", "1", a, ":", "-n", "3", "-x", "GL_APP=b", b)...)
	checkApps(t, r, []int{0, 1, 1, 1}, []string{"appprog", "appprog_b"}, []string{"g", "b"}, []string{"a1", "a1", "a2", "a2"})

	r = runGL(t, "", c.submit("--map-by", "node", "-n", "2", a, ":", "-n", "2", b)...)
	checkApps(t, r, []int{0, 0, 1, 1}, []string{"appprog", "appprog_b"}, []string{"", ""}, []string{"a1", "a2", "a1", "a2"})

	r = runGL(t, "", c.submit("-ppn", "1", a)...)
	checkApps(t, r, []int{0, 0}, []string{"appprog"}, []string{""}, []string{"a1", "a2"})
}

// --report-bindings prints each rank's host, pid and processors; the hostfile's
// max_slots bounds --oversubscribe.
func TestReportBindingsAndMaxSlots(t *testing.T) {
	a, _ := appProgs(t)
	r := runGL(t, "", "-n", "2", "--bind-to", "core", "--report-bindings", a)
	checkApps(t, r, []int{0, 0}, []string{"appprog"}, []string{""}, nil)
	for rank := range 2 {
		l := lineWith(r.stderr, fmt.Sprintf("golaunch: rank %d (host %s, pid ", rank, hostName()))
		if !strings.Contains(l, "): bound to CPUs ") {
			t.Errorf("rank %d: no binding line:\n%s", rank, r.stderr)
		}
	}
	r = runGL(t, "", "-n", "1", "--bind-to", "none", "--report-bindings", a)
	mustContain(t, "stderr", r.stderr, "): not bound (any of the host's ")

	hf := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(hf, []byte("localhost slots=1 max_slots=2\n"), 0o644)
	r = runGL(t, "", "-hostfile", hf, "-n", "2", a)
	if r.code != ExitUsage || !strings.Contains(r.stderr, "-n 2 needs 2 slots but the hosts offer 1") {
		t.Errorf("-n 2 on 1 slot: exit %d\n%s", r.code, r.stderr)
	}
	r = runGL(t, "", "-machinefile", hf, "--oversubscribe", "-n", "2", a)
	checkApps(t, r, []int{0, 0}, []string{"appprog"}, []string{""}, nil)
	r = runGL(t, "", "-f", hf, "--oversubscribe", "-n", "3", a)
	if r.code != ExitUsage || !strings.Contains(r.stderr, "max_slots") {
		t.Errorf("-n 3 beyond max_slots 2: exit %d\n%s", r.code, r.stderr)
	}
}

// A job that succeeded ends without an abort on any agent, golaunch's own included: with
// -v, its log has no "aborting" line. golaunch closes its own agent as the job ends,
// which its agent must not take for the loss of the submitter.
func TestVerboseCleanEnd(t *testing.T) {
	a, _ := appProgs(t)
	for range 5 {
		r := runGL(t, "", "-v", "-n", "2", a)
		checkApps(t, r, []int{0, 0}, []string{"appprog"}, []string{""}, nil)
		if strings.Contains(r.stderr, "aborting") {
			t.Fatalf("a successful job aborted:\n%s", r.stderr)
		}
	}
}

// An MPICH program under MPMD reads its program's number from PMI's get_appnum
// (MPI_APPNUM), and the ranks of both programs share MPI_COMM_WORLD.
func TestMPMDMPICHAppnum(t *testing.T) {
	bin := mpiProgs(t)["appnum"]
	b := filepath.Join(t.TempDir(), "appnum_b")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, data, 0o755); err != nil {
		t.Fatal(err)
	}
	r := runGL(t, "", "-n", "1", bin, ":", "-n", "2", b)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for rank, app := range []int{0, 1, 1} {
		mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] appnum rank %d of 3 app %d sum 2\n", rank, rank, app))
	}
}
