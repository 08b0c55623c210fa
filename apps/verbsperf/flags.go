package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// Providers that --provider accepts, besides "all".
var providerNames = []string{"shm", "tcp"}

// Tests run over a verbs provider, in the order they run.
var providerTests = []string{"write_lat", "read_lat", "atomic_lat", "send_lat", "write_bw", "read_bw", "arena"}

// Floors: the same operations without gorma, measured by the same program.
var floorTests = []string{"flag_pp", "tcp_pp", "tcp_stream", "memcpy", "segment"}

// Size limits. Ping-pong tests and atomics need an aligned 8-byte word, so sizes are
// multiples of 8; each side holds two buffers of --max-size in its device arena.
const (
	minSize      = 8
	maxSizeLimit = 256 << 20
)

// options are the parsed command line.
type options struct {
	providers []string // shm, tcp
	tests     []string // from providerTests and floorTests
	minSize   int
	maxSize   int
	iters     int // 0: default (10000, or 300 with --quick)
	quick     bool
	jsonOut   string // "": none; "-": JSON on stdout instead of text; else a file
	wait      verbs.WaitMode
	window    int
	timeout   time.Duration
	idleWatch bool // tcp devices get idle-role watches served by a third process
	peer      bool // hidden: run as the peer process
	watcher   bool // hidden: run as the idle-role watcher process
}

// has reports whether test t was selected.
func (o *options) has(t string) bool { return slices.Contains(o.tests, t) }

// errHelp is returned by parseFlags for --help.
var errHelp = pflag.ErrHelp

