package runtime_test

import (
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// foldRE matches a rank's fold line (fold.go, at GORMA_DEBUG).
var foldRE = regexp.MustCompile(`gorma: rank (\d+): folded onto processors \[([0-9 ]+)\] \(([^)]*) on processor (-?\d+)\)`)

// TestFoldBesideOtherWork: two unbound ranks of golaunch share two processors with a
// busy loop bound to one of them. The ranks fold, a fold after a theft by other work
// leaves the processor of the theft, and every Allreduce stays right. (Where a fold
// goes is planFold's, which TestPlanFold covers; other tests' processes may take the
// other processor too.)
func TestFoldBesideOtherWork(t *testing.T) {
	needTwoCPUs(t)
	golaunch, err := golaunchBin()
	if err != nil {
		t.Fatal(err)
	}
	_, prog := buildPMIBins(t)
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	var cpus []string
	for i := 0; i < len(set)*64 && len(cpus) < 2; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, strconv.Itoa(i))
		}
	}
	if len(cpus) < 2 {
		t.Skipf("this test may run on %d processor", len(cpus))
	}
	taken, free := cpus[0], cpus[1]
	loop := exec.Command("taskset", "-c", taken, "sh", "-c", "while :; do :; done")
	if err := loop.Start(); err != nil {
		t.Fatalf("a busy loop on processor %s: %v", taken, err)
	}
	t.Cleanup(func() { loop.Process.Kill(); loop.Wait() })

	const n = 5000
	out, errb, err := launchErr(t, 3*time.Minute, []string{"GORMA_DEBUG=1", "GORMA_FOLD=on"},
		"taskset", "-c", taken+","+free, golaunch, "-n", "2", prog, "--timeout", "2m", "--allreduces", strconv.Itoa(n))
	if err != nil {
		t.Fatalf("golaunch -n 2 beside a busy loop: %v\n%s\n%s", err, out, errb)
	}
	for r := range 2 {
		if want := "allreduces " + strconv.Itoa(r) + " " + strconv.Itoa(n); !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	folds := foldRE.FindAllStringSubmatch(errb, -1)
	if len(folds) == 0 {
		t.Errorf("no rank folded beside a busy loop on processor %s:\n%s", taken, errb)
	}
	for _, m := range folds {
		if m[3] == "theft" && slices.Contains(strings.Fields(m[2]), m[4]) {
			t.Errorf("rank %s folded onto processors [%s] after a theft on processor %s", m[1], m[2], m[4])
		}
	}
}
