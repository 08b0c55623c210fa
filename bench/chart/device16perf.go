package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// D16Perf is the whole machine's scheduler activity during an Allreduce loop of one size
// at P ranks (perf stat -a, the job's pf_ files): medians over the repetitions, by system.
// Every process on the machine counts, not only the job's.
type D16Perf struct {
	P     int `json:"p"`
	Bytes int `json:"bytes"`
	// CSWPerCall is the machine's context switches per second over the job's calls per second.
	CSWPerCall map[string]float64 `json:"csw_per_call"`
	CSWPerS    map[string]float64 `json:"csw_per_s"`
	MigPerS    map[string]float64 `json:"migrations_per_s"`
}

// perfStat is what perf stat -x, wrote: the counts by event of the whole run or, with -I,
// of each interval.
type perfStat struct {
	Totals    map[string]float64 // by event: the whole run's count (with -I, the intervals' sum)
	Intervals []perfInterval     // with -I, in the file's order
}

// perfInterval is one interval of perf stat -I: its end (seconds since the start) and its
// counts by event.
type perfInterval struct {
	End    float64
	Counts map[string]float64
}

// parsePerfStat reads perf stat -x, output. A count line is "COUNT,UNIT,EVENT,RUNTIME,PCT,..."
// or, with -I, "TIME,COUNT,UNIT,EVENT,...": in the second, field 2 is a count, never a unit.
// Comments (#), blank lines and lines of neither form are skipped. An event that perf did
// not count ("<not counted>", "<not supported>") is left out.
func parsePerfStat(r io.Reader) (perfStat, error) {
	s := perfStat{Totals: map[string]float64{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || l[0] == '#' {
			continue
		}
		f := strings.Split(l, ",")
		if len(f) < 3 {
			continue
		}
		interval := len(f) >= 4 && perfCountField(f[1])
		var at float64
		if interval {
			t, err := strconv.ParseFloat(f[0], 64)
			if err != nil || math.IsNaN(t) || math.IsInf(t, 0) {
				continue
			}
			at, f = t, f[1:]
		}
		ev := strings.TrimSpace(f[2])
		n, err := strconv.ParseFloat(f[0], 64)
		if ev == "" || err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
			continue
		}
		s.Totals[ev] += n
		if !interval {
			continue
		}
		if k := len(s.Intervals); k == 0 || s.Intervals[k-1].End != at {
			s.Intervals = append(s.Intervals, perfInterval{End: at, Counts: map[string]float64{}})
		}
		s.Intervals[len(s.Intervals)-1].Counts[ev] += n
	}
	return s, sc.Err()
}

// perfCountField says whether a field is a count: a number or perf's "<not counted>" or
// "<not supported>".
func perfCountField(v string) bool {
	if strings.HasPrefix(v, "<not ") {
		return true
	}
	_, err := strconv.ParseFloat(v, 64)
	return err == nil
}

// rate is an event's count per second. With intervals, it is the median over the
// intervals that counted it of count / length: the job's start and end fall in the outer
// intervals, its loop in the rest. Without, it is the whole run's count over the run's
// time, task-clock over cores (perf stat -a runs every CPU's clock).
func (s perfStat) rate(ev string, cores int) (float64, bool) {
	var rates []float64
	prev := 0.0
	for _, iv := range s.Intervals {
		n, ok := iv.Counts[ev]
		if d := iv.End - prev; ok && d > 0 {
			rates = append(rates, n/d)
		}
		prev = iv.End
	}
	if len(rates) > 0 {
		return median(rates), true
	}
	n, ok := s.Totals[ev]
	ms := s.Totals["task-clock"]
	if !ok || len(s.Intervals) > 0 || ms <= 0 || cores <= 0 {
		return 0, false
	}
	return n / (ms / 1e3 / float64(cores)), true
}

var pfFile = regexp.MustCompile(`^pf_([a-z0-9]+)_p(\d+)_(\d+)_(\d+)\.txt$`)