// parseFlags parses args (without the program name). Usage and errors of flag syntax go
// to errOut; the returned error says what is wrong.
func parseFlags(args []string, errOut io.Writer) (*options, error) {
	fs := pflag.NewFlagSet("verbsperf", pflag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.SortFlags = false
	var (
		provider, tests, minS, maxS, wait string
		o                                 options
	)
	fs.StringVar(&provider, "provider", "all", "provider to measure: shm, tcp or all")
	fs.StringVar(&tests, "test", "all", "comma list of tests, or all, floors, lat, bw:\n"+
		strings.Join(providerTests, ",")+",\n"+strings.Join(floorTests, ","))
	fs.StringVar(&minS, "min-size", "8", "smallest message size (multiple of 8; K, M, G suffixes are powers of 1024)")
	fs.StringVar(&maxS, "max-size", "64M", "largest message size")
	fs.IntVar(&o.iters, "iters", 0, "iterations for small messages; larger ones scale down (default 10000, 300 with --quick)")
	fs.BoolVar(&o.quick, "quick", false, "a few sizes and few iterations: a smoke run of a few seconds")
	fs.StringVar(&o.jsonOut, "json", "", "write all results as one JSON document to `FILE`; --json alone prints it on stdout instead of the text")
	fs.Lookup("json").NoOptDefVal = "-"
	fs.StringVar(&wait, "wait", "hybrid", "how completion queues wait: spin, hybrid or block")
	fs.IntVar(&o.window, "window", 64, "outstanding work requests in bandwidth tests (1..128)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up when the whole run takes longer")
	fs.BoolVar(&o.idleWatch, "idle-watch", true, "give both tcp devices an idle-role watch served by a third process, as golaunch gives every rank")
	fs.BoolVar(&o.peer, "peer", false, "run as the peer process (internal)")
	_ = fs.MarkHidden("peer")
	fs.BoolVar(&o.watcher, "watcher", false, "run as the idle-role watcher process (internal)")
	_ = fs.MarkHidden("watcher")
	fs.Usage = func() {
		fmt.Fprintf(errOut, "usage: verbsperf [flags]\n\nLatency and bandwidth of gorma's verbs providers between two processes, with\nthe raw floors measured by the same program.\n\nflags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (verbsperf takes flags only)", fs.Arg(0))
	}
	if o.peer || o.watcher {
		return &o, nil
	}
	var err error
	if o.providers, err = parseProviders(provider); err != nil {
		return nil, err
	}
	if o.tests, err = parseTests(tests); err != nil {
		return nil, err
	}
	if o.minSize, err = parseSize(minS); err != nil {
		return nil, fmt.Errorf("--min-size: %w", err)
	}
	if o.maxSize, err = parseSize(maxS); err != nil {
		return nil, fmt.Errorf("--max-size: %w", err)
	}
	if o.wait, err = verbs.ParseWaitMode(wait); err != nil || wait == "" {
		return nil, fmt.Errorf("--wait %q: choose spin, hybrid or block", wait)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	return &o, nil
}

func (o *options) validate() error {
	switch {
	case o.minSize < minSize || o.minSize%8 != 0:
		return fmt.Errorf("--min-size %d: must be a multiple of 8, at least %d", o.minSize, minSize)
	case o.maxSize%8 != 0 || o.maxSize > maxSizeLimit:
		return fmt.Errorf("--max-size %d: must be a multiple of 8, at most %d (256M)", o.maxSize, maxSizeLimit)
	case o.minSize > o.maxSize:
		return fmt.Errorf("--min-size %d is larger than --max-size %d", o.minSize, o.maxSize)
	case o.iters < 0:
		return fmt.Errorf("--iters %d: must not be negative", o.iters)
	case o.window < 1 || o.window > verbs.DefaultMaxSendWR:
		return fmt.Errorf("--window %d: must be within 1..%d", o.window, verbs.DefaultMaxSendWR)
	case o.timeout <= 0:
		return errors.New("--timeout must be positive")
	}
	return nil
}

func parseProviders(s string) ([]string, error) {
	if s == "all" {
		return slices.Clone(providerNames), nil
	}
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(providerNames, p) {
			return nil, fmt.Errorf("unknown --provider %q: choose shm, tcp or all", p)
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// parseTests expands a comma list of test names and groups into the tests to run, in
// their canonical order.
func parseTests(s string) ([]string, error) {
	want := map[string]bool{}
	for t := range strings.SplitSeq(s, ",") {
		t = strings.TrimSpace(t)
		switch {
		case t == "all":
			for _, n := range slices.Concat(floorTests, providerTests) {
				want[n] = true
			}
		case t == "floors":
			for _, n := range floorTests {
				want[n] = true
			}
		case t == "lat" || t == "bw":
			for _, n := range providerTests {
				if strings.HasSuffix(n, "_"+t) {
					want[n] = true
				}
			}
		case slices.Contains(providerTests, t) || slices.Contains(floorTests, t):
			want[t] = true
		default:
			return nil, fmt.Errorf("unknown --test %q: choose from all, floors, lat, bw, %s, %s",
				t, strings.Join(providerTests, ", "), strings.Join(floorTests, ", "))
		}
	}
	var out []string
	for _, n := range slices.Concat(floorTests, providerTests) {
		if want[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// parseSize parses a byte count such as 8, 4096, 64K, 1M, 64MiB or 1G.
func parseSize(s string) (int, error) {
	t := strings.TrimSpace(s)
	mult := 1
	upper := strings.ToUpper(t)
	for _, suf := range []struct {
		s string
		m int
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20},
		{"GB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(upper, suf.s) {
			t, mult = t[:len(t)-len(suf.s)], suf.m
			break
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(t))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q: want a byte count such as 4096, 64K or 1M", s)
	}
	if n > maxSizeLimit/mult+1 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * mult, nil
}

// formatSize writes a byte count the short way: 8, 4K, 1M.
func formatSize(n int) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.Itoa(n>>30) + "G"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "M"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "K"
	}
	return strconv.Itoa(n)
}

// quickSizes are the sizes of a --quick run.
var quickSizes = []int{8, 4 << 10, 64 << 10, 1 << 20}

// sizes returns the message sizes to measure: powers of two from minSize to maxSize
// (plus minSize itself when it is no power of two), or the quick set within the bounds.
func (o *options) sizes() []int {
	var out []int
	if o.quick {
		for _, n := range quickSizes {
			if n >= o.minSize && n <= o.maxSize {
				out = append(out, n)
			}
		}
		if len(out) == 0 {
			out = append(out, o.minSize)
		}
		return out
	}
	for n := o.minSize; n <= o.maxSize; {
		out = append(out, n)
		next := 1
		for next <= n {
			next <<= 1
		}
		n = next
	}
	return out
}

// latIters returns the warmup and measured iterations of a latency test at size n: the
// base count up to 16 KiB, scaled down in proportion above, with a floor.
func (o *options) latIters(n int) (warmup, iters int) {
	base, floor := 10000, 20
	if o.quick {
		base, floor = 300, 5
	}
	if o.iters > 0 {
		base = o.iters
		floor = min(floor, base)
	}
	iters = base
	if n > 16<<10 {
		iters = max(int(int64(base)*(16<<10)/int64(n)), floor)
	}
	return max(iters/10, 3), iters
}

// bwIters returns the iterations of one bandwidth repetition at size n, and how many
// repetitions to run: about 256 MiB per repetition (16 MiB with --quick).
func (o *options) bwIters(n int) (iters, reps int) {
	total, lo, hi, reps := int64(256<<20), 8, 20000, 3
	if o.quick {
		total, lo, hi, reps = 16<<20, 4, 2000, 1
	}
	if o.iters > 0 {
		hi = o.iters
		lo = min(lo, hi)
	}
	iters = int(min(max(total/int64(n), int64(lo)), int64(hi)))
	return iters, reps
}
