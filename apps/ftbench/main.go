package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// options are the command's flags.
type options struct {
	kase     string
	pause    time.Duration
	warmup   int
	stateDir string
	mark     string
	growTo   int
	jsonOut  string
	jsonFlag bool
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := pflag.NewFlagSet("ftbench", pflag.ContinueOnError)
	fs.StringVar(&o.kase, "case", "kill", "kill (a rank or host is killed) or join (a host joins; with --grow-to)")
	fs.DurationVar(&o.pause, "pause", time.Millisecond, "sleep between Allreduce calls")
	fs.IntVar(&o.warmup, "warmup", 100, "Allreduce calls before rank 0 writes DIR/ready")
	fs.StringVar(&o.stateDir, "state-dir", "", "write DIR/rankR.pid (\"PID HOST\"; a spawned rank DIR/spawn-PID.pid) at the start and, at rank 0, DIR/ready after the warmup")
	fs.StringVar(&o.mark, "mark", "", "the file where the driver writes the strike's time (seconds since the epoch) before it strikes")
	fs.IntVar(&o.growTo, "grow-to", 0, "--case join: the World's size to Spawn up to")
	fs.StringVar(&o.jsonOut, "json", "", "print one JSON document instead of text; --json=FILE writes it to FILE as well as the text")
	fs.Lookup("json").NoOptDefVal = "-"
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.jsonFlag = o.jsonOut == "-"
	switch {
	case o.kase != "kill" && o.kase != "join":
		return o, fmt.Errorf("--case %q: want kill or join", o.kase)
	case o.pause < 0 || o.warmup < 1:
		return o, errors.New("--pause must not be negative and --warmup must be at least 1")
	case o.mark == "":
		return o, errors.New("--mark is required: the file where the driver writes the strike's time")
	case o.kase == "join" && o.growTo < 2:
		return o, errors.New("--case join needs --grow-to, the World's size to reach")
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return o, nil
}

func main() { benchkit.Main("ftbench", os.Args[1:], parseFlags, run) }

// report is the JSON document of one strike. Times are seconds from the mark.
type report struct {
	Benchmark string  `json:"benchmark"`
	Case      string  `json:"case"`
	Before    int     `json:"ranks_before"` // the World's size when struck
	Ranks     int     `json:"ranks"`        // the size of the shrunk or merged World
	HostsWas  int     `json:"hosts_before"` // the hosts of the World when struck
	Hosts     int     `json:"hosts"`        // the hosts of the final World
	PauseUS   float64 `json:"pause_us"`
	DetectS   float64 `json:"detect_s,omitempty"` // kill: the earliest failed call
	ShrinkS   float64 `json:"shrink_s,omitempty"` // kill: the last Shrink to return
	SpawnS    float64 `json:"spawn_s,omitempty"`  // join: the last Spawn to return
	RecoverS  float64 `json:"recover_s"`          // the last Allreduce on the new World
}

func run(ctx context.Context, o options) error {
	w, err := runtime.Init(ctx)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("rank%d.pid", w.Rank())
	if w.Parent() != nil {
		name = fmt.Sprintf("spawn-%d.pid", os.Getpid())
	}
	if err := writeFile(o.stateDir, name, fmt.Sprintf("%d %s", os.Getpid(), w.Host())); err != nil {
		return err
	}
	var rep *report
	if p := w.Parent(); p != nil {
		w, rep, err = joined(ctx, p, o)
	} else if o.kase == "kill" {
		w, rep, err = killCase(ctx, w, o)
	} else {
		w, rep, err = joinCase(ctx, w, o)
	}
	if err != nil {
		return err
	}
	if w.Rank() == 0 {
		if err := output(o, rep); err != nil {
			return err
		}
	}
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return w.Finalize(fctx)
}

// output prints rep as text and JSON as --json asks.
func output(o options, rep *report) error {
	rep.Benchmark, rep.PauseUS = "ftbench", float64(o.pause)/1e3
	if !o.jsonFlag {
		fmt.Printf("# ftbench: %s, %d ranks on %d hosts before, %d on %d after, --pause %v\n", rep.Case, rep.Before, rep.HostsWas, rep.Ranks, rep.Hosts, o.pause)
		if rep.Case == "kill" {
			fmt.Printf("# %-10s %10s %10s\n", "detect_ms", "shrink_ms", "recover_ms")
			fmt.Printf("  %-10.3f %10.3f %10.3f\n", rep.DetectS*1e3, rep.ShrinkS*1e3, rep.RecoverS*1e3)
		} else {
			fmt.Printf("# %-10s %10s\n", "spawn_ms", "recover_ms")
			fmt.Printf("  %-10.3f %10.3f\n", rep.SpawnS*1e3, rep.RecoverS*1e3)
		}
	}
	if o.jsonOut != "" {
		return benchkit.WriteJSON(rep, o.jsonOut)
	}
	return nil
}

// failure reports whether err is a peer's failure or its consequence.
func failure(err error) bool {
	return errors.Is(err, runtime.ErrProcFailed) || errors.Is(err, runtime.ErrRevoked)
}

// allreduce runs the measured call: Allreduce of one float64.
func allreduce(ctx context.Context, w *runtime.World) error {
	buf := []float64{1}
	if err := collectives.Allreduce(ctx, w, nil, buf, collectives.Sum[float64]()); err != nil {
		return err
	}
	if buf[0] != float64(w.Size()) {
		return fmt.Errorf("rank %d: Allreduce gave %g, want the World's size %d", w.Rank(), buf[0], w.Size())
	}
	return nil
}

// readMark reads the driver's mark: seconds since the epoch, such as bash's
// EPOCHREALTIME "1732600000.123456", as nanoseconds.
func readMark(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("--mark: %w (the driver writes it before it strikes)", err)
	}
	s := strings.TrimSpace(string(b))
	sec, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || len(frac) > 9 {
		return 0, fmt.Errorf("--mark %s: %q is no time in seconds since the epoch", path, s)
	}
	ns := int64(0)
	if frac != "" {
		if ns, err = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64); err != nil {
			return 0, fmt.Errorf("--mark %s: %q is no time in seconds since the epoch", path, s)
		}
	}
	return n*1e9 + ns, nil
}

// since returns the seconds from mark to the time t (nanoseconds since the epoch).
func since(mark, t int64) float64 { return float64(t-mark) / 1e9 }

// extremes returns the least and the greatest of v.
func extremes(v []int64) (lo, hi int64) {
	lo, hi = math.MaxInt64, math.MinInt64
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// hosts returns the number of distinct hosts of w's ranks.
func hosts(w *runtime.World) int {
	seen := map[string]bool{}
	for r := range w.Size() {
		seen[w.HostOf(r)] = true
	}
	return len(seen)
}

// writeFile writes the line v to the file name under dir through a rename; with no dir
// it does nothing.
func writeFile(dir, name, v string) error {
	if dir == "" {
		return nil
	}
	path := filepath.Join(dir, name)
	tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, []byte(v+"\n"), 0o644); err != nil {
		return fmt.Errorf("--state-dir: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("--state-dir: %w", err)
	}
	return nil
}
