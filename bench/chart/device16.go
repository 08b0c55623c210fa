package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// Device16 is docs/device16.json: one run of scripts/device16-job.sh on a 16-core node,
// the source of the page's "16-core node" section. chart device16 collects it from the
// job's unpacked results (scripts/device16.sh unpack).
type Device16 struct {
	Command  string     `json:"command"`
	Commit   string     `json:"commit,omitempty"` // the code measured: the bundle's commit.txt
	Machine  D16Machine `json:"machine"`
	Copy     []CopyRate `json:"copy"` // parcopy: the node's copy floor
	Reps     int        `json:"reps"`
	Systems  []string   `json:"systems"`        // in the job's order: gorma, ompi, gorma1, mpich, gormago
	Ranks    []D16Ranks `json:"ranks"`          // by rank count, highest first
	Perf     []D16Perf  `json:"perf,omitempty"` // the pf_ files: by rank count, highest first, then by size
	PerfReps int        `json:"perf_reps,omitempty"`
	Extras   *D16Extras `json:"extras,omitempty"` // the ex_ files
	Failed   []string   `json:"failed,omitempty"`
}

// D16Machine describes the node.
type D16Machine struct {
	Cores     int    `json:"cores"`
	CPU       string `json:"cpu"`
	MemoryGiB int    `json:"memory_gib"`
	NUMANodes int    `json:"numa_nodes"`
}

// CopyRate is parcopy's aggregate copy rate with Procs processes (bytes copied per
// second, summed).
type CopyRate struct {
	Procs int     `json:"procs"`
	MiB   int     `json:"mib"`
	GBps  float64 `json:"GBps"`
}

// D16Ranks is every figure at one rank count.
type D16Ranks struct {
	P         int      `json:"p"`
	Allreduce []D16Row `json:"allreduce"`
	// Bcast, Reduce, Allgather, Alltoall, Gather and Scatter come from the job's cl_ files.
	Bcast     []D16Row              `json:"bcast,omitempty"`
	Reduce    []D16Row              `json:"reduce,omitempty"`
	Allgather []D16Row              `json:"allgather,omitempty"`
	Alltoall  []D16Row              `json:"alltoall,omitempty"`
	Gather    []D16Row              `json:"gather,omitempty"`
	Scatter   []D16Row              `json:"scatter,omitempty"`
	Barrier   D16Row                `json:"barrier"`
	Threads   map[string]D16Threads `json:"threads"` // by system
	// OneFree: only gorma ran at P, and P+1 is a rank count too: the job's runs with one
	// core left free (PFREE). The page shows them only beside P+1.
	OneFree bool `json:"one_core_free,omitempty"`
}

// d16Colls are the collectives of the cl_ files, in the page's order: each one's
// allreducebench test, name on the page, table heading, whether its size is the vector
// (else each rank's block), and where allreducebench's document and D16Ranks hold its
// rows.
var d16Colls = []struct {
	test, name, heading string
	vector              bool
	doc                 func(arDoc) []arRow
	rows                func(*D16Ranks) *[]D16Row
}{
	{"bcast", "Bcast", "Bcast (float64, root 0)", true, func(a arDoc) []arRow { return a.Bcast }, func(r *D16Ranks) *[]D16Row { return &r.Bcast }},
	{"reduce", "Reduce", "Reduce (float64 sum, root 0)", true, func(a arDoc) []arRow { return a.Reduce }, func(r *D16Ranks) *[]D16Row { return &r.Reduce }},
	{"allgather", "Allgather", "Allgather (float64, size per rank)", false, func(a arDoc) []arRow { return a.Allgather }, func(r *D16Ranks) *[]D16Row { return &r.Allgather }},
	{"alltoall", "Alltoall", "Alltoall (float64, size per block)", false, func(a arDoc) []arRow { return a.Alltoall }, func(r *D16Ranks) *[]D16Row { return &r.Alltoall }},
	{"gather", "Gather", "Gather (float64, root 0, size per rank)", false, func(a arDoc) []arRow { return a.Gather }, func(r *D16Ranks) *[]D16Row { return &r.Gather }},
	{"scatter", "Scatter", "Scatter (float64, root 0, size per rank)", false, func(a arDoc) []arRow { return a.Scatter }, func(r *D16Ranks) *[]D16Row { return &r.Scatter }},
}

