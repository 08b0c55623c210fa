package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// options are the command's flags.
type options struct {
	test     string
	tests    []string // --test as the tests to run, in testOrder (or overlap alone)
	sizes    []int    // the vector sizes in bytes, from --sizes or --min-size..--max-size
	minSize  int
	maxSize  int
	iters    int
	minIters int
	sizeTime time.Duration
	algo     string
	fresh    bool
	polls    int
	scratch  string
	jsonOut  string
	jsonFlag bool
	profile  string
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := pflag.NewFlagSet("allreducebench", pflag.ContinueOnError)
	fs.StringVar(&o.test, "test", "all", "comma-separated tests: allreduce, bcast, reduce, allgather, alltoall, gather, scatter, barrier; all (allreduce,barrier); colls (all eight); or overlap alone (Iallreduce beside a computation)")
	o.minSize, o.maxSize = 8, 64<<20
	fs.Var((*benchkit.Size)(&o.minSize), "min-size", "smallest vector in bytes, a multiple of 8 such as 8, 4K or 1M (powers of two from here)")
	fs.Var((*benchkit.Size)(&o.maxSize), "max-size", "largest vector in bytes (default 64M)")
	sizeList := fs.String("sizes", "", "comma-separated vector sizes in bytes (multiples of 8, such as 8,1M,24M) instead of the powers of two from --min-size to --max-size")
	fs.IntVar(&o.iters, "iters", 1000, "calls per size up to 16 KiB (scaled down above); Barriers")
	fs.IntVar(&o.minIters, "min-iters", 20, "fewest calls per size when scaling down")
	fs.DurationVar(&o.sizeTime, "size-time", 0, "cap each size's measured calls at about this long (0: no cap; never below 3 calls)")
	fs.StringVar(&o.algo, "algo", "", "force an Allreduce algorithm (sets "+collectives.EnvAllreduce+"): auto, recdbl, rabenseifner, ring, direct, lanes, shm, hier")
	fs.BoolVar(&o.fresh, "fresh", false, "allocate new send and receive buffers for every call instead of reusing one pair")
	fs.IntVar(&o.polls, "polls", 0, "with --test overlap: Test calls spread through the overlapped computation (0: it calls nothing)")
	fs.StringVar(&o.scratch, "scratch", "", "the collectives' scratch (sets "+collectives.EnvScratch+"): arena (reused, pre-registered) or fresh (mapped, registered and released by every call); default: "+collectives.EnvScratch+", else arena")
	fs.StringVar(&o.jsonOut, "json", "", "print one JSON document instead of text; --json=FILE writes it to FILE as well as the text")
	fs.Lookup("json").NoOptDefVal = "-"
	fs.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile of each rank to FILE.RANK")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.jsonFlag = o.jsonOut == "-"
	var err error
	if o.tests, err = parseTests(o.test); err != nil {
		return o, err
	}
	switch {
	case o.minSize < 8 || o.minSize%8 != 0 || o.maxSize < o.minSize:
		return o, fmt.Errorf("--min-size %d and --max-size %d: want 8 <= min <= max, min a multiple of 8", o.minSize, o.maxSize)
	case o.iters < 1 || o.minIters < 1:
		return o, errors.New("--iters and --min-iters must be at least 1")
	case o.sizeTime < 0:
		return o, errors.New("--size-time must not be negative")
	case o.polls < 0:
		return o, errors.New("--polls must not be negative")
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if o.scratch != "" {
		if _, err := collectives.ParseScratch(o.scratch); err != nil {
			return o, fmt.Errorf("--scratch %q: want arena or fresh", o.scratch)
		}
	}
	if *sizeList == "" && o.tests[0] == "overlap" && !fs.Changed("min-size") && !fs.Changed("max-size") {
		o.sizes, o.maxSize = []int{overlapSize16M}, overlapSize16M
		return o, nil
	}
	if *sizeList == "" {
		for s := o.minSize; s <= o.maxSize; s *= 2 {
			o.sizes = append(o.sizes, s)
		}
		return o, nil
	}
	for _, f := range strings.Split(*sizeList, ",") {
		var v benchkit.Size
		if err := v.Set(strings.TrimSpace(f)); err != nil || v < 8 || v%8 != 0 {
			return o, fmt.Errorf("--sizes: %q: want a multiple of 8 bytes such as 8, 4K or 24M", f)
		}
		o.sizes = append(o.sizes, int(v))
	}
	o.maxSize = slices.Max(o.sizes)
	return o, nil
}

// testOrder is the order in which the tests of a --test list run.
var testOrder = []string{"allreduce", "bcast", "reduce", "allgather", "alltoall", "gather", "scatter", "barrier"}

// parseTests reads --test: overlap alone, or a comma-separated list of testOrder's names
// and the aliases all (allreduce and barrier) and colls (every test of testOrder). The
// tests run in testOrder, whatever the list's order.
func parseTests(s string) ([]string, error) {
	if s == "overlap" {
		return []string{"overlap"}, nil
	}
	want := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		switch f = strings.TrimSpace(f); {
		case f == "all":
			want["allreduce"], want["barrier"] = true, true
		case f == "colls":
			for _, t := range testOrder {
				want[t] = true
			}
		case slices.Contains(testOrder, f):
			want[f] = true
		default:
			return nil, fmt.Errorf("--test %q: want a comma-separated list of %s, all or colls; or overlap alone", s, strings.Join(testOrder, ", "))
		}
	}
	var tests []string
	for _, t := range testOrder {
		if want[t] {
			tests = append(tests, t)
		}
	}
	return tests, nil
}

