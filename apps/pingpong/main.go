package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// options are the command's flags.
type options struct {
	test     string
	minSize  int
	maxSize  int
	iters    int
	bwIters  int
	window   int
	jsonOut  string
	jsonFlag bool
	profile  string
	pairs    bool
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := pflag.NewFlagSet("pingpong", pflag.ContinueOnError)
	fs.StringVar(&o.test, "test", "all", "latency, bw or all")
	o.minSize, o.maxSize = 8, 4<<20
	fs.Var((*benchkit.Size)(&o.minSize), "min-size", "smallest message in bytes, such as 8, 4K or 1M (powers of two from here)")
	fs.Var((*benchkit.Size)(&o.maxSize), "max-size", "largest message in bytes (default 4M)")
	fs.IntVar(&o.iters, "iters", 10000, "latency round trips per size up to 16 KiB (scaled down above)")
	fs.IntVar(&o.bwIters, "bw-iters", 100, "bandwidth windows per size up to 16 KiB (a fifth above)")
	fs.IntVar(&o.window, "window", 64, "messages in flight per bandwidth window")
	fs.StringVar(&o.jsonOut, "json", "", "print one JSON document instead of text; --json=FILE writes it to FILE as well as the text")
	fs.Lookup("json").NoOptDefVal = "-"
	fs.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile of each rank to FILE.RANK")
	fs.BoolVar(&o.pairs, "pairs", false, "any even number of ranks: ranks 2k and 2k+1 measure concurrently; rank 0 reports the median over the pairs")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.jsonFlag = o.jsonOut == "-"
	switch {
	case o.test != "all" && o.test != "latency" && o.test != "bw":
		return o, fmt.Errorf("--test %q: want latency, bw or all", o.test)
	case o.minSize < 0 || o.maxSize < o.minSize:
		return o, fmt.Errorf("--min-size %d and --max-size %d: want 0 <= min <= max", o.minSize, o.maxSize)
	case o.iters < 1 || o.bwIters < 1 || o.window < 1:
		return o, errors.New("--iters, --bw-iters and --window must be at least 1")
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return o, nil
}

func main() { benchkit.Main("pingpong", os.Args[1:], parseFlags, run) }

// report is the JSON document.
type report struct {
	Benchmark  string       `json:"benchmark"`
	Transport  string       `json:"transport"`
	Progress   string       `json:"progress"`
	EagerLimit string       `json:"eager_limit,omitempty"`
	Hosts      []string     `json:"hosts"`
	Pairs      int          `json:"pairs"`
	Latency    []latencyRow `json:"latency,omitempty"`
	Bandwidth  []bwRow      `json:"bandwidth,omitempty"`
}

// latencyRow is one size of the latency test; an iteration is one round trip.
type latencyRow struct {
	Bytes      int     `json:"bytes"`
	Iterations int     `json:"iterations"`
	LatencyUS  float64 `json:"latency_us"`
	// VCSW and IVCSW are the process's voluntary and involuntary context switches (every
	// thread's, getrusage) per timed iteration, averaged over all ranks.
	VCSW  float64 `json:"vcsw_per_call"`
	IVCSW float64 `json:"ivcsw_per_call"`
}

// bwRow is one size of the bandwidth test; an iteration is one window and its
// acknowledgement.
type bwRow struct {
	Bytes      int     `json:"bytes"`
	Iterations int     `json:"iterations"`
	MBps       float64 `json:"MB_per_s"`
	VCSW       float64 `json:"vcsw_per_call"` // as in latencyRow
	IVCSW      float64 `json:"ivcsw_per_call"`
}

func run(ctx context.Context, o options) error {
	w, err := runtime.Init(ctx)
	if err != nil {
		return err
	}
	if err := checkSize(w.Size(), o.pairs); err != nil {
		w.Finalize(ctx)
		return err
	}
	stopProfile, err := benchkit.StartProfile(o.profile, w.Rank())
	if err != nil {
		return err
	}
	defer stopProfile()
	text := io.Writer(os.Stdout)
	if w.Rank() != 0 || o.jsonFlag {
		text = io.Discard
	}
	rep, err := measure(ctx, w, o, text)
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

// checkSize says whether a job of n ranks suits the mode.
func checkSize(n int, pairs bool) error {
	switch {
	case !pairs && n != 2:
		return fmt.Errorf("needs exactly 2 ranks, the job has %d (run it as: golaunch -n 2 pingpong, or with --pairs on an even number)", n)
	case pairs && (n < 2 || n%2 != 0):
		return fmt.Errorf("--pairs needs an even number of ranks, the job has %d", n)
	}
	return nil
}

// measure runs the selected tests between this rank and its partner (rank^1) and
// returns the report: complete at rank 0, which also prints the tables to text.
func measure(ctx context.Context, w *runtime.World, o options, text io.Writer) (report, error) {
	peer := w.Rank() ^ 1
	rep := report{Benchmark: "pingpong", Transport: w.Transport(peer), Progress: os.Getenv(runtime.EnvProgress),
		EagerLimit: os.Getenv(runtime.EnvEagerLimit), Hosts: []string{w.HostOf(0), w.HostOf(1)}, Pairs: w.Size() / 2}
	if rep.Progress == "" {
		rep.Progress = "hybrid"
	}
	fmt.Fprintf(text, "# gorma pingpong (OSU method): transport %s, progress %s, hosts %s and %s\n",
		rep.Transport, rep.Progress, rep.Hosts[0], rep.Hosts[1])
	if rep.Pairs > 1 {
		fmt.Fprintf(text, "# %d concurrent pairs (ranks 2k and 2k+1); figures are the median over the pairs\n", rep.Pairs)
	}
	sbuf, rbuf := make([]byte, max(o.maxSize, 4)), make([]byte, max(o.maxSize, 4))
	for i := range sbuf {
		sbuf[i], rbuf[i] = byte(i*7+1), byte(i*3+2)
	}
	if err := warmJob(ctx, w); err != nil {
		return rep, err
	}
	if o.test != "bw" {
		fmt.Fprintf(text, "# latency: half round trip\n%-12s %12s\n", "#bytes", "latency_us")
		for size := range sizes(o) {
			row, err := latency(ctx, w, sbuf[:size], rbuf[:size], o.iters)
			if err == nil {
				row.LatencyUS, err = overPairs(ctx, w, row.LatencyUS)
			}
			if err == nil {
				row.VCSW, row.IVCSW, err = overRanks(ctx, w, row.VCSW, row.IVCSW)
			}
			if err != nil {
				return rep, fmt.Errorf("latency at %d bytes: %w", size, err)
			}
			rep.Latency = append(rep.Latency, row)
			fmt.Fprintf(text, "%-12d %12.2f\n", size, row.LatencyUS)
		}
	}
	if o.test != "latency" {
		fmt.Fprintf(text, "# bandwidth: window of %d messages, then an acknowledgement\n%-12s %12s\n", o.window, "#bytes", "MB/s")
		for size := range sizes(o) {
			row, err := bandwidth(ctx, w, sbuf[:size], rbuf[:size], o)
			if err == nil {
				row.MBps, err = overPairs(ctx, w, row.MBps)
			}
			if err == nil {
				row.VCSW, row.IVCSW, err = overRanks(ctx, w, row.VCSW, row.IVCSW)
			}
			if err != nil {
				return rep, fmt.Errorf("bandwidth at %d bytes: %w", size, err)
			}
			rep.Bandwidth = append(rep.Bandwidth, row)
			fmt.Fprintf(text, "%-12d %12.2f\n", size, row.MBps)
		}
	}
	return rep, nil
}

// overPairs gathers the figure v of every pair's even rank at rank 0 and returns their
// median there (v itself elsewhere, and with one pair).
func overPairs(ctx context.Context, w *runtime.World, v float64) (float64, error) {
	pairs := w.Size() / 2
	switch {
	case pairs == 1 || w.Rank()%2 != 0:
		return v, nil
	case w.Rank() != 0:
		return v, runtime.Send(ctx, w, []float64{v}, 0, 4)
	}
	vals := []float64{v}
	for p := 1; p < pairs; p++ {
		got := []float64{0}
		if _, err := runtime.Recv(ctx, w, got, 2*p, 4); err != nil {
			return 0, err
		}
		vals = append(vals, got[0])
	}
	return median(vals), nil
}

// overRanks returns the mean of vcsw and of ivcsw over all ranks, at every rank.
func overRanks(ctx context.Context, w *runtime.World, vcsw, ivcsw float64) (float64, float64, error) {
	sum := []float64{vcsw, ivcsw}
	if err := collectives.Allreduce(ctx, w, nil, sum, collectives.Sum[float64]()); err != nil {
		return 0, 0, err
	}
	n := float64(w.Size())
	return sum[0] / n, sum[1] / n, nil
}

// perIter returns the context switches since cs (benchkit.Switches) per iteration of iters.
func perIter(cs [2]float64, iters int) (vcsw, ivcsw float64) {
	now := benchkit.Switches()
	return (now[0] - cs[0]) / float64(iters), (now[1] - cs[1]) / float64(iters)
}

// median is the middle of vals (the mean of the two middle ones for an even count);
// it sorts vals.
func median(vals []float64) float64 {
	slices.Sort(vals)
	n := len(vals)
	if n%2 == 1 {
		return vals[n/2]
	}
	return (vals[n/2-1] + vals[n/2]) / 2
}

// sizes yields the message sizes: powers of two from min-size to max-size (0 first if
// min-size is 0).
func sizes(o options) func(func(int) bool) {
	return func(yield func(int) bool) {
		s := o.minSize
		if s == 0 {
			if !yield(0) {
				return
			}
			s = 1
		}
		for ; s <= o.maxSize; s *= 2 {
			if !yield(s) {
				return
			}
		}
	}
}

// scaled is the iteration count for size: base up to 16 KiB, in proportion above.
func scaled(base, size int) int {
	if size <= 16<<10 {
		return base
	}
	return max(base*(16<<10)/size, 20)
}

// jobWarmup is how long each pair ping-pongs, untimed, before the first measurement. A
// job's first milliseconds (tens of them) are slower than the rest, whichever runtime:
// short round trips timed in batches from the job's first Barrier take several times
// their steady time at first. A run of the compare's length would carry that into its
// figure. The tenth of the iterations warmed up per size does not cover it at small
// sizes. The C twin warms up the same way.
const jobWarmup = 50 * time.Millisecond

// warmJob ping-pongs 8 bytes with the pair's other rank until the even rank has spent
// jobWarmup; the even rank's decision travels in the message's first byte, so both stop
// after the same round trip.
func warmJob(ctx context.Context, w *runtime.World) error {
	buf := make([]byte, 8)
	peer := w.Rank() ^ 1
	start := time.Now()
	for {
		if w.Rank()%2 == 0 {
			buf[0] = 0
			if time.Since(start) < jobWarmup {
				buf[0] = 1
			}
			if err := runtime.Send(ctx, w, buf, peer, 2); err != nil {
				return err
			}
			if _, err := runtime.Recv(ctx, w, buf, peer, 2); err != nil {
				return err
			}
		} else {
			if _, err := runtime.Recv(ctx, w, buf, peer, 2); err != nil {
				return err
			}
			if err := runtime.Send(ctx, w, buf, peer, 2); err != nil {
				return err
			}
		}
		if buf[0] == 0 {
			return nil
		}
	}
}

func latency(ctx context.Context, w *runtime.World, sbuf, rbuf []byte, base int) (latencyRow, error) {
	iters := scaled(base, len(sbuf))
	warmup := max(iters/10, 3)
	peer := w.Rank() ^ 1
	if err := runtime.Barrier(ctx, w); err != nil {
		return latencyRow{}, err
	}
	var start time.Time
	var cs [2]float64
	for i := 0; i < warmup+iters; i++ {
		if i == warmup {
			cs = benchkit.Switches() // before the clock starts: the system call is not timed
			start = time.Now()
		}
		if w.Rank()%2 == 0 {
			if err := runtime.Send(ctx, w, sbuf, peer, 1); err != nil {
				return latencyRow{}, err
			}
			if _, err := runtime.Recv(ctx, w, rbuf, peer, 1); err != nil {
				return latencyRow{}, err
			}
		} else {
			if _, err := runtime.Recv(ctx, w, rbuf, peer, 1); err != nil {
				return latencyRow{}, err
			}
			if err := runtime.Send(ctx, w, sbuf, peer, 1); err != nil {
				return latencyRow{}, err
			}
		}
	}
	us := float64(time.Since(start).Nanoseconds()) / 1e3 / float64(2*iters)
	vcsw, ivcsw := perIter(cs, iters)
	return latencyRow{Bytes: len(sbuf), Iterations: iters, LatencyUS: us, VCSW: vcsw, IVCSW: ivcsw}, nil
}

func bandwidth(ctx context.Context, w *runtime.World, sbuf, rbuf []byte, o options) (bwRow, error) {
	iters, warmup := o.bwIters, max(o.bwIters/10, 2)
	if len(sbuf) > 16<<10 {
		iters, warmup = max(iters/5, 2), max(warmup/5, 1)
	}
	peer := w.Rank() ^ 1
	reqs, window := make([]runtime.Request, o.window), make([]*runtime.Request, o.window)
	for k := range reqs {
		window[k] = &reqs[k]
	}
	ack := make([]byte, 4)
	if err := runtime.Barrier(ctx, w); err != nil {
		return bwRow{}, err
	}
	var start time.Time
	var cs [2]float64
	for i := 0; i < warmup+iters; i++ {
		if i == warmup {
			cs = benchkit.Switches() // before the clock starts: the system call is not timed
			start = time.Now()
		}
		var err error
		for k := range reqs {
			if w.Rank()%2 == 0 {
				err = runtime.IsendWith(&reqs[k], w, sbuf, peer, 2)
			} else {
				err = runtime.IrecvWith(&reqs[k], w, rbuf, peer, 2)
			}
			if err != nil {
				return bwRow{}, err
			}
		}
		if err := runtime.WaitAll(ctx, window, nil); err != nil { // as the C twin's MPI_Waitall
			return bwRow{}, err
		}
		if w.Rank()%2 == 0 {
			_, err = runtime.Recv(ctx, w, ack, peer, 3)
		} else {
			err = runtime.Send(ctx, w, ack, peer, 3)
		}
		if err != nil {
			return bwRow{}, err
		}
	}
	secs := time.Since(start).Seconds()
	vcsw, ivcsw := perIter(cs, iters)
	mbps := float64(len(sbuf)) * float64(o.window) * float64(iters) / secs / 1e6
	return bwRow{Bytes: len(sbuf), Iterations: iters, MBps: mbps, VCSW: vcsw, IVCSW: ivcsw}, nil
}
