package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
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
	syncs    []string
	sizes    []int // halo bytes
	iters    int
	warmup   int
	sizeTime time.Duration
	jsonOut  string
	jsonFlag bool
}

// fullCount is the largest halo that runs --iters and --warmup in full; larger ones run
// fewer in proportion.
const fullCount = 16 << 10

func parseFlags(args []string) (options, error) {
	var o options
	fs := pflag.NewFlagSet("rmahalo", pflag.ContinueOnError)
	syncList := fs.String("sync", "fence,pscw,lock,lock_all", "comma-separated modes: fence, pscw, lock, lock_all")
	minSize, maxSize := 8, 64<<10
	fs.Var((*benchkit.Size)(&minSize), "min-size", "smallest halo in bytes, a multiple of 8 (powers of two from here)")
	fs.Var((*benchkit.Size)(&maxSize), "max-size", "largest halo in bytes (default 64K)")
	sizeList := fs.String("sizes", "", "comma-separated halo sizes in bytes, such as 8,4K,64K, instead of --min-size to --max-size")
	fs.IntVar(&o.iters, "iters", 1000, "timed iterations per size up to 16 KiB (fewer in proportion above, at least 20)")
	fs.IntVar(&o.warmup, "warmup", 100, "untimed iterations per size before the timed ones (fewer in proportion above 16 KiB, at least 1)")
	fs.DurationVar(&o.sizeTime, "size-time", 0, "cap each size's timed iterations at about this long (0: no cap; never below 3 iterations)")
	fs.StringVar(&o.jsonOut, "json", "", "print one JSON document instead of text; --json=FILE writes it to FILE as well as the text")
	fs.Lookup("json").NoOptDefVal = "-"
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.jsonFlag = o.jsonOut == "-"
	switch {
	case o.iters < 1 || o.warmup < 1:
		return o, errors.New("--iters and --warmup must be at least 1")
	case o.sizeTime < 0:
		return o, errors.New("--size-time must not be negative")
	case o.iters+o.warmup >= maxIters:
		return o, fmt.Errorf("--iters plus --warmup must be under %d", maxIters)
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, s := range strings.Split(*syncList, ",") {
		s = strings.TrimSpace(s)
		if !slices.ContainsFunc(modes, func(m syncMode) bool { return m.name == s }) {
			return o, fmt.Errorf("--sync %q: want fence, pscw, lock or lock_all", s)
		}
		o.syncs = append(o.syncs, s)
	}
	var err error
	if o.sizes, err = sizesOf(*sizeList, minSize, maxSize); err != nil {
		return o, err
	}
	return o, nil
}

// sizesOf is the list of halo sizes: list if it is not empty, else the powers of two
// times lo up to hi.
func sizesOf(list string, lo, hi int) ([]int, error) {
	valid := func(n int) bool { return n >= 8 && n%8 == 0 && n <= 8*maxElems }
	var sizes []int
	if list != "" {
		for _, f := range strings.Split(list, ",") {
			var n benchkit.Size
			if err := n.Set(strings.TrimSpace(f)); err != nil || !valid(int(n)) {
				return nil, fmt.Errorf("--sizes: %q: want multiples of 8 bytes up to 16M, such as 8,4K,64K", f)
			}
			sizes = append(sizes, int(n))
		}
		return sizes, nil
	}
	if !valid(lo) || hi < lo || hi > 8*maxElems {
		return nil, fmt.Errorf("--min-size %d and --max-size %d: want 8 <= min <= max <= 16M, min a multiple of 8 bytes", lo, hi)
	}
	for n := lo; n <= hi; n *= 2 {
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// scaled is count for a halo of size bytes: count up to fullCount, fewer in proportion
// above, at least floor.
func scaled(count, floor, size int) int {
	if size <= fullCount {
		return count
	}
	return max(count*fullCount/size, floor)
}

func main() { benchkit.Main("rmahalo", os.Args[1:], parseFlags, run) }

// report is the JSON document; bench/mpi/rmahalo.c writes the same shape.
type report struct {
	Benchmark string   `json:"benchmark"`
	System    string   `json:"system"`
	Ranks     int      `json:"ranks"`
	Hosts     []string `json:"hosts"`
	Transport string   `json:"transport"`
	Progress  string   `json:"progress"`
	Tables    []table  `json:"tables"`
}

// table is one mode's rows.
type table struct {
	Sync  string `json:"sync"`
	Title string `json:"title"`
	Rows  []row  `json:"rows"`
}

// row is one halo size's figure.
type row struct {
	Bytes      int     `json:"bytes"`
	Iterations int     `json:"iterations"`
	US         float64 `json:"us_per_iteration"` // rank 0's mean time of one iteration
}

func run(ctx context.Context, o options) error {
	w, err := runtime.Init(ctx)
	if err != nil {
		return err
	}
	if w.Size() < 2 || w.Size() > maxRanks {
		w.Finalize(ctx)
		return fmt.Errorf("needs 2 to %d ranks, the job has %d (run it as: golaunch -n 4 rmahalo)", maxRanks, w.Size())
	}
	text := io.Writer(os.Stdout)
	if w.Rank() != 0 || o.jsonFlag {
		text = io.Discard
	}
	rep, err := measureAll(ctx, w, o, text)
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

// measureAll runs every mode at every size and returns the report (its figures are this
// rank's; rank 0's are the ones printed to text).
func measureAll(ctx context.Context, w *runtime.World, o options, text io.Writer) (report, error) {
	right := (w.Rank() + 1) % w.Size()
	rep := report{Benchmark: "rmahalo", System: "gorma", Ranks: w.Size(),
		Transport: w.Transport(right), Progress: os.Getenv(runtime.EnvProgress)}
	if rep.Progress == "" {
		rep.Progress = "hybrid"
	}
	for r := 0; r < w.Size(); r++ {
		if h := w.HostOf(r); len(rep.Hosts) == 0 || rep.Hosts[len(rep.Hosts)-1] != h {
			rep.Hosts = append(rep.Hosts, h)
		}
	}
	fmt.Fprintf(text, "# gorma rmahalo: %d ranks in a ring, transport %s, progress %s, hosts %s\n",
		w.Size(), rep.Transport, rep.Progress, strings.Join(rep.Hosts, ","))
	fmt.Fprintf(text, "# one iteration: both boundaries Put into the neighbours' ghosts, the epoch closed, the boundaries changed\n")
	for _, name := range o.syncs {
		m := modes[slices.IndexFunc(modes, func(m syncMode) bool { return m.name == name })]
		tab := table{Sync: m.name, Title: m.title}
		fmt.Fprintf(text, "\n# rmahalo %s: %s\n%-10s %18s\n", m.name, m.title, "#bytes", "us_per_iteration")
		for _, size := range o.sizes {
			r, err := measureSize(ctx, w, m.name, size, o)
			if err != nil {
				return rep, fmt.Errorf("rank %d, %d bytes, sync %s: %w", w.Rank(), size, m.name, err)
			}
			tab.Rows = append(tab.Rows, r)
			fmt.Fprintf(text, "%-10d %18.3f\n", r.Bytes, r.US)
		}
		rep.Tables = append(rep.Tables, tab)
	}
	return rep, nil
}

// measureSize times the iterations of one mode with halos of size bytes, in a window of
// their own, and checks the ghosts after the first iteration and after the last.
func measureSize(ctx context.Context, w *runtime.World, mode string, size int, o options) (row, error) {
	h, err := newHalo(ctx, w, mode, size/8)
	if err != nil {
		return row{}, err
	}
	h.stamp()
	if err := collectives.Barrier(ctx, w); err != nil { // every rank stamped before a Put
		return row{}, err
	}
	if err := h.open(ctx); err != nil {
		return row{}, err
	}
	warmup, iters := scaled(o.warmup, 1, size), scaled(o.iters, 20, size)
	per, err := h.warm(ctx, warmup)
	if err != nil {
		return row{}, err
	}
	if iters, err = capIters(ctx, w, o, iters, per); err != nil {
		return row{}, err
	}
	if err := collectives.Barrier(ctx, w); err != nil {
		return row{}, err
	}
	start := time.Now()
	for range iters {
		if err := h.iterate(ctx); err != nil {
			return row{}, err
		}
	}
	elapsed := time.Since(start)
	if err := h.close(ctx); err != nil {
		return row{}, err
	}
	if err := h.check(); err != nil {
		return row{}, fmt.Errorf("after the last iteration: %w", err)
	}
	if err := h.win.Free(ctx); err != nil {
		return row{}, err
	}
	us := benchkit.Round3(float64(elapsed.Nanoseconds()) / 1e3 / float64(iters))
	return row{Bytes: size, Iterations: iters, US: us}, nil
}

// warm runs n untimed iterations and checks the ghosts after the first. It returns the
// mean time of the iterations after the first, or the first's when n is 1.
func (h *halo) warm(ctx context.Context, n int) (time.Duration, error) {
	t := time.Now()
	if err := h.iterate(ctx); err != nil {
		return 0, err
	}
	per := time.Since(t)
	if err := h.check(); err != nil {
		return 0, fmt.Errorf("after the first iteration: %w", err)
	}
	// The neighbours' next Puts wait for the check.
	if err := collectives.Barrier(ctx, h.w); err != nil {
		return 0, err
	}
	t = time.Now()
	for range n - 1 {
		if err := h.iterate(ctx); err != nil {
			return 0, err
		}
	}
	if n > 1 {
		per = time.Since(t) / time.Duration(n-1)
	}
	return per, nil
}

// capIters applies --size-time to iters: the slowest rank's mean untimed iteration, per,
// decides, so that every rank runs the same number.
func capIters(ctx context.Context, w *runtime.World, o options, iters int, per time.Duration) (int, error) {
	if o.sizeTime <= 0 {
		return iters, nil
	}
	slowest := []float64{per.Seconds()}
	if err := collectives.Allreduce(ctx, w, nil, slowest, collectives.Max[float64]()); err != nil {
		return 0, err
	}
	if slowest[0] > 0 {
		iters = min(iters, max(int(o.sizeTime.Seconds()/slowest[0]), 3))
	}
	return iters, nil
}
