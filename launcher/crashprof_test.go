package launcher

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/prof"
)

// TestCrashProfile: of a job in which rank 1 died and ranks 0 and 2 finalized, the
// submitter writes the job's profile from the two ranks' own, with rank 1 missing and
// failed, and its line names rank 1 and how it died. A job.json newer than the ranks'
// profiles stands.
func TestCrashProfile(t *testing.T) {
	dir := t.TempDir()
	const n = 3
	for _, r := range []int{0, 2} {
		c := prof.New(r, n)
		c.Send((r+1)%n, 100*(r+1))
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("prof.%d.json", r)))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Snapshot().WriteJSON(f); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	ranks := []rankState{{finalized: true}, {died: "killed by signal 9 (SIGKILL)"}, {finalized: true}}
	line := crashProfile(dir, ranks)
	want := fmt.Sprintf("golaunch: --profile %s: the job's profile holds the 2 ranks that finalized: rank 1 died before Finalize (killed by signal 9 (SIGKILL))", dir)
	if line != want {
		t.Errorf("line %q, want %q", line, want)
	}
	f, err := os.Open(filepath.Join(dir, "job.json"))
	if err != nil {
		t.Fatal(err)
	}
	job, err := prof.ReadJob(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	m := job.Matrix(prof.P2P)
	if !slices.Equal(job.Missing, []int{1}) || !slices.Equal(job.Failed, []int{1}) || m.Bytes[0][1] != 100 || m.Bytes[2][0] != 300 {
		t.Errorf("job.json: missing %v, failed %v, bytes 0->1 %d, 2->0 %d; want [1], [1], 100, 300",
			job.Missing, job.Failed, m.Bytes[0][1], m.Bytes[2][0])
	}
	s, err := os.ReadFile(filepath.Join(dir, "summary.txt"))
	if err != nil || !strings.Contains(string(s), "ranks that failed before Finalize (no profile): [1]\n") {
		t.Errorf("summary.txt (%v) does not name rank 1 failed:\n%s", err, s)
	}
	// A job.json newer than every rank's profile is the gatherer's: it stands.
	want = fmt.Sprintf("golaunch: --profile %s: the job's profile, which the ranks wrote, holds 2 ranks: rank 1 died before Finalize (killed by signal 9 (SIGKILL))", dir)
	if line := crashProfile(dir, ranks); line != want {
		t.Errorf("with the job's profile in place: line %q, want %q", line, want)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "prof.2.json"), later, later); err != nil {
		t.Fatal(err)
	}
	if line := crashProfile(dir, ranks); !strings.Contains(line, "the job's profile holds the 2 ranks that finalized") {
		t.Errorf("with a job.json older than a rank's profile: line %q, want it written again", line)
	}
	if line := crashProfile(dir, []rankState{{finalized: true}, {finalized: true}, {finalized: true}}); line != "" {
		t.Errorf("every rank finalized, yet the line %q", line)
	}
}

// TestObserveCrashProfile: under --profile without --ft a rank panics and the abort ends
// the others before Finalize. No rank wrote a profile, and golaunch says so, naming the
// dead rank, how it died and the ranks the job's end took.
func TestObserveCrashProfile(t *testing.T) {
	bin := obsprogProg.path(t)
	pdir := filepath.Join(t.TempDir(), "prof")
	r := runGL(t, "", "--profile", pdir, "-n", "3", bin, "crash", "1", "panic")
	if r.code == 0 {
		t.Fatalf("exit 0, want the crash's\n%s\n%s", r.stdout, r.stderr)
	}
	mustContain(t, "stderr", r.stderr, "golaunch: --profile "+pdir+": no profile written: rank 1 died before Finalize (panicked: panic: obsprog: rank 1 crashes on purpose")
	mustContain(t, "stderr", r.stderr, "the job's end took ranks 0, 2 before Finalize (each rank writes its profile at Finalize; under --ft the survivors write theirs)")
	if _, err := os.Stat(filepath.Join(pdir, "job.json")); err == nil {
		t.Error("job.json written, though no rank finalized")
	}
}
