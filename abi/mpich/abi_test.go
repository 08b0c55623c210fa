package mpich_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/tests/slurmtest"
)

// built holds what the tests share: gorma's libmpich.so.12, golaunch, and the C
// programs compiled once with mpicc.mpich.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// twins are the C programs of bench/mpi that the tests run, and abicheck.
var twins = map[string]string{
	"hello":          "../../bench/mpi/hello.c",
	"pingpong":       "../../bench/mpi/pingpong.c",
	"allreducebench": "../../bench/mpi/allreducebench.c",
	"halobench":      "../../bench/mpi/halobench.c",
	"rmabench":       "../../bench/mpi/rmabench.c",
	"rmahalo":        "../../bench/mpi/rmahalo.c",
	"scalebench":     "../../bench/mpi/scalebench.c",
	"abicheck":       "testdata/abicheck.c",
	"ulfm":           "testdata/ulfm.c",
	"hang":           "testdata/hang.c",
	"loccheck":       "testdata/loccheck.c",
	"collcheck":      "testdata/collcheck.c",
	"dtypecheck":     "testdata/dtypecheck.c",
	"p2pcheck":       "testdata/p2pcheck.c",
	"topocheck":      "testdata/topocheck.c",
	"attrwincheck":   "testdata/attrwincheck.c",
	"lcountcheck":    "testdata/lcountcheck.c",
	"dyncheck":       "testdata/dyncheck.c",
	"sesscheck":      "testdata/sesscheck.c",
	"iocheck":        "testdata/iocheck.c",
	"intercheck":     "testdata/intercheck.c",
}

// setup builds the library, golaunch and the programs into one folder, once per test
// binary, and returns it. It skips where MPICH's compiler or Hydra is missing.
func setup(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"mpicc.mpich", "mpiexec.hydra", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			testbudget.SkipEngine(t, "%s is not installed (Debian: apt-get install mpich libmpich-dev gcc)", tool)
		}
	}
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "gorma-abi-")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		steps := [][]string{
			{"go", "build", "-buildmode=c-shared", "-ldflags=-extldflags=-Wl,-soname,libmpich.so.12",
				"-o", filepath.Join(dir, "lib", "libmpich.so.12"), "../../abi/mpich/libmpich"},
			{"go", "build", "-o", filepath.Join(dir, "golaunch"), "../../launcher/cmd/golaunch"},
		}
		for name, src := range twins {
			steps = append(steps, []string{"mpicc.mpich", "-O2", "-o", filepath.Join(dir, name), src})
		}
		for _, s := range steps {
			cmd := exec.Command(s[0], s[1:]...)
			if s[0] == "go" {
				cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
			}
			if out, err := cmd.CombinedOutput(); err != nil {
				built.err = fmt.Errorf("%s: %v\n%s", strings.Join(s, " "), err, out)
				return
			}
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}

func TestMain(m *testing.M) {
	code := slurmtest.Run(m)
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// onGorma runs prog's n ranks under golaunch on gorma's library.
func onGorma(t *testing.T, dir string, n int, prog string, args ...string) (string, error) {
	t.Helper()
	argv := append([]string{"-n", fmt.Sprint(n), "--tag-output=false", prog}, args...)
	return run(t, exec.Command(filepath.Join(dir, "golaunch"), argv...), "LD_LIBRARY_PATH="+filepath.Join(dir, "lib"))
}

// onMPICH runs prog's n ranks under mpiexec.hydra on MPICH's own library. Hydra
// forwards the ranks' output in chunks that may split a line, so each rank writes
// to files of its own (-outfile-pattern), which follow mpiexec's own output: the
// stdout of every rank in rank order, then the stderr of every rank.
func onMPICH(t *testing.T, n int, prog string, args ...string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	argv := append([]string{"-n", fmt.Sprint(n),
		"-outfile-pattern", filepath.Join(dir, "out.%r"), "-errfile-pattern", filepath.Join(dir, "err.%r"),
		prog}, args...)
	out, err := run(t, exec.Command("mpiexec.hydra", argv...))
	var b strings.Builder
	b.WriteString(out)
	for _, stream := range []string{"out", "err"} {
		for r := range n {
			data, rerr := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%s.%d", stream, r)))
			if rerr == nil && len(data) > 0 {
				b.Write(data)
				if data[len(data)-1] != '\n' {
					b.WriteByte('\n')
				}
			}
		}
	}
	return b.String(), err
}

func run(t *testing.T, cmd *exec.Cmd, env ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Minute))
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.Env = append(os.Environ(), env...)
	c.Dir = cmd.Dir
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s: did not end within its budget:\n%s", strings.Join(cmd.Args, " "), out.String())
	}
	return out.String(), err
}

