package prof

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

func readOMPI(t *testing.T, path string) *File {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	f, err := ParseOMPI(fh)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f
}

// TestParseOpenMPI reads the files Open MPI 4.1.4 wrote for testdata/ompi/pattern.c.
func TestParseOpenMPI(t *testing.T) {
	f := readOMPI(t, "testdata/ompi/enable2/prof.0.prof")
	kinds := map[byte]int{}
	for _, l := range f.Lines {
		kinds[l.Kind]++
	}
	if want := map[byte]int{'E': 3, 'I': 3, 'S': 1, 'C': 3}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("line kinds %v, want %v", kinds, want)
	}
	// The ring's three 1000-byte sends and the Alltoallv's 16 bytes to rank 1.
	e := f.Lines[0]
	if e.Kind != 'E' || e.From != 0 || e.To != 1 || e.Bytes != 3016 || e.Msgs != 4 || len(e.Hist) != HistBins || e.Hist[10] != 3 {
		t.Errorf("first line %+v", e)
	}
	// The Put of 512 bytes to the right neighbour.
	if s := f.Lines[6]; !reflect.DeepEqual(s, Line{Kind: 'S', From: 0, To: 1, Bytes: 512, Msgs: 1}) {
		t.Errorf("S line %+v", s)
	}
	if len(f.Comms) != 5 {
		t.Fatalf("%d communicators, want 5", len(f.Comms))
	}
	w := f.Comms[4]
	if w.Name != "MPI_COMM_WORLD" || !reflect.DeepEqual(w.Procs, []int{0, 1, 2, 3}) || w.A2A != (Flow{Rank: 0, Bytes: 6252, Msgs: 5}) {
		t.Errorf("world %+v", w)
	}
	if c := f.Comms[0]; c.Name != "MPI COMMUNICATOR 5 SPLIT FROM 3" || !reflect.DeepEqual(c.Procs, []int{0}) {
		t.Errorf("first communicator %+v", c)
	}

	// Under enable 1 there is no I line: E lines hold every pml message.
	for r := range 4 {
		for _, l := range readOMPI(t, fmt.Sprintf("testdata/ompi/enable1/prof.%d.prof", r)).Lines {
			if l.Kind == 'I' {
				t.Errorf("enable1 rank %d: I line %+v", r, l)
			}
		}
	}

	// File.Rank keeps E (the point-to-point matrix), C, S and R.
	for r := range 4 {
		rk, err := readOMPI(t, fmt.Sprintf("testdata/ompi/enable2/prof.%d.prof", r)).Rank(r, 4)
		if err != nil {
			t.Fatal(err)
		}
		if err := rk.Validate(); err != nil {
			t.Fatal(err)
		}
		right := (r + 1) % 4
		if rk.Put.Bytes[right] != 512 || rk.Put.Msgs[right] != 1 {
			t.Errorf("rank %d: put row %v", r, rk.Put)
		}
		for d := range 4 {
			want := uint64(8 * (r + 1) * (d + 1)) // the Alltoallv
			if d == right {
				want += 3000 // the ring
			}
			if d == r {
				want = 0
			}
			if rk.P2P.Bytes[d] != want {
				t.Errorf("rank %d: p2p bytes to %d = %d, want %d", r, d, rk.P2P.Bytes[d], want)
			}
		}
	}
}