func main() { benchkit.Main("allreducebench", os.Args[1:], parseFlags, run) }

// report is the JSON document; bench/mpi/allreducebench.c writes the same shape.
type report struct {
	Benchmark string   `json:"benchmark"`
	System    string   `json:"system"`
	Ranks     int      `json:"ranks"`
	Hosts     []string `json:"hosts"`
	Transport string   `json:"transport"`
	Algorithm string   `json:"algorithm"`
	Progress  string   `json:"progress"`
	Fresh     bool     `json:"fresh"`
	Scratch   string   `json:"scratch"`
	// GOMAXPROCS is rank 0's, after Init applied GORMA_PROCS.
	GOMAXPROCS int          `json:"gomaxprocs"`
	Allreduce  []row        `json:"allreduce,omitempty"`
	Bcast      []row        `json:"bcast,omitempty"`
	Reduce     []row        `json:"reduce,omitempty"`
	Allgather  []row        `json:"allgather,omitempty"`
	Alltoall   []row        `json:"alltoall,omitempty"`
	Gather     []row        `json:"gather,omitempty"`
	Scatter    []row        `json:"scatter,omitempty"`
	Barrier    []row        `json:"barrier,omitempty"`
	Overlap    []overlapRow `json:"overlap,omitempty"`
}

// rows is the report's table for a test of testOrder.
func (r *report) rows(test string) *[]row {
	switch test {
	case "allreduce":
		return &r.Allreduce
	case "bcast":
		return &r.Bcast
	case "reduce":
		return &r.Reduce
	case "allgather":
		return &r.Allgather
	case "alltoall":
		return &r.Alltoall
	case "gather":
		return &r.Gather
	case "scatter":
		return &r.Scatter
	case "barrier":
		return &r.Barrier
	}
	panic("allreducebench: no table for test " + test)
}

// row is one size's figures: latency in microseconds over the ranks, bandwidth in GB/s.
// Bytes is the vector (allreduce, bcast, reduce) or one rank's block (allgather,
// alltoall, gather, scatter); see collBench.bandwidth for what the bandwidths count.
type row struct {
	Bytes      int     `json:"bytes"`
	Iterations int     `json:"iterations"`
	AvgUS      float64 `json:"avg_us"`
	MinUS      float64 `json:"min_us"`
	MaxUS      float64 `json:"max_us"`
	AlgBW      float64 `json:"algbw_GBps,omitempty"`
	BusBW      float64 `json:"busbw_GBps,omitempty"`
	// VCSW and IVCSW are the process's voluntary and involuntary context switches (every
	// thread's, getrusage) per timed call, averaged over the ranks.
	VCSW  float64 `json:"vcsw_per_call"`
	IVCSW float64 `json:"ivcsw_per_call"`
}

func run(ctx context.Context, o options) error {
	if o.algo != "" {
		// collectives reads the variable at a World's first collective call.
		if err := os.Setenv(collectives.EnvAllreduce, o.algo); err != nil {
			return err
		}
	}
	if o.scratch != "" {
		// For the record (the report reads it back) and for anything started later.
		if err := os.Setenv(collectives.EnvScratch, o.scratch); err != nil {
			return err
		}
	}
	w, err := runtime.Init(ctx)
	if err != nil {
		return err
	}
	stopProfile, err := benchkit.StartProfile(o.profile, w.Rank())
	if err != nil {
		w.Abort(1, err.Error())
		return err
	}
	defer stopProfile()
	text := io.Writer(os.Stdout)
	if w.Rank() != 0 || o.jsonFlag {
		text = io.Discard
	}
	rep, err := measure(ctx, w, o, text)
	if err != nil {
		w.Abort(1, err.Error())
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

// setScratch applies --scratch (every rank does, before its first collective call) and
// returns the policy in force: --scratch, else GORMA_SCRATCH, else arena.
func setScratch(o options) (collectives.Scratch, error) {
	if o.scratch != "" {
		s, err := collectives.ParseScratch(o.scratch)
		if err != nil {
			return s, err
		}
		collectives.SetScratch(s)
	}
	return collectives.ScratchPolicy()
}

// newReport describes the job.
func newReport(w *runtime.World, o options, scratch collectives.Scratch) report {
	rep := report{Benchmark: "allreducebench", System: "gorma", Ranks: w.Size(),
		Algorithm: os.Getenv(collectives.EnvAllreduce), Progress: os.Getenv(runtime.EnvProgress), Fresh: o.fresh,
		Scratch: scratch.String(), GOMAXPROCS: goruntime.GOMAXPROCS(0)}
	hosts := map[string]bool{}
	for r := range w.Size() {
		if h := w.HostOf(r); !hosts[h] {
			hosts[h] = true
			rep.Hosts = append(rep.Hosts, h)
		}
	}
	rep.Transport = "self"
	if w.Size() > 1 {
		rep.Transport = w.Transport((w.Rank() + 1) % w.Size())
	}
	if rep.Algorithm == "" {
		rep.Algorithm = "auto"
	}
	if rep.Progress == "" {
		rep.Progress = "hybrid"
	}
	return rep
}
