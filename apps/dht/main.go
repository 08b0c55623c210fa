package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
	"github.com/gorma-hpc/gorma/runtime"
)

// options are the command's flags.
type options struct {
	workload   string
	keys       int
	lookups    int
	warmup     int
	zipf       float64
	updateFrac float64
	cache      string
	pageSize   int
	batch      int
	build      string
	seed       uint64
	jsonOut    string
	jsonFlag   bool
	profile    string
}

// presets are the workloads of --workload: flag values that apply unless the flag is given.
var presets = map[string]map[string]string{
	// Hot keys (Zipf 1.1) on a table whose remote pages all fit the cache; one
	// operation in a thousand is an update.
	"read-mostly": {"keys": "65536", "lookups": "50000", "zipf": "1.1", "update-frac": "0.001", "page-size": "4096"},
	// Uniform lookups over a table of many more small pages than a rank looks up: pages
	// are almost never read twice, so the cache can only cost. The table is bulk-loaded
	// (each rank inserts the keys it owns): a remote build of a million keys takes minutes.
	"no-hit": {"keys": "1048576", "lookups": "3000", "zipf": "0", "update-frac": "0", "page-size": "512", "build": "local", "batch": "4096"},
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := pflag.NewFlagSet("dht", pflag.ContinueOnError)
	fs.StringVar(&o.workload, "workload", "", "preset: read-mostly or no-hit (flags given explicitly override it)")
	fs.IntVar(&o.keys, "keys", 65536, "keys in the table (1..N), spread over the ranks' shards at load 0.5 or less")
	fs.IntVar(&o.lookups, "lookups", 20000, "measured operations per rank (lookups and updates)")
	fs.IntVar(&o.warmup, "warmup", -1, "operations per rank before the measured ones (default: a tenth of --lookups)")
	fs.Float64Var(&o.zipf, "zipf", 0, "skew: key i+1 is drawn with weight 1/(i+1)^S; 0 is uniform")
	fs.Float64Var(&o.updateFrac, "update-frac", 0, "fraction of operations that are updates (a Put of a new value version + Flush)")
	fs.StringVar(&o.cache, "cache", "both", "page cache: on, off, or both (off then on, same table and key sequence)")
	fs.IntVar(&o.pageSize, "page-size", 4096, "page size of the cache in bytes (a power of two from 512 to 1M)")
	fs.IntVar(&o.batch, "batch", 256, "build: keys inserted per exclusive lock of their owner")
	fs.StringVar(&o.build, "build", "remote", "build: remote (rank r inserts the keys equal to r modulo the ranks, wherever they live) or local (each rank inserts the keys it owns)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the key sequences (rank r uses seed and r)")
	fs.StringVar(&o.jsonOut, "json", "", "print one JSON document instead of text; --json=FILE writes it to FILE as well as the text")
	fs.Lookup("json").NoOptDefVal = "-"
	fs.StringVar(&o.profile, "cpuprofile", "", "write a CPU profile of each rank to FILE.RANK")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.workload != "" {
		p, ok := presets[o.workload]
		if !ok {
			return o, fmt.Errorf("--workload %q: want read-mostly or no-hit", o.workload)
		}
		for name, v := range p {
			if !fs.Changed(name) {
				if err := fs.Set(name, v); err != nil {
					return o, err
				}
			}
		}
	}
	if o.warmup < 0 {
		o.warmup = o.lookups / 10
	}
	o.jsonFlag = o.jsonOut == "-"
	switch {
	case o.keys < 1:
		return o, fmt.Errorf("--keys %d: want at least 1", o.keys)
	case o.lookups < 1:
		return o, fmt.Errorf("--lookups %d: want at least 1", o.lookups)
	case o.zipf < 0:
		return o, fmt.Errorf("--zipf %v: want 0 (uniform) or more", o.zipf)
	case o.updateFrac < 0 || o.updateFrac > 1:
		return o, fmt.Errorf("--update-frac %v: want a fraction from 0 to 1", o.updateFrac)
	case o.cache != "on" && o.cache != "off" && o.cache != "both":
		return o, fmt.Errorf("--cache %q: want on, off or both", o.cache)
	case o.pageSize < 512 || o.pageSize > 1<<20 || o.pageSize&(o.pageSize-1) != 0:
		return o, fmt.Errorf("--page-size %d: want a power of two from 512 to 1M", o.pageSize)
	case o.build != "remote" && o.build != "local":
		return o, fmt.Errorf("--build %q: want remote or local", o.build)
	case o.batch < 1:
		return o, fmt.Errorf("--batch %d: want at least 1", o.batch)
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return o, nil
}

// modes are the cache settings to run, in order.
func (o options) modes() []bool {
	switch o.cache {
	case "on":
		return []bool{true}
	case "off":
		return []bool{false}
	}
	return []bool{false, true}
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, pflag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dht:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		var wrong *errWrong
		if errors.As(err, &wrong) {
			fmt.Fprintln(os.Stderr, "dht: WRONG RESULT:", err)
		} else {
			fmt.Fprintln(os.Stderr, "dht:", err)
		}
		os.Exit(1)
	}
}

// report is the JSON document.
type report struct {
	Benchmark   string         `json:"benchmark"`
	Workload    string         `json:"workload,omitempty"`
	Ranks       int            `json:"ranks"`
	Hosts       []string       `json:"hosts"`
	Transports  map[string]int `json:"transports"` // rank 0's peers by transport
	Keys        int            `json:"keys"`
	Buckets     int            `json:"buckets_per_rank"`
	Lookups     int            `json:"ops_per_rank"`
	Warmup      int            `json:"warmup_per_rank"`
	Zipf        float64        `json:"zipf"`
	UpdateFrac  float64        `json:"update_frac"`
	PageSize    int            `json:"page_size"`
	Seed        uint64         `json:"seed"`
	Runs        []runResult    `json:"runs"`
	Speedup     float64        `json:"speedup,omitempty"`              // ops/s with the cache on over off
	SpeedupMean float64        `json:"speedup_mean_latency,omitempty"` // mean latency off over on
}

// runResult is one cache setting's figures, over every rank.
type runResult struct {
	Cache         string  `json:"cache"`
	BuildS        float64 `json:"build_s"`
	OpsPerS       float64 `json:"ops_per_s"` // sum over ranks
	Lookups       int64   `json:"lookups"`
	Updates       int64   `json:"updates"`
	MeanUS        float64 `json:"mean_us"`
	MedianUS      float64 `json:"median_us"` // of batch means, pooled over ranks
	Hits          int64   `json:"hits"`
	Misses        int64   `json:"misses"`
	Installs      int64   `json:"installs"`
	Invalidations int64   `json:"invalidations"`
	Evictions     int64   `json:"evictions"`
}

func run(ctx context.Context, o options) error {
	w, err := runtime.Init(ctx)
	if err != nil {
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
		return fmt.Errorf("rank %d: %w", w.Rank(), err)
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
