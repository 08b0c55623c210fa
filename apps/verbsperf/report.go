package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// Kinds of result tables.
const (
	kindLatency   = "latency"
	kindBandwidth = "bandwidth"
)

// Row is one line of a result table: one message size.
type Row struct {
	Bytes      int       `json:"bytes"`
	Iterations int       `json:"iterations"`
	Batch      int       `json:"batch,omitempty"` // operations per latency sample
	MedianUS   float64   `json:"median_us,omitempty"`
	AvgUS      float64   `json:"avg_us,omitempty"`
	P99US      float64   `json:"p99_us,omitempty"`
	GBps       float64   `json:"gbps,omitempty"`       // median of the repetitions, 10^9 bytes/s
	AvgGBps    float64   `json:"avg_gbps,omitempty"`   // mean of the repetitions
	MmsgPerS   float64   `json:"mmsg_per_s,omitempty"` // millions of messages per second, at the median
	RepsGBps   []float64 `json:"reps_gbps,omitempty"`
	// The paired floor (Result.Floor), same size and count, measured just before this row
	// (latency: median microseconds) or in pairs with its repetitions (bandwidth: median
	// GB/s of as many repetitions).
	FloorGBps float64 `json:"floor_gbps,omitempty"`
	FloorUS   float64 `json:"floor_median_us,omitempty"`
	// FloorRatio is the median over the pairs of the row's figure divided by its floor's:
	// GB/s over the floor repetition paired with it (bandwidth rows with a paired floor),
	// or the median latency over the floor's (the paired 8-byte latency rows).
	FloorRatio float64 `json:"floor_ratio,omitempty"`
}

// Result is one table: one test, in one mode, on one provider (or a floor).
type Result struct {
	Test     string `json:"test"`              // write_lat, flag_pp, ...
	Mode     string `json:"mode,omitempty"`    // pingpong, completion, fetch_add, ...
	Provider string `json:"provider"`          // shm, tcp, or raw for a floor
	Kind     string `json:"kind"`              // latency or bandwidth
	Title    string `json:"title"`             // what was measured
	Note     string `json:"note,omitempty"`    // extra facts, such as arena counters
	Skipped  string `json:"skipped,omitempty"` // why the test did not run
	Floor    string `json:"floor,omitempty"`   // floor test paired with some rows
	Rows     []Row  `json:"rows"`
}

