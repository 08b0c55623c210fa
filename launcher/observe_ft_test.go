package launcher

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/tests/sysuser"
)

// TestObserveFT runs obsprog's ft mode under --ft, --profile and --trace, and SIGKILLs one
// rank of four once every rank has run the pattern: rank 2, and rank 0, which would
// gather the job's files. The survivors' Barriers fail; they revoke the World, agree on
// it, shrink it and finalize. job.json and summary.txt must hold the
// three survivors' data and name the dead rank as failed. The timeline holds the
// survivors' data and the dead rank's, from the flight recorder its agent kept, names it
// dead and how, and shows the survivors' Revoke, Agree and Shrink.
func TestObserveFT(t *testing.T) {
	bin := obsprogProg.path(t)
	const n = 4
	for _, victim := range []int{2, 0} {
		t.Run(fmt.Sprintf("kill%d", victim), func(t *testing.T) {
			dir := t.TempDir()
			pdir, tpath := filepath.Join(dir, "prof"), filepath.Join(dir, "trace.json")
			gl := startGL(t, "--ft", "--profile", pdir, "--trace", tpath, "-n", fmt.Sprint(n), bin, "ft")
			pids := gl.readyPids(t, n)
			if err := syscall.Kill(pids[victim], syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			code := gl.wait(t, 60*time.Second)
			stdout, stderr := gl.rest(), gl.stderr.String()
			want := []string{
				fmt.Sprintf("golaunch: rank %d (host %s, pid %d) killed by signal 9 (SIGKILL); job continued (--ft)", victim, hostName(), pids[victim]),
				"golaunch: the timeline of 1 failed ranks up to their end is added to the survivors' in " + tpath,
				fmt.Sprintf("golaunch: --ft: 1 of %d ranks failed: %d", n, victim),
			}
			if sum := summaryLines(stderr); code != 0 || !slices.Equal(sum, want) {
				t.Fatalf("exit %d, summary %q; want 0 and %q\nstdout:\n%s\nstderr:\n%s", code, sum, want, stdout, stderr)
			}
			var survivors []int
			for r := range n {
				if r != victim {
					survivors = append(survivors, r)
					mustContain(t, "stdout", stdout, fmt.Sprintf("obsprog: rank %d finalized\n", r))
				}
			}
			checkFTProfile(t, pdir, n, victim, survivors)
			checkFTTimeline(t, tpath, n, victim)
		})
	}
}

// checkFTProfile checks the job's profile of obsprog's pattern with rank victim dead:
// every survivor's row, the victim named failed in job.json and summary.txt.
func checkFTProfile(t *testing.T, dir string, n, victim int, survivors []int) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "job.json"))
	if err != nil {
		t.Fatal(err)
	}
	job, err := prof.ReadJob(f)
	f.Close()
	if err != nil {
		t.Fatalf("job.json: %v", err)
	}
	if !slices.Equal(job.Missing, []int{victim}) || !slices.Equal(job.Failed, []int{victim}) {
		t.Errorf("job.json: missing %v, failed %v; want [%d] for both", job.Missing, job.Failed, victim)
	}
	m := job.Matrix(prof.P2P)
	for _, me := range survivors {
		right := (me + 1) % n
		if got, want := m.Bytes[me][right], uint64(3*100+1<<20+8+4+4); got != want {
			t.Errorf("job.json: p2p bytes %d -> %d = %d, want %d (the survivor's row)", me, right, got, want)
		}
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("prof.%d.prof", me))); err != nil {
			t.Error(err)
		}
	}
	for peer := range n {
		if m.Bytes[victim][peer] != 0 {
			t.Errorf("job.json: the dead rank %d's row has %d bytes to %d", victim, m.Bytes[victim][peer], peer)
		}
	}
	s, err := os.ReadFile(filepath.Join(dir, "summary.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("ranks that failed before Finalize (no profile): [%d]\n", victim); !strings.Contains(string(s), want) {
		t.Errorf("summary.txt lacks %q:\n%s", want, s)
	}
	if strings.Contains(string(s), "ranks without a profile") {
		t.Errorf("summary.txt names survivors without a profile:\n%s", s)
	}
}