// collectPerf reads the pf_ files of dir: per run, perf's CSV and allreducebench's JSON
// of the same loop. A run without its JSON (it failed) or without a count of
// context-switches counts for nothing. It returns the rows and the repetitions.
func collectPerf(dir string, cores int) ([]D16Perf, int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, err
	}
	reps := 0
	type key struct{ p, bytes int }
	type runs struct{ csw, perCall, mig []float64 }
	all := map[key]map[string]*runs{}
	for _, e := range ents {
		m := pfFile.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		p, _ := strconv.Atoi(m[2])
		n, _ := strconv.Atoi(m[3])
		rep, _ := strconv.Atoi(m[4])
		reps = max(reps, rep)
		st, us, err := readPerfRun(filepath.Join(dir, e.Name()), n)
		if err != nil {
			return nil, 0, err
		}
		csw, ok := st.rate("context-switches", cores)
		if !ok || us <= 0 {
			continue
		}
		k := key{p, n}
		if all[k] == nil {
			all[k] = map[string]*runs{}
		}
		r := all[k][m[1]]
		if r == nil {
			r = &runs{}
			all[k][m[1]] = r
		}
		r.csw, r.perCall = append(r.csw, csw), append(r.perCall, csw*us/1e6)
		if mig, ok := st.rate("cpu-migrations", cores); ok {
			r.mig = append(r.mig, mig)
		}
	}
	var out []D16Perf
	for k, bySys := range all {
		row := D16Perf{P: k.p, Bytes: k.bytes, CSWPerCall: map[string]float64{}, CSWPerS: map[string]float64{}, MigPerS: map[string]float64{}}
		for s, r := range bySys {
			row.CSWPerS[s], row.CSWPerCall[s] = median(r.csw), median(r.perCall)
			if len(r.mig) > 0 {
				row.MigPerS[s] = median(r.mig)
			}
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b D16Perf) int {
		if a.P != b.P {
			return b.P - a.P
		}
		return a.Bytes - b.Bytes
	})
	return out, reps, nil
}

// readPerfRun reads one pf_ run: perf's CSV at path and the mean time per call (us) of the
// size-byte Allreduce in the JSON beside it (0 when the JSON is absent or lacks the size).
func readPerfRun(path string, size int) (perfStat, float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return perfStat{}, 0, err
	}
	defer f.Close()
	st, err := parsePerfStat(f)
	if err != nil {
		return perfStat{}, 0, fmt.Errorf("%s: %w", path, err)
	}
	b, err := os.ReadFile(strings.TrimSuffix(path, ".txt") + ".json")
	if err != nil {
		return st, 0, nil
	}
	var a arDoc
	if err := json.Unmarshal(b, &a); err != nil {
		return perfStat{}, 0, fmt.Errorf("%s: %w", path, err)
	}
	for _, r := range a.Allreduce {
		if r.Bytes == size {
			return st, r.AvgUS, nil
		}
	}
	return st, 0, nil
}

// perfSystems are the systems with figures in rows, in the page's order.
func perfSystems(rows []D16Perf) []string {
	return systemsWith(func(s string) bool {
		return slices.ContainsFunc(rows, func(r D16Perf) bool { _, ok := r.CSWPerS[s]; return ok })
	})
}

// systemsWith returns the systems of d16Order for which has is true, in that order.
func systemsWith(has func(s string) bool) []string {
	var out []string
	for _, s := range d16Order {
		if has(s) {
			out = append(out, s)
		}
	}
	return out
}

