package launcher

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// The profile's pattern in both runtimes: internal/prof/testdata/ompi/pattern.c built
// with Open MPI, and its Go twin tests/profprog. The tests skip, saying which package to
// install, where Open MPI is absent, as the other Open MPI tests do.
var (
	patternProgs = &cPrograms{mpicc: "mpicc.openmpi", pkgs: "Debian's openmpi-bin and libopenmpi-dev", suffix: "_ompi",
		sources: map[string]string{"pattern": "../internal/prof/testdata/ompi/pattern.c"}}
	profprogProg = &program{pkg: "../tests/profprog"}
)

// profRanks is the size of both jobs.
const profRanks = 4

// patternWant holds what the pattern sends, per kind, as [from][to] matrices.
type patternWant struct {
	ring      prof.Matrix // the user's Sends: 3 of 1000 bytes to the right neighbour
	alltoallv prof.Matrix // the Alltoallv's blocks: 8(r+1)(d+1) bytes from r to d ≠ r, one message
	put       prof.Matrix // the one 512-byte Put to the right neighbour
	coll      prof.Matrix // the user's collectives' data: Allreduce 2048 bytes plus the Alltoallv's block, 2 calls
}

func wantPattern(n int) patternWant {
	var w patternWant
	for _, m := range []*prof.Matrix{&w.ring, &w.alltoallv, &w.put, &w.coll} {
		*m = *zeroMatrix(n)
	}
	for r := range n {
		right := (r + 1) % n
		w.ring.Bytes[r][right], w.ring.Msgs[r][right] = 3000, 3
		w.put.Bytes[r][right], w.put.Msgs[r][right] = 512, 1
		for d := range n {
			if d != r {
				b := uint64(8 * (r + 1) * (d + 1))
				w.alltoallv.Bytes[r][d], w.alltoallv.Msgs[r][d] = b, 1
				w.coll.Bytes[r][d], w.coll.Msgs[r][d] = 256*8+b, 2
			}
		}
	}
	return w
}

// TestProfileMatchesOpenMPI runs one communication pattern under Open MPI's monitoring
// (pml_monitoring_enable 2) and under golaunch --profile, 4 ranks each, and compares the
// profiles. internal/prof/design.md ("What gorma writes, and where it differs by design")
// gives the reasons for the differences that the test allows:
//
//   - point-to-point: gorma's matrix is the user's Sends. Open MPI's E lines also hold
//     the Alltoallv's sends (persistent requests that pml/monitoring records as tag 1),
//     so gorma's equals Open MPI's minus the Alltoallv's blocks, cell by cell;
//   - the histogram: gorma's holds the user's Sends only, Open MPI's every message;
//   - one-sided (S lines): equal;
//   - collectives (C lines): each holds at least the user's Allreduce and Alltoallv; the
//     collectives inside window creation and communicator creation differ;
//   - profile2mat's external and osc matrices follow from the above.
func TestProfileMatchesOpenMPI(t *testing.T) {
	want := wantPattern(profRanks)
	ompiDir, ompi := runOpenMPIProfile(t)
	t.Run("openmpi", func(t *testing.T) {
		matrixEqual(t, "Open MPI's E lines", &ompi.P2P, addMatrix(&want.ring, &want.alltoallv))
		matrixEqual(t, "Open MPI's S lines", &ompi.Put, &want.put)
		matrixEqual(t, "Open MPI's R lines", &ompi.Get, zeroMatrix(profRanks))
		matrixAtLeast(t, "Open MPI's C lines", &ompi.Coll, &want.coll)
	})
	gormaDir, gorma := runGormaProfile(t)
	t.Run("gorma", func(t *testing.T) {
		matrixEqual(t, "gorma's p2p", &gorma.P2P, &want.ring)
		matrixEqual(t, "gorma's put", &gorma.Put, &want.put)
		matrixEqual(t, "gorma's get", &gorma.Get, zeroMatrix(profRanks))
		matrixAtLeast(t, "gorma's coll", &gorma.Coll, &want.coll)
	})
	t.Run("compare", func(t *testing.T) {
		matrixEqual(t, "gorma's p2p against Open MPI's E lines less the Alltoallv's sends",
			&gorma.P2P, subMatrix(t, &ompi.P2P, &want.alltoallv))
		matrixEqual(t, "gorma's put against Open MPI's S lines", &gorma.Put, &ompi.Put)
		if atLeast(&ompi.Coll, &want.coll) && atLeast(&gorma.Coll, &want.coll) {
			t.Logf("collective bytes beyond the user's Allreduce and Alltoallv:\nOpen MPI %v\ngorma    %v",
				subMatrix(t, &ompi.Coll, &want.coll).Bytes, subMatrix(t, &gorma.Coll, &want.coll).Bytes)
		}
	})
	t.Run("histogram", func(t *testing.T) {
		bin := prof.Bin(1000)
		for r := range profRanks {
			right := (r + 1) % profRanks
			g := gorma.ranks[r].Hist
			for p := range profRanks {
				var h []uint64
				if g != nil {
					h = g[p]
				}
				var w []uint64
				if p == right {
					w = make([]uint64, prof.HistBins)
					w[bin] = 3
				}
				if !reflect.DeepEqual(h, w) {
					t.Errorf("gorma's histogram of rank %d to %d: %v, want %v", r, p, h, w)
				}
			}
			if h := ompi.ranks[r].Hist; h == nil || h[right] == nil || h[right][bin] < 3 {
				t.Errorf("Open MPI's histogram of rank %d to %d lacks the ring's 3 messages in bin %d", r, right, bin)
			}
		}
	})
	t.Run("profile2mat", func(t *testing.T) {
		tool, err := exec.LookPath("profile2mat")
		if err != nil {
			testbudget.SkipEngine(t, "profile2mat not found: install Debian's openmpi-bin")
		}
		om, gm := profile2mat(t, tool, ompiDir), profile2mat(t, tool, gormaDir)
		ext := addMatrix(&want.ring, &want.alltoallv)
		for name, text := range map[string]string{
			"size_external": prof.Profile2matText(ext.Bytes), "msg_external": prof.Profile2matText(ext.Msgs),
			"size_osc": prof.Profile2matText(want.put.Bytes), "msg_osc": prof.Profile2matText(want.put.Msgs),
		} {
			if om[name] != text {
				t.Errorf("Open MPI's %s:\n%s\nwant:\n%s", name, om[name], text)
			}
		}
		for name, text := range map[string]string{
			"size_external": prof.Profile2matText(want.ring.Bytes), "msg_external": prof.Profile2matText(want.ring.Msgs),
			"size_osc": om["size_osc"], "msg_osc": om["msg_osc"],
		} {
			if gm[name] != text {
				t.Errorf("gorma's %s:\n%s\nwant:\n%s", name, gm[name], text)
			}
		}
		if _, ok := gm["size_internal"]; ok {
			t.Errorf("profile2mat wrote an internal matrix of gorma's files, which have no I lines")
		}
	})
}

