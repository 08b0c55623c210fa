package launcher

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/gorma-hpc/gorma/internal/safefile"
)

// Observation's outputs (--profile DIR, --trace FILE). The ranks write them at Finalize:
// every rank its own profile into DIR, the gatherer the job's files into DIR and FILE,
// and under a hang report every blocked rank its dump beside FILE; after a crash each
// agent copies its ranks' ring files beside FILE (timeline.go). So each agent checks, before
// its ranks start (prepare), that its host can create the folder DIR and files in FILE's
// folder, and refuses the job as the user's mistake (exit 2) when it cannot. What goes
// wrong later (a full disk, a folder removed during the run) a rank tells its agent
// under keyObserveLost, the agent passes it on in the rank's exit report
// (exitMsg.ObsLost), and the submitter ends with one line saying what was lost and a
// non-zero exit (lostLine).

// keyObserveLost is the PMI key under which a rank puts, with Finalize's fence, what of
// its observation it could not write (runtime/observe_out.go).
const keyObserveLost = "gorma-observe-lost"

// noteObsLost records what rank could not write, as its put under keyObserveLost holds
// it (hex, as every put value travels), for its exit report.
func (j *agentJob) noteObsLost(rank int, put []byte) {
	what, err := hex.DecodeString(string(put))
	if err != nil {
		what = put
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.obsLost == nil {
		j.obsLost = make(map[int]string)
	}
	j.obsLost[rank] = truncate(string(what), maxLostText)
}

// maxLostText bounds what a rank's exit report carries of its lost observation.
const maxLostText = 1 << 10

// checkObserve reports, as a *UsageError, why the ranks of this host could not create
// the outputs their environment asks for (GORMA_PROFILE, GORMA_TRACE), or nil. It leaves
// nothing behind.
func (j *agentJob) checkObserve() error {
	dir := j.spec.Dir
	if st, err := os.Stat(dir); dir == "" || err != nil || !st.IsDir() {
		dir, _ = os.Getwd() // the ranks start in the agent's own directory (startRanks)
	}
	base := os.Environ()
	checked := map[string]bool{}
	for _, rank := range j.local {
		_, _, extra, err := j.command(rank)
		if err != nil {
			return err
		}
		for _, o := range []struct {
			flag, name string
			check      func(string) error
		}{{"--profile", "GORMA_PROFILE", checkProfileDir}, {"--trace", "GORMA_TRACE", checkTraceFile}} {
			v := lastEnv(extra, o.name)
			if v == "" {
				v = lastEnv(base, o.name)
			}
			if v == "" || checked[o.name+"="+v] {
				continue
			}
			checked[o.name+"="+v] = true
			path := v
			if !filepath.IsAbs(path) {
				path = filepath.Join(dir, path)
			}
			if err := o.check(filepath.Clean(path)); err != nil {
				return &UsageError{Msg: fmt.Sprintf("%s %s: on host %s, %v", o.flag, v, j.host(), err)}
			}
		}
	}
	return nil
}

// lastEnv returns the value of the last NAME=VALUE entry of env for name, or "".
func lastEnv(env []string, name string) string {
	for _, kv := range slices.Backward(env) {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// checkProfileDir reports why this host cannot create the folder dir and files in it,
// or nil.
func checkProfileDir(dir string) error {
	if err := safefile.Check(dir); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	switch {
	case err == nil && !fi.IsDir():
		return errors.New("it is a file, not a folder; name a folder")
	case err == nil:
		return checkFilesIn(dir)
	}
	top, err := existingAncestor(dir)
	if err != nil {
		return err
	}
	d, err := os.MkdirTemp(top, ".golaunch-check-")
	if err != nil {
		return fmt.Errorf("%s takes no new folder (%s); name a folder on a file system the ranks may write", top, opErr(err))
	}
	os.Remove(d)
	return nil
}

// checkTraceFile reports why this host cannot create the file path and files beside it
// (a hang report's dumps, the ring files' copies), or nil. The folder must exist. Like
// checkProfileDir, it refuses a path that another user could redirect or replace
// (safefile.Check): every observation file is written under a new name and renamed over
// its own (safefile.Create), so no link at the name is followed.
func checkTraceFile(path string) error {
	if err := safefile.Check(path); err != nil {
		return err
	}
	parent := filepath.Dir(path)
	fi, err := os.Stat(parent)
	switch {
	case err == nil && !fi.IsDir():
		return fmt.Errorf("%s is a file, not a folder; name a file in a folder", parent)
	case err != nil:
		if _, err := existingAncestor(parent); err != nil {
			return err
		}
		return fmt.Errorf("the folder %s does not exist; create it (mkdir -p %s) or name a file in an existing folder", parent, parent)
	}
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return errors.New("it is a folder, not a file; name a file")
		}
		if lfi, err := os.Lstat(path); err == nil && lfi.Mode().IsRegular() {
			f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NOFOLLOW, 0)
			if err != nil {
				return fmt.Errorf("the file cannot be overwritten (%s); name another file", opErr(err))
			}
			f.Close()
		}
	}
	return checkFilesIn(parent)
}

// checkFilesIn reports why no file can be created in the folder dir, or nil.
func checkFilesIn(dir string) error {
	f, err := os.CreateTemp(dir, ".golaunch-check-")
	if err != nil {
		return fmt.Errorf("no file can be created in %s (%s); name a folder on a file system the ranks may write", dir, opErr(err))
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// existingAncestor returns the nearest folder above path that exists. An ancestor that
// is a file is an error that names it.
func existingAncestor(path string) (string, error) {
	for p := filepath.Dir(path); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return p, nil
		case err == nil:
			return p, fmt.Errorf("%s is a file, not a folder; name a path that is not under a file", p)
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return p, fmt.Errorf("%s cannot be read (%s)", p, opErr(err))
		case p == filepath.Dir(p):
			return p, fmt.Errorf("%s does not exist", p)
		}
	}
}

// opErr is a file operation's error without its path, which the message names already:
// "mkdir: no such file or directory".
func opErr(err error) string {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

// lostRank is what one rank could not write of its observation, from its exit report.
type lostRank struct {
	rank int
	what string
}

// lostLine is the submitter's one line of what the ranks could not write, or "": the
// first rank's own words, then the other ranks that lost something.
func lostLine(lost []lostRank) string {
	if len(lost) == 0 {
		return ""
	}
	lost = slices.Clone(lost)
	slices.SortFunc(lost, func(a, b lostRank) int { return a.rank - b.rank })
	line := fmt.Sprintf("golaunch: observation lost: rank %d: %s", lost[0].rank, lost[0].what)
	if len(lost) > 1 {
		var others []string
		for i, l := range lost[1:] {
			if i == maxListed {
				others = append(others, "...")
				break
			}
			others = append(others, strconv.Itoa(l.rank))
		}
		line += fmt.Sprintf("; ranks %s lost theirs too (their stderr says what)", strings.Join(others, ", "))
	}
	return line
}