// Machine describes where the figures were taken.
type Machine struct {
	NProc      int    `json:"nproc"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPUModel   string `json:"cpu_model"`
	Kernel     string `json:"kernel"`
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
}

// RunConfig records the options of the run.
type RunConfig struct {
	Providers []string `json:"providers"`
	Tests     []string `json:"tests"`
	MinSize   int      `json:"min_size"`
	MaxSize   int      `json:"max_size"`
	Iters     int      `json:"iters,omitempty"`
	Quick     bool     `json:"quick"`
	Wait      string   `json:"wait"`
	Window    int      `json:"window"`
	IdleWatch bool     `json:"idle_watch"` // tcp devices had idle-role watches (--idle-watch)
}

// Document is the --json output.
type Document struct {
	Tool      string    `json:"tool"`
	Timestamp string    `json:"timestamp"`
	GoVersion string    `json:"go_version"`
	Machine   Machine   `json:"machine"`
	Config    RunConfig `json:"config"`
	Results   []Result  `json:"results"`
	Summary   []Check   `json:"summary"`
	Elapsed   float64   `json:"elapsed_s"`
}

// reporter prints tables as they are measured and collects them for --json.
type reporter struct {
	w   *bufio.Writer // text output; io.Discard when JSON goes to stdout
	doc Document
	cur int // index of the open result in doc.Results, -1 if none
}

func newReporter(text io.Writer, o *options) *reporter {
	r := &reporter{w: bufio.NewWriter(text), cur: -1}
	r.doc = Document{Tool: "verbsperf", Timestamp: time.Now().UTC().Format(time.RFC3339),
		GoVersion: runtime.Version(), Machine: describeMachine(),
		Config: RunConfig{Providers: o.providers, Tests: o.tests, MinSize: o.minSize,
			MaxSize: o.maxSize, Iters: o.iters, Quick: o.quick, Wait: o.wait.String(), Window: o.window,
			IdleWatch: o.idleWatch}}
	m := r.doc.Machine
	fmt.Fprintf(r.w, "# verbsperf %s  %s  nproc=%d  cpu=%q  kernel=%s  wait=%s  idle-watch=%v\n",
		r.doc.Timestamp, r.doc.GoVersion, m.NProc, m.CPUModel, m.Kernel, o.wait, o.idleWatch)
	fmt.Fprintf(r.w, "# latency: median/avg/p99 in microseconds; a sample is the mean of a batch of up to %d operations\n", maxBatch)
	fmt.Fprintf(r.w, "# bandwidth: GB/s = 10^9 bytes per second, median of the repetitions\n")
	fmt.Fprintf(r.w, "# a last column names a floor measured just before the row, for the summary's ratios\n")
	r.w.Flush()
	return r
}

// begin opens a table and prints its header.
func (r *reporter) begin(res Result) {
	r.end()
	r.doc.Results = append(r.doc.Results, res)
	r.cur = len(r.doc.Results) - 1
	name := res.Test
	if res.Mode != "" {
		name += " " + res.Mode
	}
	fmt.Fprintf(r.w, "\n# %s %s: %s\n", res.Provider, name, res.Title)
	r.w.WriteString(formatHeader(&res))
	r.w.Flush()
}

// formatHeader returns the column header of res's table. A table with a paired floor has
// one more column, named after the floor, and for bandwidth one more: the median of the
// ratios of adjacent test and floor repetitions.
func formatHeader(res *Result) string {
	var h string
	if res.Kind == kindLatency {
		h = fmt.Sprintf("%-10s %12s %12s %12s %12s", "#bytes", "iterations", "median_us", "avg_us", "p99_us")
	} else {
		h = fmt.Sprintf("%-10s %12s %12s %12s", "#bytes", "iterations", "GB/s", "Mmsg/s")
	}
	if res.Floor != "" {
		unit := "_us"
		if res.Kind == kindBandwidth {
			unit = "_GB/s"
		}
		h += fmt.Sprintf(" %14s", res.Floor+unit)
		if res.Kind == kindBandwidth {
			h += fmt.Sprintf(" %12s", "paired_ratio")
		}
	}
	return h + "\n"
}

// row adds a line to the open table.
func (r *reporter) row(row Row) {
	res := &r.doc.Results[r.cur]
	res.Rows = append(res.Rows, row)
	r.w.WriteString(formatRow(res, row))
	r.w.Flush()
}

func formatRow(res *Result, row Row) string {
	var l string
	floor := row.FloorUS
	if res.Kind == kindLatency {
		l = fmt.Sprintf("%-10d %12d %12.3f %12.3f %12.3f", row.Bytes, row.Iterations, row.MedianUS, row.AvgUS, row.P99US)
	} else {
		l = fmt.Sprintf("%-10d %12d %12.3f %12.3f", row.Bytes, row.Iterations, row.GBps, row.MmsgPerS)
		floor = row.FloorGBps
	}
	if res.Floor != "" {
		if floor > 0 {
			l += fmt.Sprintf(" %14.3f", floor)
		} else {
			l += fmt.Sprintf(" %14s", "-")
		}
		if res.Kind == kindBandwidth {
			if row.FloorRatio > 0 {
				l += fmt.Sprintf(" %12.3f", row.FloorRatio)
			} else {
				l += fmt.Sprintf(" %12s", "-")
			}
		}
	}
	return l + "\n"
}

// note adds a remark to the open table and prints it as a comment.
func (r *reporter) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	res := &r.doc.Results[r.cur]
	if res.Note != "" {
		res.Note += "; "
	}
	res.Note += s
	fmt.Fprintf(r.w, "# %s\n", s)
	r.w.Flush()
}

// skip records a test that could not run, and why.
func (r *reporter) skip(res Result, why string) {
	r.end()
	res.Skipped = why
	r.doc.Results = append(r.doc.Results, res)
	fmt.Fprintf(r.w, "\n# %s %s: skipped: %s\n", res.Provider, res.Test, why)
	r.w.Flush()
}

func (r *reporter) end() { r.cur = -1 }

// find returns the result of test/mode on provider, or nil.
func (r *reporter) find(provider, test, mode string) *Result {
	for i := range r.doc.Results {
		res := &r.doc.Results[i]
		if res.Provider == provider && res.Test == test && res.Mode == mode && res.Skipped == "" {
			return res
		}
	}
	return nil
}

// rowAt returns the row of res for size n, or nil.
func (res *Result) rowAt(n int) *Row {
	if res == nil {
		return nil
	}
	for i := range res.Rows {
		if res.Rows[i].Bytes == n {
			return &res.Rows[i]
		}
	}
	return nil
}

// finish prints the summary and writes the JSON document where --json asked.
func (r *reporter) finish(jsonOut string, stdout io.Writer, elapsed time.Duration) error {
	r.end()
	r.doc.Summary = summarize(r)
	r.doc.Elapsed = round3(elapsed.Seconds())
	printSummary(r.w, r.doc.Summary)
	fmt.Fprintf(r.w, "\n# done in %.1f s\n", elapsed.Seconds())
	if err := r.w.Flush(); err != nil {
		return err
	}
	switch jsonOut {
	case "":
		return nil
	case "-":
		return writeJSON(stdout, &r.doc)
	}
	f, err := os.Create(jsonOut)
	if err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	if err := writeJSON(f, &r.doc); err != nil {
		f.Close()
		return fmt.Errorf("--json: %w", err)
	}
	return f.Close()
}

func writeJSON(w io.Writer, doc *Document) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// describeMachine reads the processor model and kernel release.
func describeMachine() Machine {
	m := Machine{NProc: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GOOS: runtime.GOOS,
		GOARCH: runtime.GOARCH, CPUModel: "unknown", Kernel: "unknown"}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPUModel = cpuModel(string(b))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// cpuModel returns the first "model name" of /proc/cpuinfo text.
func cpuModel(cpuinfo string) string {
	for line := range strings.Lines(cpuinfo) {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