// profJob is one runtime's profile of the pattern: the ranks' documents and their merge.
type profJob struct {
	*prof.Job
	ranks []*prof.Rank
}

// runOpenMPIProfile builds and runs pattern.c under mpirun.openmpi with the monitoring
// on, and returns the folder of its .prof files and the profile they give (E as p2p).
func runOpenMPIProfile(t *testing.T) (string, profJob) {
	t.Helper()
	bin := patternProgs.build(t)["pattern"]
	mpirun, err := exec.LookPath("mpirun.openmpi")
	if err != nil {
		testbudget.SkipEngine(t, "mpirun.openmpi not found: install Debian's openmpi-bin to run its MPI programs")
	}
	dir := t.TempDir()
	budget := testbudget.Scale(60 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	out, err := exec.CommandContext(ctx, mpirun, "--allow-run-as-root", "--oversubscribe", "-n", strconv.Itoa(profRanks),
		"--mca", "pml_monitoring_enable", "2", "--mca", "pml_monitoring_enable_output", "3",
		"--mca", "pml_monitoring_filename", filepath.Join(dir, "prof"), bin).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("mpirun.openmpi did not end within %v:\n%s", budget, out)
	}
	if err != nil {
		t.Fatalf("mpirun.openmpi: %v\n%s", err, out)
	}
	ranks := make([]*prof.Rank, profRanks)
	for r := range ranks {
		ranks[r] = readProf(t, dir, r)
	}
	return dir, mergeProf(t, ranks)
}