// D16Row is one size's medians over the repetitions, by system: the mean time per call
// (us), the spread (slowest repetition / median) and the context switches per call.
type D16Row struct {
	Bytes  int                `json:"bytes"`
	US     map[string]float64 `json:"us"`
	Spread map[string]float64 `json:"spread"`
	CSW    map[string]float64 `json:"csw_per_call"`
}

// D16Threads is threadwatch's summary, medians over the repetitions.
type D16Threads struct {
	Runnable   float64 `json:"runnable_mean"`
	MultiShare float64 `json:"multi_runnable_share"`
	Threads    float64 `json:"threads_mean"`
}

// d16Names are the systems' names on the page.
var d16Names = map[string]string{
	"gorma": "gorma", "gorma1": "gorma, GORMA_PROCS=1", "gormago": "gorma, GORMA_PROCS=go",
	"ompi": "Open MPI", "mpich": "MPICH",
}

var d16Order = []string{"gorma", "gorma1", "gormago", "ompi", "mpich"}

// runDevice16 is chart device16: collect results/device16 into docs/device16.json.
func runDevice16(args []string) error {
	fs := pflag.NewFlagSet("chart device16", pflag.ContinueOnError)
	in := fs.String("in", "results/device16", "the job's unpacked results (scripts/device16.sh unpack)")
	out := fs.String("out", "docs/device16.json", "the document to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	d, err := collectDevice16(*in)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(*out, append(b, '\n'), 0o644)
}

var d16File = regexp.MustCompile(`^(ar|cl|tw)_([a-z0-9]+)_p(\d+)_(\d+)\.json$`)

// arDoc is what collectDevice16 reads of an allreducebench JSON document: an ar_ file
// (Allreduce and Barrier) or a cl_ file (the other collectives) of the job.
type arDoc struct {
	Allreduce []arRow `json:"allreduce"`
	Bcast     []arRow `json:"bcast"`
	Reduce    []arRow `json:"reduce"`
	Allgather []arRow `json:"allgather"`
	Alltoall  []arRow `json:"alltoall"`
	Gather    []arRow `json:"gather"`
	Scatter   []arRow `json:"scatter"`
	Barrier   []arRow `json:"barrier"`
}

type arRow struct {
	Bytes int     `json:"bytes"`
	AvgUS float64 `json:"avg_us"`
	VCSW  float64 `json:"vcsw_per_call"`
	IVCSW float64 `json:"ivcsw_per_call"`
}

// collectDevice16 reads the job's results folder.
func collectDevice16(dir string) (*Device16, error) {
	d := &Device16{Command: "scripts/device16.sh"}
	if err := readMachine(filepath.Join(dir, "machine.txt"), &d.Machine); err != nil {
		return nil, err
	}
	var err error
	if d.Commit, err = readCommit(filepath.Join(dir, "commit.txt")); err != nil {
		return nil, err
	}
	if d.Copy, err = readCopy(filepath.Join(dir, "parcopy.txt")); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type key struct {
		sys string
		p   int
	}
	ars, tws := map[key][]arDoc{}, map[key][]D16Threads{}
	seen, ps, sysAt := map[string]bool{}, map[int]bool{}, map[int]map[string]bool{}
	for _, e := range ents {
		m := d16File.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		p, _ := strconv.Atoi(m[3])
		rep, _ := strconv.Atoi(m[4])
		d.Reps = max(d.Reps, rep)
		k := key{m[2], p}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		if m[1] != "tw" {
			var a arDoc
			if err := json.Unmarshal(b, &a); err != nil {
				return nil, fmt.Errorf("%s: %w", e.Name(), err)
			}
			ars[k] = append(ars[k], a)
			seen[m[2]], ps[p] = true, true
			if sysAt[p] == nil {
				sysAt[p] = map[string]bool{}
			}
			sysAt[p][m[2]] = true
			continue
		}
		var t D16Threads
		if err := json.Unmarshal(b, &t); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		tws[k] = append(tws[k], t)
	}
	if len(ars) == 0 {
		return nil, fmt.Errorf("%s: no ar_SYSTEM_pP_REP.json or cl_SYSTEM_pP_REP.json files", dir)
	}
	d.Systems = systemsWith(func(s string) bool { return seen[s] })
	d.Failed = readFailed(filepath.Join(dir, "stderr.txt"))
	for p := range ps {
		r := D16Ranks{P: p, Threads: map[string]D16Threads{}, OneFree: ps[p+1] && len(sysAt[p]) == 1 && sysAt[p]["gorma"]}
		allreduce, barrier := map[int]*D16Row{}, map[int]*D16Row{}
		colls := make([]map[int]*D16Row, len(d16Colls))
		for _, s := range d.Systems {
			docs := ars[key{s, p}]
			d16Medians(allreduce, s, docs, func(a arDoc) []arRow { return a.Allreduce })
			d16Medians(barrier, s, docs, func(a arDoc) []arRow { return a.Barrier })
			for i, c := range d16Colls {
				if colls[i] == nil {
					colls[i] = map[int]*D16Row{}
				}
				d16Medians(colls[i], s, docs, c.doc)
			}
			if t := tws[key{s, p}]; len(t) > 0 {
				r.Threads[s] = medianThreads(t)
			}
		}
		r.Allreduce = d16Sorted(allreduce)
		for i, c := range d16Colls {
			*c.rows(&r) = d16Sorted(colls[i])
		}
		r.Barrier = newD16Row(0)
		if bar := barrier[0]; bar != nil {
			r.Barrier = *bar
		}
		d.Ranks = append(d.Ranks, r)
	}
	slices.SortFunc(d.Ranks, func(a, b D16Ranks) int { return b.P - a.P })
	if d.Perf, d.PerfReps, err = collectPerf(dir, d.Machine.Cores); err != nil {
		return nil, err
	}
	d.Extras, err = collectExtras(dir)
	return d, err
}

func newD16Row(bytes int) D16Row {
	return D16Row{Bytes: bytes, US: map[string]float64{}, Spread: map[string]float64{}, CSW: map[string]float64{}}
}

// d16Medians adds system s's medians over docs to rows (by size), of the rows that get
// picks from each document.
func d16Medians(rows map[int]*D16Row, s string, docs []arDoc, get func(arDoc) []arRow) {
	us, csw := map[int][]float64{}, map[int][]float64{}
	for _, a := range docs {
		for _, x := range get(a) {
			us[x.Bytes] = append(us[x.Bytes], x.AvgUS)
			csw[x.Bytes] = append(csw[x.Bytes], x.VCSW+x.IVCSW)
		}
	}
	for n, v := range us {
		row := rows[n]
		if row == nil {
			r := newD16Row(n)
			row = &r
			rows[n] = row
		}
		row.US[s], row.Spread[s], row.CSW[s] = median(v), spread(v), median(csw[n])
	}
}

// d16Sorted is rows by size.
func d16Sorted(rows map[int]*D16Row) []D16Row {
	var out []D16Row
	for _, n := range slices.Sorted(mapKeys(rows)) {
		out = append(out, *rows[n])
	}
	return out
}

func mapKeys[V any](m map[int]V) func(func(int) bool) {
	return func(yield func(int) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// spread is the slowest value over the median (1 for one value).
func spread(v []float64) float64 {
	m := median(v)
	if m <= 0 {
		return 0
	}
	return slices.Max(v) / m
}

func medianThreads(t []D16Threads) D16Threads {
	var r, m, n []float64
	for _, x := range t {
		r, m, n = append(r, x.Runnable), append(m, x.MultiShare), append(n, x.Threads)
	}
	return D16Threads{Runnable: median(r), MultiShare: median(m), Threads: median(n)}
}

// readMachine reads machine.txt: "cores N", "model NAME", "memory_gib N", "numa_nodes N".
func readMachine(path string, m *D16Machine) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		n, _ := strconv.Atoi(v)
		switch k {
		case "cores":
			m.Cores = n
		case "model":
			m.CPU = v
		case "memory_gib":
			m.MemoryGiB = n
		case "numa_nodes":
			m.NUMANodes = n
		}
	}
	if m.Cores == 0 {
		return fmt.Errorf("%s: no cores line", path)
	}
	return sc.Err()
}

var parcopyLine = regexp.MustCompile(`^parcopy (\d+) procs (\d+) MiB: ([0-9.]+) GB/s total`)

// readCopy reads parcopy.txt, one "parcopy N procs S MiB: X GB/s total, ..." line per run.
func readCopy(path string) ([]CopyRate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []CopyRate
	for _, l := range strings.Split(string(b), "\n") {
		m := parcopyLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		p, _ := strconv.Atoi(m[1])
		mib, _ := strconv.Atoi(m[2])
		g, _ := strconv.ParseFloat(m[3], 64)
		out = append(out, CopyRate{Procs: p, MiB: mib, GBps: g})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no parcopy lines", path)
	}
	return out, nil
}

// readFailed returns the job's "device16: ... failed" lines.
func readFailed(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "device16: ") && strings.HasSuffix(l, " failed") {
			out = append(out, strings.TrimPrefix(l, "device16: "))
		}
	}
	return out
}