var (
	numRE = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?$`)
	pidRE = regexp.MustCompile(`pid [0-9]+`)
)

// shape is a program's output with its measured figures masked (unless exact): each
// number but a line's first replaced by N, and the lines sorted, since ranks print
// concurrently. golaunch's own lines are left out.
func shape(out string, exact bool) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l == "" || strings.HasPrefix(l, "golaunch:") {
			continue
		}
		l = pidRE.ReplaceAllString(l, "pid N")
		f := strings.Fields(l)
		for i := 1; i < len(f) && !exact; i++ {
			if numRE.MatchString(f[i]) {
				f[i] = "N"
			}
		}
		lines = append(lines, strings.Join(f, " "))
	}
	slices.Sort(lines)
	return lines
}

// TestCTwins runs the C twins of bench/mpi and abicheck, compiled once with
// mpicc.mpich, on gorma's library under golaunch and on MPICH's under mpiexec.hydra:
// each must succeed and print the same lines, figures aside. The benchmarks check
// their results (allreducebench aborts on a wrong element).
func TestCTwins(t *testing.T) {
	dir := setup(t)
	cases := []struct {
		prog string
		n    int
		args []string
	}{
		{"hello", 3, nil},
		{"abicheck", 2, nil},
		{"pingpong", 2, []string{"--max-size", "65536", "--iters", "50", "--bw-iters", "5"}},
		{"allreducebench", 2, []string{"--test", "colls", "--max-size", "16K", "--iters", "10"}},
		{"allreducebench", 3, []string{"--test", "colls", "--max-size", "64K", "--iters", "5"}},
		{"halobench", 2, []string{"--iters", "20", "--warmup", "2"}},
		{"rmabench", 2, []string{"--max-size", "4096", "--iters", "100", "--bw-iters", "5", "--alloc-iters", "5", "--busy-reps", "2"}},
		{"rmahalo", 3, []string{"--iters", "20", "--warmup", "2", "--max-size", "4096"}},
		{"scalebench", 3, []string{"--iters", "3"}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%d", c.prog, c.n), func(t *testing.T) {
			prog := filepath.Join(dir, c.prog)
			got, err := onGorma(t, dir, c.n, prog, c.args...)
			if err != nil {
				t.Fatalf("on gorma's library: %v\n%s", err, got)
			}
			want, err := onMPICH(t, c.n, prog, c.args...)
			if err != nil {
				t.Fatalf("on MPICH's library: %v\n%s", err, want)
			}
			exact := c.prog == "abicheck"
			g, w := shape(got, exact), shape(want, exact)
			if c.prog == "abicheck" {
				// The one line that differs names the library.
				if !slices.Contains(g, "library: gorma") || !slices.Contains(w, "library: MPICH") {
					t.Fatalf("the library lines: gorma's run %q, MPICH's %q", g, w)
				}
				g = slices.DeleteFunc(g, func(s string) bool { return strings.HasPrefix(s, "library:") })
				w = slices.DeleteFunc(w, func(s string) bool { return strings.HasPrefix(s, "library:") || strings.HasPrefix(s, "MPICH ") })
			}
			if !slices.Equal(g, w) {
				t.Errorf("gorma's output differs from MPICH's (- gorma only, + MPICH only):\n%s", lineDiff(g, w))
			}
		})
	}
}

// TestRMA checks the one-sided calls' results on gorma's library (abicheck rma): Put,
// Accumulate and Fence; Fetch_and_op, Compare_and_swap, Lock and Get on the caller's
// memory; Post, Start, Complete and Wait. Its answers are fixed, so it compares with
// them: Debian's MPICH 4.0.2 returns other values for the counter and the Put after
// Post (its ch4:ucx build), and Open MPI 4.1.4 crashes in its Compare_and_swap.
func TestRMA(t *testing.T) {
	dir := setup(t)
	out, err := onGorma(t, dir, 2, filepath.Join(dir, "abicheck"), "rma")
	if err != nil {
		t.Fatalf("abicheck rma: %v\n%s", err, out)
	}
	want := []string{
		"library: gorma",
		"window after put and accumulate: 2 3 3 5",
		"counter after fetch_and_op: 2",
		"compare_and_swap winners: 1, counter swapped",
		"after post and wait: 42",
	}
	if got := strings.Split(strings.TrimSpace(out), "\n"); !slices.Equal(got, want) {
		t.Errorf("abicheck rma printed:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
	}
}

// TestNetPIPE runs Debian's NPmpich2 (netpipe-mpich2), unchanged, on gorma's library
// with its integrity check: every message's bytes are checked at the receiver.
func TestNetPIPE(t *testing.T) {
	dir := setup(t)
	np, err := exec.LookPath("NPmpich2")
	if err != nil {
		testbudget.SkipEngine(t, "NPmpich2 is not installed (Debian: apt-get install netpipe-mpich2)")
	}
	work := t.TempDir()
	cmd := exec.Command(filepath.Join(dir, "golaunch"), "-n", "2", np, "-i", "-u", "1048576")
	cmd.Dir = work
	out, err := run(t, cmd, "LD_LIBRARY_PATH="+filepath.Join(dir, "lib"))
	if err != nil {
		t.Fatalf("NPmpich2 -i: %v\n%s", err, out)
	}
	passed := strings.Count(out, "Integrity check passed")
	if passed < 20 || strings.Contains(out, "failed") {
		t.Fatalf("NPmpich2 -i: %d sizes passed its integrity check, want every one of at least 20:\n%s", passed, out)
	}
}

// TestScaLAPACK runs ScaLAPACK's MPICH test drivers from Debian's scalapack-mpi-test,
// unchanged, at 4 ranks: LU and Cholesky factorizations and solves, each checked by its
// scaled residual. They reach MPI through libscalapack-mpich.so.2.2's BLACS, with its
// struct datatypes, packing and user reductions.
func TestScaLAPACK(t *testing.T) {
	dir := setup(t)
	const tests = "/usr/lib/x86_64-linux-gnu/scalapack/mpich-tests"
	if _, err := os.Stat(filepath.Join(tests, "xdlu")); err != nil {
		testbudget.SkipEngine(t, "ScaLAPACK's MPICH test drivers are not installed (Debian: apt-get install scalapack-mpi-test)")
	}
	work := t.TempDir()
	for _, dat := range []string{"LU.dat", "LLT.dat"} {
		b, err := os.ReadFile(filepath.Join(tests, dat))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, dat), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, prog := range []string{"xdlu", "xdllt"} {
		cmd := exec.Command(filepath.Join(dir, "golaunch"), "-n", "4", "--tag-output=false", filepath.Join(tests, prog))
		cmd.Dir = work
		out, err := run(t, cmd, "LD_LIBRARY_PATH="+filepath.Join(dir, "lib"))
		if err != nil {
			t.Fatalf("%s: %v\n%s", prog, err, out)
		}
		passed := regexp.MustCompile(`(?m)^ +([0-9]+) tests completed and passed residual checks`).FindStringSubmatch(out)
		if passed == nil || passed[1] == "0" || !strings.Contains(out, " 0 tests completed and failed residual checks") {
			t.Errorf("%s: not every test passed its residual check:\n%s", prog, out)
		}
	}
}

// TestBAGEL runs Debian's BAGEL, unchanged, at 2 ranks on water (testdata/bagel_h2o.json):
// Hartree-Fock, MP2, and the parallel FCI, whose distributed vectors live in windows
// (Win_allocate, Rget, Raccumulate under Lock_all). Every energy it prints, to its
// printed precision, is MPICH's.
func TestBAGEL(t *testing.T) {
	dir := setup(t)
	bagel, err := exec.LookPath("BAGEL")
	if err != nil {
		testbudget.SkipEngine(t, "BAGEL is not installed (Debian: apt-get install bagel)")
	}
	input, err := filepath.Abs("testdata/bagel_h2o.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := onGorma(t, dir, 2, bagel, input)
	if err != nil {
		t.Fatalf("BAGEL on gorma's library: %v\n%s", err, got)
	}
	want, err := onMPICH(t, 2, bagel, input)
	if err != nil {
		t.Fatalf("BAGEL on MPICH's library: %v\n%s", err, want)
	}
	energy := regexp.MustCompile(`-?[0-9]+\.[0-9]{8,}`)
	g, w := energy.FindAllString(got, -1), energy.FindAllString(want, -1)
	if len(w) < 20 || !slices.Equal(g, w) {
		t.Errorf("BAGEL's energies on gorma's library:\n%v\non MPICH's:\n%v\ngorma's output:\n%s", g, w, got)
	}
}

// TestNWChem runs Debian's nwchem.mpich, unchanged, on water (testdata/nwchem_h2o.nw,
// SCF in STO-3G) at 2 ranks on gorma's library. Its Fortran reaches the library through
// Debian's libmpichfort.so.12, and its Global Arrays through ARMCI-MPI's windows (derived
// datatypes, Accumulate, Get_accumulate). The energies are MPICH's at 1 rank: at 2 ranks
// on MPICH's own library, Debian's NWChem 7.0.2 fails to converge. At 1 rank gorma's
// library prints the same digits; at 2 ranks, the same within 1e-9 hartree.
func TestNWChem(t *testing.T) {
	dir := setup(t)
	nw, err := exec.LookPath("nwchem.mpich")
	if err != nil {
		testbudget.SkipEngine(t, "nwchem.mpich is not installed (Debian: apt-get install nwchem-mpich)")
	}
	input, err := os.ReadFile("testdata/nwchem_h2o.nw")
	if err != nil {
		t.Fatal(err)
	}
	energies := func(ranks int, lib string) []string {
		work := t.TempDir()
		if err := os.WriteFile(filepath.Join(work, "h2o.nw"), input, 0o644); err != nil {
			t.Fatal(err)
		}
		var cmd *exec.Cmd
		var env []string
		if lib == "gorma" {
			cmd = exec.Command(filepath.Join(dir, "golaunch"), "-n", fmt.Sprint(ranks), "--tag-output=false", nw, "h2o.nw")
			env = []string{"LD_LIBRARY_PATH=" + filepath.Join(dir, "lib")}
		} else {
			cmd = exec.Command("mpiexec.hydra", "-n", fmt.Sprint(ranks), nw, "h2o.nw")
		}
		cmd.Dir = work
		out, err := run(t, cmd, env...)
		if err != nil {
			t.Fatalf("nwchem.mpich at %d ranks on %s's library: %v\n%s", ranks, lib, err, out)
		}
		e := regexp.MustCompile(`(?m)^ +(Total SCF|One-electron|Two-electron|Nuclear repulsion) energy = +(-?[0-9.]+)$`).FindAllString(out, -1)
		if len(e) != 4 {
			t.Fatalf("nwchem.mpich at %d ranks on %s's library printed %d energies, want 4:\n%s", ranks, lib, len(e), out)
		}
		return e
	}
	want := energies(1, "MPICH")
	if got := energies(1, "gorma"); !slices.Equal(got, want) {
		t.Errorf("NWChem's energies on gorma's library at 1 rank:\n%s\non MPICH's at 1 rank:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// At 2 ranks NWChem hands out its tasks as they finish (NXTVAL, a Fetch_and_op), so
	// its sums add in an order that varies from run to run: the last printed digit may
	// differ. 1e-9 hartree is far below the SCF's convergence threshold.
	got := energies(2, "gorma")
	for i := range want {
		gn, g := splitEnergy(got[i])
		wn, w := splitEnergy(want[i])
		if gn != wn || !(math.Abs(g-w) <= 1e-9) { // NaN fails too
			t.Errorf("NWChem's energies on gorma's library at 2 ranks:\n%s\non MPICH's at 1 rank:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			break
		}
	}
}

// splitEnergy returns an energy line's name and value (NaN if it has none).
func splitEnergy(line string) (string, float64) {
	name, value, _ := strings.Cut(line, "=")
	v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
	if err != nil {
		v = math.NaN()
	}
	return strings.TrimSpace(name), v
}

// TestErrors: an invalid call under MPI_ERRORS_ARE_FATAL ends the job with a message
// naming the call, the class and the cause; so does a function that gorma defines but
// does not cover, whose class is MPI_ERR_UNSUPPORTED_OPERATION; a child of fork that
// calls MPI gets MPI_ERR_OTHER and a message, and the parent goes on.
func TestErrors(t *testing.T) {
	dir := setup(t)
	prog := filepath.Join(dir, "abicheck")
	out, err := onGorma(t, dir, 2, prog, "fatal")
	if err == nil || strings.Contains(out, "fatal: returned") {
		t.Fatalf("an invalid MPI_Send under MPI_ERRORS_ARE_FATAL: err %v, want the job to fail:\n%s", err, out)
	}
	for _, want := range []string{"MPI_Send: Invalid rank: rank 99 is not in [0, 2)", "called Abort(1)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the fatal error's output lacks %q:\n%s", want, out)
		}
	}
	out, err = onGorma(t, dir, 2, prog, "absent")
	if err == nil || strings.Contains(out, "absent: returned") {
		t.Fatalf("MPI_Open_port under MPI_ERRORS_ARE_FATAL: err %v, want the job to fail:\n%s", err, out)
	}
	for _, want := range []string{
		fmt.Sprintf("absent: class %d, unsupported 1, message names MPI_Comm_accept", 44),
		"MPI_Open_port: Unsupported operation: MPI_Open_port is not supported by gorma's libmpich",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the absent functions' output lacks %q:\n%s", want, out)
		}
	}
	out, err = onGorma(t, dir, 2, prog, "fork")
	if err != nil {
		t.Fatalf("fork: %v\n%s", err, out)
	}
	for _, want := range []string{"fork child: exit 15", "MPI_Comm_rank: called in a child of fork()"} {
		if !strings.Contains(out, want) {
			t.Errorf("the fork case's output lacks %q:\n%s", want, out)
		}
	}
}

// TestULFM: under golaunch --ft, the survivors of a killed rank see
// MPIX_ERR_PROC_FAILED (or MPIX_ERR_REVOKED, once a peer revoked), and recover with MPICH's MPIX_Comm_revoke, _failure_ack,
// _failure_get_acked, _agree and _shrink.
func TestULFM(t *testing.T) {
	dir := setup(t)
	out, err := run(t, exec.Command(filepath.Join(dir, "golaunch"), "--ft", "-n", "3", "--tag-output=false", filepath.Join(dir, "ulfm")),
		"LD_LIBRARY_PATH="+filepath.Join(dir, "lib"))
	if err != nil {
		t.Fatalf("ulfm under --ft: %v\n%s", err, out)
	}
	// A survivor whose peer revoked the communicator before it saw the
	// failure itself gets MPIX_ERR_REVOKED, as ULFM allows. The first to see
	// the failure cannot: nobody revokes before a failure shows.
	failed := 0
	for r := 0; r < 2; r++ {
		pf := fmt.Sprintf("rank %d: allreduce failed: MPIX_ERR_PROC_FAILED", r)
		rv := fmt.Sprintf("rank %d: allreduce failed: MPIX_ERR_REVOKED", r)
		switch {
		case strings.Contains(out, pf):
			failed++
		case !strings.Contains(out, rv):
			t.Errorf("no %q nor %q:\n%s", pf, rv, out)
		}
		want := fmt.Sprintf("rank %d: 1 acknowledged, agreed 1, 2 survivors, sum 2, rc 0", r)
		if !strings.Contains(out, want) {
			t.Errorf("no %q:\n%s", want, out)
		}
	}
	if failed == 0 {
		t.Errorf("no survivor saw MPIX_ERR_PROC_FAILED:\n%s", out)
	}
}

// TestObserve: golaunch's hang report names the C program's blocked calls and the
// deadlock, and --profile counts its calls.
func TestObserve(t *testing.T) {
	dir := setup(t)
	lib := "LD_LIBRARY_PATH=" + filepath.Join(dir, "lib")
	out, err := run(t, exec.Command(filepath.Join(dir, "golaunch"), "-n", "2", "--hang-report", "1s", "--timeout", "4s", filepath.Join(dir, "hang")), lib)
	if err == nil {
		t.Fatalf("a deadlocked job ended well:\n%s", out)
	}
	for _, want := range []string{"rank 0: MPI_Recv(src=1, tag=7, World)", "rank 1: MPI_Barrier #1 (World)", "deadlock: rank 0 waits for rank 1 in MPI_Recv"} {
		if !strings.Contains(out, want) {
			t.Errorf("the hang report lacks %q:\n%s", want, out)
		}
	}
	prof := t.TempDir()
	out, err = run(t, exec.Command(filepath.Join(dir, "golaunch"), "-n", "2", "--profile", prof, filepath.Join(dir, "abicheck"), "rma"), lib)
	if err != nil {
		t.Fatalf("abicheck rma --profile: %v\n%s", err, out)
	}
	sum, err := os.ReadFile(filepath.Join(prof, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []string{"Put", "Accumulate", "GetAccumulate", "Fence", "Post", "Allreduce"} {
		if !regexp.MustCompile(`(?m)^ +` + call + ` +[1-9]`).Match(sum) {
			t.Errorf("the profile's summary has no %s calls:\n%s", call, sum)
		}
	}
}

// TestHydra runs abicheck on gorma's library under mpiexec.hydra, whose PMI-1 server
// the runtime's Init finds, as MPICH's library would.
func TestHydra(t *testing.T) {
	dir := setup(t)
	out, err := run(t, exec.Command("mpiexec.hydra", "-n", "2", filepath.Join(dir, "abicheck")), "LD_LIBRARY_PATH="+filepath.Join(dir, "lib"))
	if err != nil {
		t.Fatalf("under mpiexec.hydra: %v\n%s", err, out)
	}
	for _, want := range []string{"library: gorma", "send to rank 99: class 6", "column back: 1 11 21 31, count 4, source 1, tag 6"} {
		if !strings.Contains(out, want) {
			t.Errorf("abicheck under mpiexec.hydra: no %q:\n%s", want, out)
		}
	}
}

// TestSrun runs abicheck on gorma's library under srun --mpi=pmi2, whose PMI server
// the runtime's Init finds: the same answers as under golaunch.
func TestSrun(t *testing.T) {
	srun := slurmtest.Up(t)
	dir := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Minute))
	defer cancel()
	cmd := srun(ctx, "-n", "2", "--mpi=pmi2", "--oversubscribe", filepath.Join(dir, "abicheck"))
	cmd.Env = append(cmd.Env, "LD_LIBRARY_PATH="+filepath.Join(dir, "lib"))
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil || err != nil {
		t.Fatalf("srun --mpi=pmi2 abicheck: %v\n%s", err, out)
	}
	want, err := onGorma(t, dir, 2, filepath.Join(dir, "abicheck"))
	if err != nil {
		t.Fatalf("abicheck under golaunch: %v\n%s", err, want)
	}
	if g, w := shape(string(out), true), shape(want, true); !slices.Equal(g, w) {
		t.Errorf("under srun:\n%s\nunder golaunch:\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

// TestSymbols: every MPI function and data symbol that the C twins, NPmpich2, BAGEL,
// NWChem, ScaLAPACK's MPICH library and MPICH's Fortran library (libmpichfort.so.12)
// import is defined by gorma's library, each MPI_ function as a weak alias of a PMPI_
// one.
func TestSymbols(t *testing.T) {
	dir := setup(t)
	if _, err := exec.LookPath("nm"); err != nil {
		testbudget.SkipEngine(t, "nm is not installed (Debian: apt-get install binutils)")
	}
	defined := map[string]string{}
	out, err := exec.Command("nm", "-D", "--defined-only", filepath.Join(dir, "lib", "libmpich.so.12")).Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			defined[f[2]] = f[1]
		}
	}
	users := []string{}
	for name := range twins {
		users = append(users, filepath.Join(dir, name))
	}
	for _, prog := range []string{"NPmpich2", "BAGEL", "nwchem.mpich"} {
		if p, err := exec.LookPath(prog); err == nil {
			users = append(users, p)
		}
	}
	for _, lib := range []string{"/usr/lib/x86_64-linux-gnu/libscalapack-mpich.so.2.2", "/usr/lib/x86_64-linux-gnu/libmpichfort.so.12"} {
		if fileExists(lib) {
			users = append(users, lib)
		}
	}
	for _, u := range users {
		out, err := exec.Command("nm", "-D", "--undefined-only", u).Output()
		if err != nil {
			t.Fatalf("nm %s: %v", u, err)
		}
		for _, l := range strings.Split(string(out), "\n") {
			f := strings.Fields(l)
			if len(f) != 2 || !strings.HasPrefix(f[1], "MPI") && !strings.HasPrefix(f[1], "PMPI") {
				continue
			}
			sym := f[1]
			switch {
			case defined[sym] == "":
				t.Errorf("%s imports %s, which gorma's library does not define", filepath.Base(u), sym)
			case strings.HasPrefix(sym, "MPI_") && defined[sym] == "W" && defined["P"+sym] != "T":
				t.Errorf("%s is weak but P%s is not a strong definition (%q)", sym, sym, defined["P"+sym])
			}
		}
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// lineDiff lists the lines of two sorted outputs that only one holds, a line that
// occurs more often in one counting once for each extra: "- " for got's, "+ " for
// want's.
func lineDiff(got, want []string) string {
	var b strings.Builder
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || i < len(got) && got[i] < want[j]:
			fmt.Fprintf(&b, "- %s\n", got[i])
			i++
		case i == len(got) || want[j] < got[i]:
			fmt.Fprintf(&b, "+ %s\n", want[j])
			j++
		default:
			i++
			j++
		}
	}
	return b.String()
}
