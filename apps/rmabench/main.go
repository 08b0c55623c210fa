package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// options are the command's flags.
type options struct {
	tests      []string
	minSize    int
	maxSize    int
	iters      int
	bwIters    int
	allocIters int
	busy       time.Duration
	busyReps   int
	winSize    int
	jsonOut    string
	jsonFlag   bool
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := pflag.NewFlagSet("rmabench", pflag.ContinueOnError)
	test := fs.String("test", "all", "comma-separated cases (put_lat, put_lat.lock, ..., or all); see the package doc")
	o.minSize, o.maxSize, o.winSize = 8, 1<<20, 1<<20
	fs.Var((*benchkit.Size)(&o.minSize), "min-size", "smallest transfer in bytes, such as 8, 4K or 1M (powers of two from here)")
	fs.Var((*benchkit.Size)(&o.maxSize), "max-size", "largest transfer in bytes (default 1M)")
	fs.IntVar(&o.iters, "iters", 10000, "latency operations per size up to 16 KiB (scaled down above)")
	fs.IntVar(&o.bwIters, "bw-iters", 100, "bandwidth rounds of 64 operations per size up to 16 KiB (a fifth above)")
	fs.IntVar(&o.allocIters, "alloc-iters", 100, "window allocate+free pairs (a tenth more as warmup)")
	fs.DurationVar(&o.busy, "busy", 200*time.Millisecond, "busy_get: how long the target computes per round")
	fs.IntVar(&o.busyReps, "busy-reps", 3, "busy_get: rounds")
	fs.Var((*benchkit.Size)(&o.winSize), "window-size", "alloc_free: window size in bytes (default 1M)")
	fs.StringVar(&o.jsonOut, "json", "", "print one JSON document instead of text; --json=FILE writes it to FILE as well as the text")
	fs.Lookup("json").NoOptDefVal = "-"
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.jsonFlag = o.jsonOut == "-"
	for _, t := range strings.Split(*test, ",") {
		if t = strings.TrimSpace(t); t != "" {
			o.tests = append(o.tests, t)
		}
	}
	switch {
	case len(o.tests) == 0:
		return o, errors.New("--test: want at least one case")
	case o.minSize < 1 || o.maxSize < o.minSize:
		return o, fmt.Errorf("--min-size %d and --max-size %d: want 1 <= min <= max", o.minSize, o.maxSize)
	case o.iters < 1 || o.bwIters < 1 || o.allocIters < 1 || o.busyReps < 1:
		return o, errors.New("--iters, --bw-iters, --alloc-iters and --busy-reps must be at least 1")
	case o.busy <= 0 || o.winSize < 8:
		return o, errors.New("--busy must be positive and --window-size at least 8")
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, t := range o.tests {
		if !knownSelector(t) {
			return o, fmt.Errorf("--test %q: no such case (want all, %s)", t, strings.Join(caseNames(), ", "))
		}
	}
	return o, nil
}

func main() { benchkit.Main("rmabench", os.Args[1:], parseFlags, run) }

// report is the JSON document. Its figures are rank 0's; Ranks is the job's size.
type report struct {
	Benchmark string   `json:"benchmark"`
	Transport string   `json:"transport"`
	Progress  string   `json:"progress"`
	Ranks     int      `json:"ranks"`
	Hosts     []string `json:"hosts"` // of ranks 0 and 1
	Tables    []table  `json:"tables"`
}

// table is one case's results.
type table struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Rows  []row  `json:"rows"`
}

// row is one line of a table: latency figures (microseconds) or a bandwidth. A rank that
// runs no timed loop in the case returns a row without iterations.
type row struct {
	Bytes      int     `json:"bytes"`
	Iterations int     `json:"iterations"`
	Batch      int     `json:"batch,omitempty"`
	MedianUS   float64 `json:"median_us,omitempty"`
	AvgUS      float64 `json:"avg_us,omitempty"`
	P99US      float64 `json:"p99_us,omitempty"`
	MaxUS      float64 `json:"max_us,omitempty"`
	MBps       float64 `json:"MB_per_s,omitempty"`
	// VCSW and IVCSW are the process's voluntary and involuntary context switches (every
	// thread's, getrusage) per timed iteration, averaged over the ranks that ran the
	// timed loop (overRanks).
	VCSW  float64 `json:"vcsw_per_call"`
	IVCSW float64 `json:"ivcsw_per_call"`
}

func run(ctx context.Context, o options) error {
	w, err := runtime.Init(ctx)
	if err != nil {
		return err
	}
	if err := checkRanks(w.Size()); err != nil {
		w.Finalize(ctx)
		return err
	}
	text := io.Writer(os.Stdout)
	if w.Rank() != 0 || o.jsonFlag {
		text = io.Discard
	}
	rep, err := measureAll(ctx, w, o, text)
	if err != nil {
		return err
	}
	if w.Rank() == 0 && o.jsonOut != "" {
		if err := benchkit.WriteJSON(rep, o.jsonOut); err != nil {
			return err
		}
	}
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return w.Finalize(fctx)
}

// checkRanks returns an error unless n ranks pair up (rank r with rank r^1): an even
// count of at least 2.
func checkRanks(n int) error {
	if n >= 2 && n%2 == 0 {
		return nil
	}
	fix := "-n 2"
	if n > 1 {
		fix = fmt.Sprintf("-n %d or -n %d", n-1, n+1)
	}
	return fmt.Errorf("the job has %d ranks: want an even count of at least 2, as rank r pairs with rank r^1 (run it as: golaunch %s rmabench)", n, fix)
}