// renderD16Perf writes the table of the pf_ runs at p ranks, if there are any.
func renderD16Perf(b *strings.Builder, d *Device16, p int) {
	var rows []D16Perf
	for _, r := range d.Perf {
		if r.P == p {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	sys := perfSystems(rows)
	fmt.Fprintf(b, "\n### The whole machine's context switches during Allreduce, %d ranks\n\n", p)
	fmt.Fprintf(b, "`perf stat -a -I PERF_INTERVAL -e context-switches,cpu-migrations` over a loop of one size (`allreducebench --test allreduce`, the pf_ files), "+
		"%d repetitions, each running every system once, in turn: per second, the median interval's count; per call, that over the loop's calls per second. "+
		"Every process on the machine counts.\n\n", d.PerfReps)
	head := []string{"size"}
	for _, s := range sys {
		head = append(head, d16Names[s]+": per call (per s)")
	}
	head = append(head, "gorma / best peer, per call")
	for _, s := range sys {
		head = append(head, d16Names[s]+": migrations per s")
	}
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|---|" + strings.Repeat("---:|", len(head)-1) + "\n")
	for _, r := range rows {
		cells := []string{sizeLabel(float64(r.Bytes))}
		for _, s := range sys {
			c := "-"
			if v, ok := r.CSWPerCall[s]; ok {
				c = fmt.Sprintf("%s (%s)", num(v, 3), num(r.CSWPerS[s], 3))
			}
			cells = append(cells, c)
		}
		cells = append(cells, perfRatio(r))
		for _, s := range sys {
			c := "-"
			if v, ok := r.MigPerS[s]; ok {
				c = num(v, 3)
			}
			cells = append(cells, c)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
}

// perfRatio is gorma's context switches per call over the peer's with fewer, or "-".
func perfRatio(r D16Perf) string {
	q, ok := perfQuotient(r)
	if !ok {
		return "-"
	}
	return ratioText(q)
}

// perfQuotient is gorma's context switches per call over the peer's with fewer; false
// when either is missing or the fewer is none.
func perfQuotient(r D16Perf) (float64, bool) {
	g, ok := r.CSWPerCall["gorma"]
	best := math.Inf(1)
	for _, s := range []string{"ompi", "mpich"} {
		if v, ok := r.CSWPerCall[s]; ok {
			best = min(best, v)
		}
	}
	if !ok || math.IsInf(best, 1) || best <= 0 {
		return 0, false
	}
	return g / best, true
}

// renderD16Free writes gorma's Allreduce and Barrier at p ranks beside p-1 (the job's
// runs with one core left free), if d has both.
func renderD16Free(b *strings.Builder, d *Device16, r D16Ranks) {
	var free *D16Ranks
	for i := range d.Ranks {
		if d.Ranks[i].OneFree && d.Ranks[i].P == r.P-1 {
			free = &d.Ranks[i]
		}
	}
	if free == nil {
		return
	}
	fmt.Fprintf(b, "\n### gorma with one core free: Allreduce at %d ranks and at %d (us, lower is better)\n\n", r.P, free.P)
	fmt.Fprintf(b, "In each repetition gorma runs at %d ranks right after its run at %d (`PFREE`); the ratio is the medians'.\n\n", free.P, r.P)
	fmt.Fprintf(b, "| size | %d ranks | %d ranks | %d / %d |\n|---|---:|---:|---:|\n", r.P, free.P, r.P, free.P)
	at := map[int]D16Row{}
	for _, row := range append(free.Allreduce, free.Barrier) {
		at[row.Bytes] = row
	}
	for _, row := range append(r.Allreduce, r.Barrier) {
		f, ok := at[row.Bytes]
		g, okg := row.US["gorma"]
		h, okh := f.US["gorma"]
		if !ok || !okg || !okh {
			continue
		}
		label := sizeLabel(float64(row.Bytes))
		if row.Bytes == 0 {
			label = "Barrier"
		}
		ratio := "-"
		if h > 0 {
			ratio = ratioText(g / h)
		}
		b.WriteString("| " + label + " | " + d16Cell(row, "gorma") + " | " + d16Cell(f, "gorma") + " | " + ratio + " |\n")
	}
}

// d16Absent is the intro's sentence on the figures that d lacks, or "".
func d16Absent(d *Device16) string {
	var s []string
	if len(d.Perf) == 0 {
		s = append(s, "the whole machine's context switches (no pf_ files)")
	}
	free := false
	for _, r := range d.Ranks {
		free = free || r.OneFree
	}
	if !free {
		s = append(s, "gorma with one core free (no runs at one rank fewer)")
	}
	if len(s) == 0 {
		return ""
	}
	return "These results lack " + strings.Join(s, " and ") + ".\n\n"
}