// checkFTTimeline checks the merged timeline with rank victim dead: otherData names the
// job's size, no rank without a timeline and the dead rank with how it died; every rank
// has its process and its region, the victim's named dead, and every flow joins its
// ends, those to and from the victim among them.
func checkFTTimeline(t *testing.T, path string, n, victim int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		OtherData struct {
			Ranks  int               `json:"ranks"`
			Failed []int             `json:"failed_ranks"`
			Died   map[string]string `json:"died_ranks"`
		} `json:"otherData"`
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	how := "killed by signal 9 (SIGKILL)"
	if o := meta.OtherData; o.Ranks != n || len(o.Failed) != 0 || len(o.Died) != 1 || o.Died[fmt.Sprint(victim)] != how {
		t.Errorf("the timeline's otherData %+v, want %d ranks, none failed, rank %d died %s", o, n, victim, how)
	}
	tf := readTrace(t, path)
	names := map[int]string{}
	regions := map[int]bool{}
	for _, e := range tf.TraceEvents {
		switch {
		case e.Ph == "M" && e.Name == "process_name":
			names[e.Pid-1], _ = e.Args["name"].(string)
		case e.Ph == "X" && e.Cat == "region" && e.Name == "reduce phase":
			regions[e.Pid-1] = true
		}
	}
	if want := fmt.Sprintf("rank %d (died before Finalize: %s)", victim, how); len(names) != n || names[victim] != want {
		t.Errorf("the timeline's processes %v, want %d with rank %d's %q", names, n, victim, want)
	}
	for r := range n {
		if !regions[r] {
			t.Errorf("rank %d has no region \"reduce phase\" in the timeline", r)
		}
	}
	flows := checkFlows(t, tf)
	for me := range n {
		if right := (me + 1) % n; flows[[3]int{me, right, 4}] != 1 {
			t.Errorf("rank %d to %d: no flow of the 1 MiB message: %v", me, right, flows)
		}
	}
	checkULFM(t, tf, n, victim)
	checkWaitNames(t, tf)
	checkNoDumps(t, path)
}

// checkULFM checks that each rank but victim has in the timeline one event of each of
// the ULFM calls obsprog's ft mode makes: Revoke, Shrink, Agree.
func checkULFM(t *testing.T, tf *traceFile, n, victim int) {
	t.Helper()
	calls := map[int]map[string]int{}
	for _, e := range tf.TraceEvents {
		if e.Ph == "X" && e.Cat == "call" {
			if calls[e.Pid-1] == nil {
				calls[e.Pid-1] = map[string]int{}
			}
			calls[e.Pid-1][e.Name]++
		}
	}
	for r := range n {
		for _, c := range []string{"Revoke", "Shrink", "Agree"} {
			if got := calls[r][c]; r != victim && got != 1 {
				t.Errorf("rank %d: %d %s events in the timeline, want 1 (its calls: %v)", r, got, c, calls[r])
			}
		}
	}
}

// checkWaitNames checks that the timeline tells the runtime's own receives from the
// program's: per rank, no more waits named Irecv than the program's Irecv calls, and
// the receives of the runtime's own (a window's, a collective's) waited on as
// "Irecv (internal)". obsprog's window calls wait on such receives.
func checkWaitNames(t *testing.T, tf *traceFile) {
	t.Helper()
	type count struct{ user, userWaits, inner, innerWaits int }
	by := map[int]*count{}
	for _, e := range tf.TraceEvents {
		if e.Ph != "X" {
			continue
		}
		c := by[e.Pid-1]
		if c == nil {
			c = &count{}
			by[e.Pid-1] = c
		}
		switch {
		case e.Cat == "recv" && e.Name == "Irecv":
			c.user++
		case e.Cat == "wait" && e.Name == "Irecv":
			c.userWaits++
		case e.Cat == "recv" && e.Name == "Irecv (internal)":
			c.inner++
		case e.Cat == "wait" && e.Name == "Irecv (internal)":
			c.innerWaits++
		}
	}
	inner := 0
	for r, c := range by {
		if c.userWaits > c.user || c.innerWaits > c.inner {
			t.Errorf("rank %d: %+v: more waits on Irecvs than Irecvs of their kind", r, *c)
		}
		inner += c.innerWaits
	}
	if inner == 0 {
		t.Errorf("no wait named \"Irecv (internal)\" in the timeline: %v", by)
	}
}

