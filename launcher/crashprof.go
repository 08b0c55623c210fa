package launcher

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/internal/safefile"
)

// The profile of a job that failed (--profile DIR). The ranks write their profiles at
// Finalize, and the gatherer the job's files once every rank has handed in or failed
// (runtime/observe_out.go). A rank that dies before Finalize, without --ft, aborts the
// job: the abort ends the other ranks, and the gatherer writes nothing. So when the job
// failed with ranks that did not finalize, the submitter writes the job's files itself
// from the profiles of the ranks that finalized (prof.<rank>.json in DIR, as read on its
// host), with the others missing and the dead ones failed, and says so in one line
// (crashProfile). With no such profile it writes nothing and its line says why. A job's
// profile that the gatherer wrote after the ranks' own (a rank died after it handed its
// profile in) stands (gatheredProfile).

// profileDir returns the folder of the job's profile that env (the job's -x variables)
// or golaunch's own environment asks for, absolute against dir, or "".
func profileDir(env []string, dir string) string {
	v := lastEnv(env, "GORMA_PROFILE")
	if v == "" {
		v = os.Getenv("GORMA_PROFILE")
	}
	if v == "" || filepath.IsAbs(v) {
		return v
	}
	if dir == "" {
		dir, _ = os.Getwd()
	}
	return filepath.Join(dir, v)
}

// crashProfile writes the job's profile into dir from the profiles of the ranks that
// finalized, when some rank did not, and returns golaunch's line about it; "" when every
// rank finalized. ranks is the job's state by rank; a rank's died says how it died.
func crashProfile(dir string, ranks []rankState) string {
	var docs []*prof.Rank
	var dead, ended []int
	for r, st := range ranks {
		switch {
		case st.died != "":
			dead = append(dead, r)
		case !st.finalized:
			ended = append(ended, r)
		}
		if doc := readRankProfile(dir, r, len(ranks)); st.finalized && doc != nil {
			docs = append(docs, doc)
		}
	}
	if len(dead)+len(ended) == 0 {
		return ""
	}
	why := deadText(dead, ranks, ended)
	if n, ok := gatheredProfile(dir, len(ranks), len(docs)); ok {
		return fmt.Sprintf("golaunch: --profile %s: the job's profile, which the ranks wrote, holds %d ranks: %s", dir, n, why)
	}
	if len(docs) == 0 {
		return fmt.Sprintf("golaunch: --profile %s: no profile written: %s (each rank writes its profile at Finalize; under --ft the survivors write theirs)", dir, why)
	}
	if err := writeJobProfile(dir, docs, dead); err != nil {
		return fmt.Sprintf("golaunch: --profile %s: %s; the job's profile of the %d ranks that finalized: %v", dir, why, len(docs), err)
	}
	return fmt.Sprintf("golaunch: --profile %s: the job's profile holds the %d ranks that finalized: %s", dir, len(docs), why)
}

// deadText says which ranks died and how, and which the job's end took before Finalize.
func deadText(dead []int, ranks []rankState, ended []int) string {
	var parts []string
	for i, r := range dead {
		if i == maxListed {
			parts = append(parts, fmt.Sprintf("%d more ranks died", len(dead)-i))
			break
		}
		parts = append(parts, "rank "+strconv.Itoa(r)+" died before Finalize ("+ranks[r].died+")")
	}
	if len(ended) > 0 {
		parts = append(parts, "the job's end took ranks "+listRanks(ended)+" before Finalize")
	}
	return strings.Join(parts, ", and ")
}

// gatheredProfile reports whether dir holds a job's profile of size ranks that the
// gatherer wrote after the ranks' own profiles (a rank died after it handed its profile
// in), with at least have ranks, and how many ranks it holds. That profile stands.
func gatheredProfile(dir string, size, have int) (int, bool) {
	path := filepath.Join(dir, "job.json")
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	for r := range size {
		if ri, err := os.Stat(filepath.Join(dir, "prof."+strconv.Itoa(r)+".json")); err == nil && ri.ModTime().After(fi.ModTime()) {
			return 0, false // an earlier job's
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	job, err := prof.ReadJob(f)
	if err != nil || job.Size != size || size-len(job.Missing) < max(have, 1) {
		return 0, false
	}
	return size - len(job.Missing), true
}

// readRankProfile returns rank's profile document in dir, of a job of size ranks, or nil.
func readRankProfile(dir string, rank, size int) *prof.Rank {
	f, err := os.Open(filepath.Join(dir, "prof."+strconv.Itoa(rank)+".json"))
	if err != nil {
		return nil
	}
	defer f.Close()
	doc, err := prof.ReadRank(f)
	if err != nil || doc.Rank != rank || doc.Size != size {
		return nil
	}
	return doc
}

// writeJobProfile merges docs and writes the job's files into dir, naming the ranks of
// dead failed: job.json, summary.txt and matrix.svg, as the gatherer does.
func writeJobProfile(dir string, docs []*prof.Rank, dead []int) error {
	job, err := prof.Merge(docs)
	if err == nil {
		err = job.SetFailed(dead)
	}
	if err != nil {
		return err
	}
	write := func(name string, f func(io.Writer) error) error {
		var b bytes.Buffer
		if err := f(&b); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return safefile.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644)
	}
	return errors.Join(
		write("job.json", job.WriteJSON),
		write("summary.txt", func(w io.Writer) error { return job.WriteSummary(w, summaryPairs) }),
		write("matrix.svg", func(w io.Writer) error {
			title := fmt.Sprintf("bytes sent, rank to rank, all kinds (%d ranks)", job.Size)
			return prof.HeatMap(w, job.Bytes(), title, "bytes")
		}))
}

// summaryPairs is how many of the heaviest rank pairs summary.txt lists, as the
// gatherer's.
const summaryPairs = 10