// measureAll runs the selected cases and returns the report: complete at rank 0, which
// also prints the tables to text. The job's size must pass checkRanks.
func measureAll(ctx context.Context, w *runtime.World, o options, text io.Writer) (report, error) {
	rep := report{Benchmark: "rmabench", Transport: w.Transport(w.Rank() ^ 1), Progress: os.Getenv(runtime.EnvProgress),
		Ranks: w.Size(), Hosts: []string{w.HostOf(0), w.HostOf(1)}}
	if rep.Progress == "" {
		rep.Progress = "hybrid"
	}
	fmt.Fprintf(text, "# gorma rmabench (OSU one-sided method): transport %s, progress %s, hosts %s and %s\n",
		rep.Transport, rep.Progress, rep.Hosts[0], rep.Hosts[1])
	if rep.Ranks > 2 {
		fmt.Fprintln(text, pairsLine(rep.Ranks))
	}
	fmt.Fprintf(text, "# latency: median/avg/p99 in microseconds; a sample is the mean of a batch of up to %d operations\n", maxBatch)
	b, err := newBench(ctx, w, o)
	if err != nil {
		return rep, err
	}
	// The setup's garbage goes back to the system now, not in the background scavenger's
	// bursts of about a millisecond beside a timed loop. Later collections free little:
	// the heap keeps those pages, as a running program's heap does.
	debug.FreeOSMemory()
	for _, c := range cases {
		if !selected(o.tests, c.name) {
			continue
		}
		tab := table{Name: c.name, Title: c.title}
		fmt.Fprintf(text, "\n# %s: %s\n%s\n", c.name, c.title, header(c.kind))
		for _, size := range b.sizesOf(c) {
			// Collect garbage first, as Go's testing package does before a benchmark: a
			// collection that the last size's garbage starts must not run beside a
			// timed loop.
			goruntime.GC()
			if err := runtime.Barrier(ctx, w); err != nil {
				return rep, err
			}
			r, err := c.run(ctx, b, size)
			if err == nil {
				err = overRanks(ctx, w, &r)
			}
			if err != nil {
				return rep, fmt.Errorf("%s at %d bytes: %w", c.name, size, err)
			}
			tab.Rows = append(tab.Rows, r)
			fmt.Fprintln(text, formatRow(c.kind, r))
		}
		rep.Tables = append(rep.Tables, tab)
	}
	return rep, b.free(ctx)
}

// pairsLine is the header line of a job of n > 2 ranks. The C twin prints the same line.
func pairsLine(n int) string {
	return fmt.Sprintf("# %d ranks in pairs (0 with 1, 2 with 3, ...): every even rank measures against its partner at once, "+
		"the figures are rank 0's; the Fences and alloc_free span all %d ranks", n, n)
}

// overRanks replaces r's context switches with their mean over the ranks whose row counts
// iterations: those that ran the case's timed loop. Every rank calls it; r is complete at
// every rank.
func overRanks(ctx context.Context, w *runtime.World, r *row) error {
	sum := []float64{r.VCSW, r.IVCSW, 0}
	if r.Iterations > 0 {
		sum[2] = 1
	}
	if err := collectives.Allreduce(ctx, w, nil, sum, collectives.Sum[float64]()); err != nil {
		return err
	}
	r.VCSW, r.IVCSW = 0, 0
	if sum[2] > 0 {
		r.VCSW, r.IVCSW = sum[0]/sum[2], sum[1]/sum[2]
	}
	return nil
}

// header is the column header of a table of kind k.
func header(k kind) string {
	switch k {
	case kindBandwidth:
		return fmt.Sprintf("%-12s %12s %12s", "#bytes", "iterations", "MB/s")
	case kindMax:
		return fmt.Sprintf("%-12s %12s %12s %12s", "#bytes", "iterations", "median_us", "max_us")
	case kindTail:
		return fmt.Sprintf("%-12s %12s %12s %12s %12s %12s", "#bytes", "iterations", "median_us", "avg_us", "p99_us", "max_us")
	}
	return fmt.Sprintf("%-12s %12s %12s %12s %12s", "#bytes", "iterations", "median_us", "avg_us", "p99_us")
}

func formatRow(k kind, r row) string {
	switch k {
	case kindBandwidth:
		return fmt.Sprintf("%-12d %12d %12.2f", r.Bytes, r.Iterations, r.MBps)
	case kindMax:
		if r.Iterations == 0 {
			return fmt.Sprintf("%-12d %12d %12s %12s", r.Bytes, r.Iterations, "-", "-")
		}
		return fmt.Sprintf("%-12d %12d %12.3f %12.3f", r.Bytes, r.Iterations, r.MedianUS, r.MaxUS)
	case kindTail:
		return fmt.Sprintf("%-12d %12d %12.3f %12.3f %12.3f %12.3f", r.Bytes, r.Iterations, r.MedianUS, r.AvgUS, r.P99US, r.MaxUS)
	}
	return fmt.Sprintf("%-12d %12d %12.3f %12.3f %12.3f", r.Bytes, r.Iterations, r.MedianUS, r.AvgUS, r.P99US)
}