// TestObserveRefused: --profile and --trace paths that no rank could create make golaunch
// exit 2 before any rank starts, with a message that names the path, what is wrong and
// how to fix it. The program would create a file if it ran.
func TestObserveRefused(t *testing.T) {
	binaries(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(dir, "ran")
	for _, c := range []struct {
		flag, path string
		want       []string
	}{
		{"--profile", "/proc/x", []string{"/proc takes no new folder", "name a folder on a file system the ranks may write"}},
		{"--profile", filepath.Join(file, "sub"), []string{file + " is a file, not a folder", "name a path that is not under a file"}},
		{"--trace", filepath.Join(dir, "none", "t.json"), []string{"the folder " + filepath.Join(dir, "none") + " does not exist",
			"create it (mkdir -p " + filepath.Join(dir, "none") + ")"}},
		{"--trace", "/proc/t.json", []string{"no file can be created in /proc"}},
	} {
		t.Run(c.flag+c.path, func(t *testing.T) { observeRefused(t, c.flag, c.path, ran, c.want...) })
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the checks left files behind: %v", ents)
	}
}

// observeRefused runs golaunch with flag path and a program that would create the file
// ran, and checks that it exits 2 before any rank starts, with one summary line that
// names the flag, the path and the host and holds each of want.
func observeRefused(t *testing.T, flag, path, ran string, want ...string) {
	t.Helper()
	r := runGL(t, "", flag, path, "-n", "2", "touch", ran)
	prefix := fmt.Sprintf("golaunch: %s %s: on host %s, ", flag, path, hostName())
	sum := summaryLines(r.stderr)
	if r.code != ExitUsage || len(sum) != 1 || !strings.HasPrefix(sum[0], prefix) {
		t.Fatalf("exit %d, summary %q; want %d and one line starting %q\nstdout:\n%s\nstderr:\n%s",
			r.code, sum, ExitUsage, prefix, r.stdout, r.stderr)
	}
	for _, w := range want {
		mustContain(t, "the refusal", sum[0], w)
	}
	if _, err := os.Stat(ran); err == nil || r.stdout != "" {
		t.Errorf("a rank ran: %s exists (%v), stdout %q", ran, err, r.stdout)
	}
}

// TestObserveLost: the folder of --profile and --trace is replaced by a file while the
// ranks run. Then the mark goes, and obsprog's untilgone mode lets the ranks finalize.
// The mark lies outside the folder: a rank that finalized before the file took the
// folder's place would create the folder again. Nothing can be written at Finalize; the
// job exits ExitFailure with one line that says what was lost.
func TestObserveLost(t *testing.T) {
	bin := obsprogProg.path(t)
	top := t.TempDir()
	dir := filepath.Join(top, "out")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(top, "mark")
	if err := os.WriteFile(mark, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pdir, tpath := filepath.Join(dir, "prof"), filepath.Join(dir, "trace.json")
	gl := startGL(t, "--profile", pdir, "--trace", tpath, "-n", "3", bin, "untilgone", mark)
	gl.readyPids(t, 3)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(mark); err != nil {
		t.Fatal(err)
	}
	code := gl.wait(t, 60*time.Second)
	stdout, stderr := gl.rest(), gl.stderr.String()
	sum := summaryLines(stderr)
	prefix := "golaunch: observation lost: rank 0: its profile (prof.0.prof, prof.0.json in " + pdir + "): "
	if code != ExitFailure || len(sum) != 1 || !strings.HasPrefix(sum[0], prefix) {
		t.Fatalf("exit %d, summary %q; want %d and one line starting %q\nstdout:\n%s\nstderr:\n%s",
			code, sum, ExitFailure, prefix, stdout, stderr)
	}
	for _, w := range []string{"the job's profile (job.json, summary.txt, matrix.svg in " + pdir + ")",
		"the job's timeline " + tpath + ": ", "ranks 1, 2 lost theirs too"} {
		mustContain(t, "the line", sum[0], w)
	}
	mustContain(t, "stdout", stdout, "obsprog: ok")
}

// TestObserveLostLine: the submitter's line gives the lowest rank's words and lists the
// others in order.
func TestObserveLostLine(t *testing.T) {
	for _, c := range []struct {
		lost []lostRank
		want string
	}{
		{nil, ""},
		{[]lostRank{{3, "the job's timeline /t: full"}}, "golaunch: observation lost: rank 3: the job's timeline /t: full"},
		{[]lostRank{{2, "b"}, {0, "a"}, {1, "c"}}, "golaunch: observation lost: rank 0: a; ranks 1, 2 lost theirs too (their stderr says what)"},
	} {
		if got := lostLine(c.lost); got != c.want {
			t.Errorf("lostLine(%v) = %q, want %q", c.lost, got, c.want)
		}
	}
}

// linkUser is the second user whose links TestObserveForeignLinks plants.
const linkUser = "gorma-linker"

// TestObserveForeignLinks: run as root, golaunch refuses observation paths through which
// another user could redirect its writes, before any rank starts, and the files the
// links point to keep their content. In a sticky shared folder (mode 1777, as /tmp) the
// user made the --trace name a link to a root-owned 0600 file; in a folder of theirs, a
// link named summary.txt sits where --profile writes the job's summary. A folder of
// theirs is refused even when empty: they could plant the link after the check.
func TestObserveForeignLinks(t *testing.T) {
	uid, gid := sysuser.IDs(t, linkUser, "plants another user's links")
	binaries(t)
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("root's"), 0o600); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(dir, "shared")
	theirs := filepath.Join(dir, "theirs")
	empty := filepath.Join(dir, "theirs-empty")
	for _, d := range []string{shared, theirs, empty} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(shared, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{theirs, empty} {
		if err := os.Chown(d, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	plant := func(link string) {
		if err := os.Symlink(victim, link); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(link, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	plant(filepath.Join(shared, "t.json"))
	plant(filepath.Join(theirs, "summary.txt"))
	who := fmt.Sprintf("user %s (uid %d)", linkUser, uid)
	ran := filepath.Join(dir, "ran")
	for _, c := range []struct {
		flag, path, want string
	}{
		{"--trace", filepath.Join(shared, "t.json"), filepath.Join(shared, "t.json") + " is a link that " + who + " made"},
		{"--profile", theirs, "the folder " + theirs + " belongs to " + who},
		{"--profile", empty, "the folder " + empty + " belongs to " + who},
		{"--trace", filepath.Join(theirs, "t.json"), "the folder " + theirs + " belongs to " + who},
	} {
		t.Run(c.flag+c.path, func(t *testing.T) { observeRefused(t, c.flag, c.path, ran, c.want) })
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "root's" {
		t.Errorf("the links' target holds %q (%v), want %q", b, err, "root's")
	}
}