// runGormaProfile runs tests/profprog under golaunch --profile and returns the folder
// of its files and the profile of its ranks' JSON documents. Each rank's .prof file
// must give the same rows as its JSON document, and rank 0's job.json their merge.
func runGormaProfile(t *testing.T) (string, profJob) {
	t.Helper()
	prog := profprogProg.path(t)
	dir := t.TempDir()
	r := runGL(t, "", "-n", strconv.Itoa(profRanks), "--timeout", testbudget.Scale(45*time.Second).String(), "--profile", dir, prog)
	if r.code != 0 {
		t.Fatalf("golaunch --profile: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for rank := range profRanks {
		mustContain(t, "profprog's output", r.stdout, fmt.Sprintf("[%d] profprog ok rank %d of %d\n", rank, rank, profRanks))
	}
	ranks := make([]*prof.Rank, profRanks)
	for rank := range ranks {
		f, err := os.Open(filepath.Join(dir, fmt.Sprintf("prof.%d.json", rank)))
		if err != nil {
			t.Fatal(err)
		}
		ranks[rank], err = prof.ReadRank(f)
		f.Close()
		if err != nil {
			t.Fatalf("prof.%d.json: %v", rank, err)
		}
		fromProf := readProf(t, dir, rank)
		for k := range prof.NumTraffic {
			if got, want := fromProf.Row(k), ranks[rank].Row(k); !reflect.DeepEqual(got, want) {
				t.Errorf("rank %d: %s in prof.%d.prof: %v, in prof.%d.json: %v", rank, k, rank, got, rank, want)
			}
		}
		if !reflect.DeepEqual(fromProf.Hist, ranks[rank].Hist) {
			t.Errorf("rank %d: histograms of prof.%d.prof and prof.%d.json differ", rank, rank, rank)
		}
	}
	job := mergeProf(t, ranks)
	f, err := os.Open(filepath.Join(dir, "job.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	written, err := prof.ReadJob(f)
	if err != nil {
		t.Fatalf("job.json: %v", err)
	}
	for k := range prof.NumTraffic {
		if !reflect.DeepEqual(written.Matrix(k), job.Matrix(k)) {
			t.Errorf("job.json's %s matrix is not the merge of the ranks' documents", k)
		}
	}
	return dir, job
}

// readProf parses rank's .prof file in dir: its E, C, S and R lines (I lines left out).
func readProf(t *testing.T, dir string, rank int) *prof.Rank {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("prof.%d.prof", rank)))
	if err != nil {
		t.Fatal(err)
	}
	f, err := prof.ParseOMPI(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("prof.%d.prof: %v", rank, err)
	}
	r, err := f.Rank(rank, profRanks)
	if err != nil {
		t.Fatalf("prof.%d.prof: %v", rank, err)
	}
	return r
}

func mergeProf(t *testing.T, ranks []*prof.Rank) profJob {
	t.Helper()
	job, err := prof.Merge(ranks)
	if err != nil {
		t.Fatal(err)
	}
	if len(job.Missing) != 0 {
		t.Fatalf("ranks %v missing from the profile", job.Missing)
	}
	return profJob{job, ranks}
}

// profile2mat runs Debian's profile2mat on the ranks' .prof files of dir, concatenated
// in rank order, and returns its matrices by name ("size_external"); the external and
// osc matrices that it did not write read "(absent)".
func profile2mat(t *testing.T, tool, dir string) map[string]string {
	t.Helper()
	var all []byte
	for r := range profRanks {
		raw, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("prof.%d.prof", r)))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, raw...)
	}
	out := t.TempDir()
	job := filepath.Join(out, "job.prof")
	if err := os.WriteFile(job, all, 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(tool, job).CombinedOutput(); err != nil {
		t.Fatalf("profile2mat: %v\n%s", err, b)
	}
	mats, err := filepath.Glob(filepath.Join(out, "job_*.mat"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, name := range []string{"size_external", "msg_external", "size_osc", "msg_osc"} {
		m[name] = "(absent)\n"
	}
	for _, p := range mats {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m[strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "job_"), ".mat")] = string(raw)
	}
	return m
}

func zeroMatrix(n int) *prof.Matrix {
	m := &prof.Matrix{Bytes: make([][]uint64, n), Msgs: make([][]uint64, n)}
	for i := range n {
		m.Bytes[i], m.Msgs[i] = make([]uint64, n), make([]uint64, n)
	}
	return m
}

func addMatrix(a, b *prof.Matrix) *prof.Matrix {
	m := zeroMatrix(len(a.Bytes))
	for i := range m.Bytes {
		for j := range m.Bytes {
			m.Bytes[i][j], m.Msgs[i][j] = a.Bytes[i][j]+b.Bytes[i][j], a.Msgs[i][j]+b.Msgs[i][j]
		}
	}
	return m
}

// subMatrix returns a - b, failing where a cell of a is below b's.
func subMatrix(t *testing.T, a, b *prof.Matrix) *prof.Matrix {
	t.Helper()
	if !atLeast(a, b) {
		t.Fatalf("cannot take bytes %v msgs %v from bytes %v msgs %v", b.Bytes, b.Msgs, a.Bytes, a.Msgs)
	}
	m := zeroMatrix(len(a.Bytes))
	for i := range m.Bytes {
		for j := range m.Bytes {
			m.Bytes[i][j], m.Msgs[i][j] = a.Bytes[i][j]-b.Bytes[i][j], a.Msgs[i][j]-b.Msgs[i][j]
		}
	}
	return m
}

func matrixEqual(t *testing.T, what string, got, want *prof.Matrix) {
	t.Helper()
	if !reflect.DeepEqual(got.Bytes, want.Bytes) || !reflect.DeepEqual(got.Msgs, want.Msgs) {
		t.Errorf("%s: bytes %v msgs %v\nwant bytes %v msgs %v", what, got.Bytes, got.Msgs, want.Bytes, want.Msgs)
	}
}

// atLeast reports whether every cell of got is at least want's.
func atLeast(got, want *prof.Matrix) bool {
	for i := range want.Bytes {
		for j := range want.Bytes {
			if got.Bytes[i][j] < want.Bytes[i][j] || got.Msgs[i][j] < want.Msgs[i][j] {
				return false
			}
		}
	}
	return true
}

// matrixAtLeast fails unless every cell of got is at least want's, and says which.
func matrixAtLeast(t *testing.T, what string, got, want *prof.Matrix) {
	t.Helper()
	if !atLeast(got, want) {
		t.Errorf("%s: bytes %v msgs %v\nwant at least bytes %v msgs %v", what, got.Bytes, got.Msgs, want.Bytes, want.Msgs)
	}
}