// TestOMPIRoundTrip: Open MPI's files written back by Append are the same bytes.
func TestOMPIRoundTrip(t *testing.T) {
	for _, p := range []string{"testdata/ompi/enable1/prof.0.prof", "testdata/ompi/enable2/prof.3.prof"} {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ParseOMPI(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if got := f.Append(nil); !bytes.Equal(got, raw) {
			t.Errorf("%s written back:\n%s\nwant:\n%s", p, got, raw)
		}
	}
}

func TestParseOMPIErrors(t *testing.T) {
	for _, s := range []string{
		"X\t0\t1\t1 bytes\t1 msgs sent\n",
		"E\t0\t1\t1 bytes\n",
		"E\t0\t1\t1 byte\t1 msgs sent\n",
		"E\t-1\t1\t1 bytes\t1 msgs sent\n",
		"E\t0\t01\t1 bytes\t1 msgs sent\n",
		"E\t0\t1\t1 bytes\t1 msgs sent\t1,2,3\n",
		"E\t0\t65536\t1 bytes\t1 msgs sent\n",
		"O2A\t0\t0 bytes\t0 msgs sent\n",
		"D\tw\tprocs: 0\nA2A\t0\t0 bytes\t0 msgs sent\nA2A\t0\t0 bytes\t0 msgs sent\n",
		"D\t\tprocs: 0\n",
		"D\tw\tprocs: 0,,1\n",
	} {
		if _, err := ParseOMPI(strings.NewReader(s)); err == nil {
			t.Errorf("ParseOMPI(%q) succeeded", s)
		}
	}
}

// pattern returns the counters of a 5-rank job: a ring, an Alltoallv-like
// exchange with odd byte counts, Puts, Gets and collective data.
func pattern() []*Counters {
	const n = 5
	cs := make([]*Counters, n)
	for r := range n {
		cs[r] = New(r, n)
	}
	for r, c := range cs {
		right := (r + 1) % n
		for range 3 {
			c.Send(right, 1000)
		}
		for d := range n {
			if d != r {
				c.Send(d, 7*r+d+r%2) // odd sums for some pairs: profile2mat halves them
				c.Coll(d, 2048)
			}
		}
		c.PutTo(right, 512)
		if r%2 == 0 {
			c.GetFrom((r+n-1)%n, 129)
		}
	}
	return cs
}

// TestProfile2mat: Debian's profile2mat (a Perl script of openmpi-bin) reads the
// files WriteOMPI writes and gives the matrices of the counters. It sums each
// line into both [from][to] and [to][from] and halves, printing "%.0f".
func TestProfile2mat(t *testing.T) {
	tool, err := exec.LookPath("profile2mat")
	if err != nil {
		testbudget.SkipEngine(t, "profile2mat not found: install Debian's openmpi-bin")
	}
	cs := pattern()
	dir := t.TempDir()
	var all bytes.Buffer
	ranks := make([]*Rank, len(cs))
	for r, c := range cs {
		var b bytes.Buffer
		if err := c.WriteOMPI(&b); err != nil {
			t.Fatal(err)
		}
		all.Write(b.Bytes())
		ranks[r] = c.Snapshot()
	}
	job, err := Merge(ranks)
	if err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(dir, "job.prof")
	if err := os.WriteFile(prof, all.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(tool, prof).CombinedOutput()
	if err != nil {
		t.Fatalf("profile2mat: %v\n%s", err, out)
	}
	sum := func(ts ...Traffic) (b, m [][]uint64) {
		b, m = square(job.Size), square(job.Size)
		for _, t := range ts {
			for i := range job.Size {
				for j := range job.Size {
					b[i][j] += job.Matrix(t).Bytes[i][j]
					m[i][j] += job.Matrix(t).Msgs[i][j]
				}
			}
		}
		return b, m
	}
	for _, c := range []struct {
		suffix string
		kinds  []Traffic
	}{{"external", []Traffic{P2P}}, {"osc", []Traffic{Put, Get}}, {"coll", []Traffic{Coll}}, {"all", []Traffic{P2P, Coll, Put, Get}}} {
		b, m := sum(c.kinds...)
		for _, f := range []struct {
			name string
			m    [][]uint64
		}{{"size", b}, {"msg", m}} {
			path := filepath.Join(dir, "job_"+f.name+"_"+c.suffix+".mat")
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (profile2mat said: %s)", err, out)
			}
			if want := Profile2matText(f.m); string(got) != want {
				t.Errorf("%s:\n%s\nwant:\n%s", path, got, want)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "job_size_internal.mat")); err == nil {
		t.Errorf("profile2mat wrote an internal matrix of files without I lines")
	}
}

// TestProfile2matOpenMPI: profile2mat's external matrix of Open MPI's own files
// is the one ParseOMPI and File.Rank give.
func TestProfile2matOpenMPI(t *testing.T) {
	tool, err := exec.LookPath("profile2mat")
	if err != nil {
		testbudget.SkipEngine(t, "profile2mat not found: install Debian's openmpi-bin")
	}
	dir := t.TempDir()
	var all []byte
	ranks := make([]*Rank, 4)
	for r := range 4 {
		p := fmt.Sprintf("testdata/ompi/enable2/prof.%d.prof", r)
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, raw...)
		if ranks[r], err = readOMPI(t, p).Rank(r, 4); err != nil {
			t.Fatal(err)
		}
	}
	job, err := Merge(ranks)
	if err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(dir, "ompi.prof")
	if err := os.WriteFile(prof, all, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(tool, prof).CombinedOutput(); err != nil {
		t.Fatalf("profile2mat: %v\n%s", err, out)
	}
	for name, m := range map[string][][]uint64{"size_external": job.P2P.Bytes, "msg_external": job.P2P.Msgs, "size_osc": job.Put.Bytes, "size_coll": job.Coll.Bytes} {
		got, err := os.ReadFile(filepath.Join(dir, "ompi_"+name+".mat"))
		if err != nil {
			t.Fatal(err)
		}
		if want := Profile2matText(m); string(got) != want {
			t.Errorf("%s:\n%s\nwant:\n%s", name, got, want)
		}
	}
}
