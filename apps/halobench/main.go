package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
	"github.com/gorma-hpc/gorma/runtime"
)

// maxN bounds N so that a ghost value (valueOf) stays an exact float64 and a matrix
// (N rows of N+2 float64) stays addressable on every platform.
const maxN = 1 << 16

// options are the command's flags.
type options struct {
	sizes    []int
	iters    int
	warmup   int
	manual   bool
	jsonOut  string
	jsonFlag bool
	profile  string
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := pflag.NewFlagSet("halobench", pflag.ContinueOnError)
	sizeList := fs.String("sizes", "64,256,1024,4096", "comma-separated matrix sizes N (each rank owns N x N float64, plus two ghost columns)")
	fs.IntVar(&o.iters, "iters", 1000, "timed exchanges per size")
	fs.IntVar(&o.warmup, "warmup", 100, "untimed exchanges per size before the timed ones")
	fs.BoolVar(&o.manual, "manual", false, "pack the columns by hand into contiguous slices and use Sendrecv instead of a vector type and SendrecvType")
	fs.StringVar(&o.jsonOut, "json", "", "print one JSON document instead of text; --json=FILE writes it to FILE as well as the text")
	fs.Lookup("json").NoOptDefVal = "-"
	fs.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile of each rank to FILE.RANK")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.jsonFlag = o.jsonOut == "-"
	switch {
	case o.iters < 1 || o.warmup < 1:
		return o, errors.New("--iters and --warmup must be at least 1")
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, f := range strings.Split(*sizeList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 || n > maxN {
			return o, fmt.Errorf("--sizes: %q: want matrix sizes N from 2 to %d, such as 64,256,1024,4096", f, maxN)
		}
		o.sizes = append(o.sizes, n)
	}
	return o, nil
}

func main() { benchkit.Main("halobench", os.Args[1:], parseFlags, run) }

// report is the JSON document; bench/mpi/halobench.c writes the same shape.
type report struct {
	Benchmark string   `json:"benchmark"`
	System    string   `json:"system"`
	Mode      string   `json:"mode"` // "datatype" (a vector type) or "manual" (packed by hand)
	Ranks     int      `json:"ranks"`
	Hosts     []string `json:"hosts"`
	Transport string   `json:"transport"`
	Progress  string   `json:"progress"`
	Rows      []row    `json:"rows"`
}

// row is one matrix size's figure.
type row struct {
	N           int     `json:"n"`
	ColumnBytes int     `json:"column_bytes"`
	Iterations  int     `json:"iterations"`
	ExchangeUS  float64 `json:"exchange_us"` // mean time of one exchange at rank 0
}

func run(ctx context.Context, o options) error {
	w, err := runtime.Init(ctx)
	if err != nil {
		return err
	}
	if w.Size() < 2 {
		w.Finalize(ctx)
		return fmt.Errorf("needs at least 2 ranks, the job has %d (run it as: golaunch -n 2 halobench)", w.Size())
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

// measure runs the exchange at every size and returns the report (its figures are
// this rank's; rank 0's are the ones printed to text).
func measure(ctx context.Context, w *runtime.World, o options, text io.Writer) (report, error) {
	right := (w.Rank() + 1) % w.Size()
	rep := report{Benchmark: "halobench", System: "gorma", Mode: "datatype", Ranks: w.Size(),
		Transport: w.Transport(right), Progress: os.Getenv(runtime.EnvProgress)}
	if o.manual {
		rep.Mode = "manual"
	}
	if rep.Progress == "" {
		rep.Progress = "hybrid"
	}
	for r := 0; r < w.Size(); r++ {
		if h := w.HostOf(r); len(rep.Hosts) == 0 || rep.Hosts[len(rep.Hosts)-1] != h {
			rep.Hosts = append(rep.Hosts, h)
		}
	}
	how := "datatype.Vector column, SendrecvType"
	if o.manual {
		how = "columns packed by hand, Sendrecv"
	}
	fmt.Fprintf(text, "# gorma halobench (%s): %d ranks in a ring, transport %s, progress %s, hosts %s\n",
		how, w.Size(), rep.Transport, rep.Progress, strings.Join(rep.Hosts, ","))
	fmt.Fprintf(text, "# one exchange: both boundary columns, to and from both neighbours\n%-8s %12s %12s %12s\n",
		"#N", "column_bytes", "iterations", "exchange_us")
	if err := warmJob(ctx, w, o.manual); err != nil {
		return rep, fmt.Errorf("rank %d, the job's warm-up: %w", w.Rank(), err)
	}
	for _, n := range o.sizes {
		r, err := measureSize(ctx, w, n, o)
		if err != nil {
			return rep, fmt.Errorf("rank %d, N=%d: %w", w.Rank(), n, err)
		}
		rep.Rows = append(rep.Rows, r)
		fmt.Fprintf(text, "%-8d %12d %12d %12.3f\n", r.N, r.ColumnBytes, r.Iterations, r.ExchangeUS)
	}
	return rep, nil
}
