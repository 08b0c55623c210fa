package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
	"github.com/gorma-hpc/gorma/runtime"
)

// started is when this process began running Go code: the fallback launch time.
var started = time.Now()

// options are the command's flags.
type options struct {
	iters     int
	bigIters  int
	winBytes  int
	launchNS  int64 // the job's launch, Unix nanoseconds; 0: the earliest rank's start
	shmBaseKB int64 // the host's Shmem before the job; -1: the least of the ranks' readings before Init
	jsonOut   string
	jsonFlag  bool
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := pflag.NewFlagSet("scalebench", pflag.ContinueOnError)
	fs.IntVar(&o.iters, "iters", 100, "timed Barriers and 8 B Allreduces")
	fs.IntVar(&o.bigIters, "big-iters", 10, "timed 1 MiB Allreduces")
	o.winBytes = 1 << 20
	fs.Var((*benchkit.Size)(&o.winBytes), "window-size", "bytes of window memory per rank (window.Allocate)")
	fs.Int64Var(&o.launchNS, "launch-ns", 0, "the job's launch time in Unix nanoseconds (date +%s%N before the launcher); 0: the earliest rank's start")
	fs.Int64Var(&o.shmBaseKB, "shm-base-kb", -1, "the host's /proc/meminfo Shmem in kB before the launch; -1: the least of the ranks' readings before Init")
	fs.StringVar(&o.jsonOut, "json", "", "print one JSON line instead of text; --json=FILE writes it to FILE as well as the text")
	fs.Lookup("json").NoOptDefVal = "-"
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.jsonFlag = o.jsonOut == "-"
	switch {
	case o.iters < 1 || o.bigIters < 1:
		return o, errors.New("--iters and --big-iters must be at least 1")
	case o.winBytes < 1:
		return o, errors.New("--window-size must be at least 1 byte")
	case o.launchNS < 0:
		return o, errors.New("--launch-ns must not be negative")
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return o, nil
}

func main() { benchkit.Main("scalebench", os.Args[1:], parseFlags, run) }

// report is the JSON document; bench/mpi/scalebench.c writes the same shape.
type report struct {
	Benchmark   string          `json:"benchmark"`
	System      string          `json:"system"`
	Ranks       int             `json:"ranks"`
	Hosts       int             `json:"hosts"`
	Iters       int             `json:"iters"`
	BigIters    int             `json:"big_iters"`
	WindowBytes int             `json:"window_bytes"`
	LaunchFrom  string          `json:"launch_from"`   // "script" (--launch-ns) or "first rank"
	ShmBaseFrom string          `json:"shm_base_from"` // "script" (--shm-base-kb) or "ranks before Init"
	ShmBaseKB   int64           `json:"shmem_base_kb"`
	ShmPeakKB   int64           `json:"shmem_peak_kb"`
	ShmKB       int64           `json:"shmem_kb"` // peak - base: the job's shared memory on rank 0's host
	Figures     map[string]stat `json:"figures"`
}

// stat is one figure over the ranks.
type stat struct {
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

func run(ctx context.Context, o options) error {
	pre, err := shmemKB()
	if err != nil {
		return err
	}
	w, err := runtime.Init(ctx)
	if err != nil {
		return err
	}
	initDone := time.Now()
	rep, err := measure(ctx, w, o, sample{preShmKB: pre, start: started, initDone: initDone})
	if err != nil {
		w.Abort(1, err.Error())
		return err
	}
	if w.Rank() == 0 {
		if o.jsonOut != "" {
			if err := benchkit.WriteJSONLine(rep, o.jsonOut); err != nil {
				return err
			}
		}
		if !o.jsonFlag {
			printText(os.Stdout, rep)
		}
	}
	fctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	return w.Finalize(fctx)
}

// printText writes the report as a table.
func printText(out io.Writer, rep report) {
	fmt.Fprintf(out, "# gorma scalebench: %d ranks on %d host(s); startup from the %s's launch time\n", rep.Ranks, rep.Hosts, rep.LaunchFrom)
	fmt.Fprintf(out, "# shared memory on rank 0's host: %d kB (Shmem %d kB at the peak, %d kB before the job, from the %s)\n",
		rep.ShmKB, rep.ShmPeakKB, rep.ShmBaseKB, rep.ShmBaseFrom)
	fmt.Fprintf(out, "%-18s %14s %14s\n", "# figure", "median", "max")
	for _, f := range figures {
		if f.name == "" {
			continue
		}
		s := rep.Figures[f.name]
		fmt.Fprintf(out, "%-18s %14.3f %14.3f\n", f.name, s.Median, s.Max)
	}
}