// copyRate is the copy rate measured with the process count closest to p (bytes/s).
func (d *Device16) copyRate(p int) (float64, error) {
	if len(d.Copy) == 0 {
		return 0, errors.New("no copy rate")
	}
	best := d.Copy[0]
	for _, c := range d.Copy[1:] {
		if abs(c.Procs-p) < abs(best.Procs-p) {
			best = c
		}
	}
	return best.GBps * 1e9, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// floorUS and stagedUS are collectives/design.md's memory models of an n-byte Allreduce
// on p ranks of one host with copy rate c (bytes/s): (3p-1)n/2c and (5p-1)n/2c.
func floorUS(n, p int, c float64) float64 {
	return float64(3*p-1) * float64(n) / (2 * c) * 1e6
}

func stagedUS(n, p int, c float64) float64 {
	return float64(5*p-1) * float64(n) / (2 * c) * 1e6
}

// d16ModelMin is the smallest size whose row shows the memory models.
const d16ModelMin = 1 << 20

// renderDevice16 writes the page's "16-core node" section.
func renderDevice16(d *Device16) (string, error) {
	var b strings.Builder
	b.WriteString("## 16-core node\n\n")
	fmt.Fprintf(&b, "From `%s` (`bash .devb/device-run.sh .devb/job.sh` on the device machine, then `scripts/device16.sh unpack` and `chart device16`): "+
		"%d cores (%s), %d GiB, %d NUMA node(s); one rank per core and fewer; %d repetitions, each running every system once, in turn. "+
		"Figures are medians over the repetitions; spread is the slowest repetition over the median.\n\n",
		d.Command, d.Machine.Cores, d.Machine.CPU, d.Machine.MemoryGiB, d.Machine.NUMANodes, d.Reps)
	b.WriteString("Copy floor (`parcopy N 16 0.5`: N processes copying 16 MiB buffers at once, bytes copied per second summed):")
	for _, c := range d.Copy {
		fmt.Fprintf(&b, " %d: %.1f GB/s;", c.Procs, c.GBps)
	}
	b.WriteString(" the models of collectives/design.md use the count closest to p.\n\n")
	b.WriteString(d.collsSource())
	b.WriteString(d16Absent(d))
	if len(d.Failed) > 0 {
		fmt.Fprintf(&b, "Runs that failed (missing from the medians): %s.\n\n", strings.Join(d.Failed, "; "))
	}
	shown := map[int]bool{}
	for _, r := range d.Ranks {
		if r.OneFree {
			continue
		}
		shown[r.P] = true
		c, err := d.copyRate(r.P)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "### Allreduce (float64 sum), %d ranks: latency (us, lower is better)\n\n", r.P)
		head := []string{"size"}
		for _, s := range d.Systems {
			head = append(head, d16Names[s])
		}
		head = append(head, "gorma / best peer", "floor model", "staged model")
		b.WriteString("| " + strings.Join(head, " | ") + " |\n|---|" + strings.Repeat("---:|", len(head)-1) + "\n")
		for _, row := range append(r.Allreduce, r.Barrier) {
			label := sizeLabel(float64(row.Bytes))
			if row.Bytes == 0 {
				label = "Barrier"
			}
			if len(row.US) == 0 {
				continue
			}
			cells := []string{label}
			for _, s := range d.Systems {
				cells = append(cells, d16Cell(row, s))
			}
			cells = append(cells, d16Ratio(row))
			if row.Bytes >= d16ModelMin {
				cells = append(cells, num(floorUS(row.Bytes, r.P, c), 3), num(stagedUS(row.Bytes, r.P, c), 3))
			} else {
				cells = append(cells, "", "")
			}
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		}
		renderD16Free(&b, d, r)
		for _, c := range d16Colls {
			renderD16Coll(&b, d, c.heading, r.P, *c.rows(&r))
		}
		fmt.Fprintf(&b, "\n### Threads and context switches, %d ranks\n\n", r.P)
		b.WriteString("| system | runnable threads per rank | samples with more than one | threads per rank | context switches per call at 8 B | at 64K | at 1M |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range d.Systems {
			t, ok := r.Threads[s]
			if !ok {
				continue
			}
			cells := []string{d16Names[s], num(t.Runnable, 3), fmt.Sprintf("%.1f%%", 100*t.MultiShare), num(t.Threads, 3)}
			for _, n := range []int{8, 64 << 10, 1 << 20} {
				cells = append(cells, d16CSW(r, s, n))
			}
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		}
		renderD16Perf(&b, d, r.P)
		b.WriteString("\n")
	}
	for _, r := range d.Perf {
		if !shown[r.P] {
			shown[r.P] = true
			renderD16Perf(&b, d, r.P)
			b.WriteString("\n")
		}
	}
	renderD16Extras(&b, d.Extras)
	return b.String(), nil
}

