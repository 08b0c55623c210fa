package mpich_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDyn runs testdata/dyncheck.c at 2 ranks. Its partitioned lines must be MPICH's:
// gorma's library runs it with "strict" (the checks that Debian's MPICH 4.0.2 fails
// print nothing). Its spawn lines are fixed answers, since that MPICH fails every
// MPI_Comm_spawn under its Hydra: gorma's library runs the spawns under golaunch, and
// under Hydra fails them with MPI_ERR_SPAWN (class 42), naming golaunch.
func TestDyn(t *testing.T) {
	dir := setup(t)
	prog := filepath.Join(dir, "dyncheck")
	lib := "LD_LIBRARY_PATH=" + filepath.Join(dir, "lib")
	mpich, err := onMPICH(t, 2, prog)
	if err != nil {
		t.Fatalf("on MPICH's library: %v\n%s", err, mpich)
	}
	want := append(shape(mpich, true),
		"dyn rank 0 spawn 1 ok", "dyn rank 1 spawn 1 ok", "dyn rank 0 spawn 2 ok", "dyn rank 1 spawn 2 ok",
		"dyn child of spawn 1 rank 0 ok", "dyn child of spawn 1 rank 1 ok",
		"dyn child of spawn 2 rank 0 ok", "dyn child of spawn 2 rank 1 ok")
	slices.Sort(want)
	// golaunch gives a local run as many slots as -n: the spawned ranks need more.
	got, err := run(t, exec.Command(filepath.Join(dir, "golaunch"), "-n", "2", "--oversubscribe", "--tag-output=false", prog, "strict", "spawn"), lib)
	if err != nil {
		t.Fatalf("on gorma's library: %v\n%s", err, got)
	}
	if g := shape(got, true); !slices.Equal(g, want) {
		t.Errorf("gorma's output differs from MPICH's with the spawn lines (- gorma only, + want only):\n%s", lineDiff(g, want))
	}
	out, err := run(t, exec.Command("mpiexec.hydra", "-n", "2", prog, "spawn"), lib)
	for r := range 2 {
		if want := fmt.Sprintf("dyn rank %d spawn refused: class 42: MPI_Comm_spawn:", r); err != nil || !strings.Contains(out, want) || !strings.Contains(out, "needs golaunch") {
			t.Errorf("a spawn under Hydra on gorma's library: want %q and a message naming golaunch, got %v:\n%s", want, err, out)
		}
	}
}