// collsSource is the paragraph that says where the tables of the cl_ files come from,
// naming the collectives that have rows at some rank count; empty when none has.
func (d *Device16) collsSource() string {
	var names, tests, vector, block []string
	for _, c := range d16Colls {
		if !slices.ContainsFunc(d.Ranks, func(r D16Ranks) bool { return len(*c.rows(&r)) > 0 }) {
			continue
		}
		names, tests = append(names, c.name), append(tests, c.test)
		if c.vector {
			vector = append(vector, c.name)
		} else {
			block = append(block, c.name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	var size []string
	if len(vector) > 0 {
		size = append(size, "the vector for "+andList(vector))
	}
	if len(block) > 0 {
		size = append(size, "each rank's block for "+andList(block))
	}
	return fmt.Sprintf("%s come from one more run of each system at each rank count (`allreducebench --test %s`, the cl_ files); "+
		"their size is %s, as in OSU.\n\n", andList(names), strings.Join(tests, ","), strings.Join(size, " and "))
}

// andList joins names as a sentence does: "A", "A and B", "A, B and C".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// renderD16Coll writes the table of one collective of the cl_ files, if it has rows.
func renderD16Coll(b *strings.Builder, d *Device16, heading string, p int, rows []D16Row) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "\n### %s, %d ranks: latency (us, lower is better)\n\n", heading, p)
	head := []string{"size"}
	for _, s := range d.Systems {
		head = append(head, d16Names[s])
	}
	head = append(head, "gorma / best peer")
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|---|" + strings.Repeat("---:|", len(head)-1) + "\n")
	for _, row := range rows {
		cells := []string{sizeLabel(float64(row.Bytes))}
		for _, s := range d.Systems {
			cells = append(cells, d16Cell(row, s))
		}
		cells = append(cells, d16Ratio(row))
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
}

// d16Cell is a system's median with its spread.
func d16Cell(row D16Row, s string) string {
	v, ok := row.US[s]
	if !ok {
		return "-"
	}
	return num(v, 3) + " (" + ratioText(row.Spread[s]) + ")"
}

// d16Ratio is gorma (GORMA_PROCS=auto) over the faster peer, or "-".
func d16Ratio(row D16Row) string {
	q, ok := d16Quotient(row)
	if !ok {
		return "-"
	}
	return ratioText(q)
}

// d16Quotient is gorma (GORMA_PROCS=auto) over the faster peer; false when either is
// missing.
func d16Quotient(row D16Row) (float64, bool) {
	g, ok := row.US["gorma"]
	best := math.Inf(1)
	for _, s := range []string{"ompi", "mpich"} {
		if v, ok := row.US[s]; ok && v > 0 {
			best = min(best, v)
		}
	}
	if !ok || math.IsInf(best, 1) {
		return 0, false
	}
	return g / best, true
}

func d16CSW(r D16Ranks, s string, n int) string {
	for _, row := range r.Allreduce {
		if row.Bytes == n {
			if v, ok := row.CSW[s]; ok {
				return num(v, 3)
			}
		}
	}
	return "-"
}

// loadDevice16 reads path, or returns nil when it does not exist.
func loadDevice16(path string) (*Device16, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var d Device16
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &d, nil
}
