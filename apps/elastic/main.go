package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/gorma-hpc/gorma/apps/internal/benchkit"
	"github.com/gorma-hpc/gorma/runtime"
)

// options are the command's flags.
type options struct {
	steps    int
	pause    time.Duration
	refill   bool
	seed     uint64
	dim      int
	batch    int
	samples  int
	lr       float64
	momentum float64
	stateDir string
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := pflag.NewFlagSet("elastic", pflag.ContinueOnError)
	fs.IntVar(&o.steps, "steps", 200, "optimizer steps to run")
	fs.DurationVar(&o.pause, "pause", 0, "sleep this long before each step (so that a test can strike mid-run)")
	fs.BoolVar(&o.refill, "refill", false, "after losing ranks, start new ones (World.Spawn) until the World is back to its first size")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the synthetic data set")
	fs.IntVar(&o.dim, "dim", 16, "features of the linear model")
	fs.IntVar(&o.batch, "batch", 64, "samples per step (the global batch, split among the ranks)")
	fs.IntVar(&o.samples, "samples", 4096, "samples in the data set")
	fs.Float64Var(&o.lr, "lr", 0.01, "learning rate")
	fs.Float64Var(&o.momentum, "momentum", 0.9, "momentum coefficient")
	fs.StringVar(&o.stateDir, "state-dir", "", "write \"PID HOST\" to DIR/rankR.pid (spawned ranks: DIR/spawn-PID.pid) at the start and, at rank 0, the step to DIR/step after each step")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case o.steps < 0 || o.pause < 0:
		return o, errors.New("--steps and --pause must not be negative")
	case o.dim < 1 || o.batch < 1 || o.samples < 1:
		return o, fmt.Errorf("--dim %d, --batch %d, --samples %d: each must be at least 1", o.dim, o.batch, o.samples)
	case !(o.lr > 0) || !(o.momentum >= 0 && o.momentum < 1):
		return o, fmt.Errorf("--lr %g, --momentum %g: want lr > 0 and 0 <= momentum < 1", o.lr, o.momentum)
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return o, nil
}

func main() { benchkit.Main("elastic", os.Args[1:], parseFlags, run) }

// trainer holds what does not change with the World: the flags, the problem, the
// optimizer and the size to refill to.
type trainer struct {
	o       options
	p       *problem
	opt     sgd
	init    *runtime.World // Init's World, which Free refuses
	target  int            // the World's size at the start: --refill's goal
	growErr string         // grow's last error said on stderr (each said once)
}

func run(ctx context.Context, o options) error {
	w, err := runtime.Init(ctx)
	if err != nil {
		return err
	}
	t := &trainer{o: o, p: newProblem(o.seed, o.samples, o.dim, o.batch), opt: sgd{o.lr, o.momentum}, init: w, target: w.Size()}
	var st *state
	if parent := w.Parent(); parent != nil {
		if err := t.writeFile(fmt.Sprintf("spawn-%d.pid", os.Getpid()), pidLine(w)); err != nil {
			return err
		}
		merged, err := parent.Merge(ctx, true)
		if err != nil {
			return fmt.Errorf("spawned rank %d: merge with the ranks that started it: %w", w.Rank(), err)
		}
		if w, st, err = t.adopt(ctx, merged, nil); err != nil {
			return err
		}
	} else {
		if err := t.writeFile(fmt.Sprintf("rank%d.pid", w.Rank()), pidLine(w)); err != nil {
			return err
		}
		st = initial(w, o.dim)
	}
	if w, st, err = t.train(ctx, w, st); err != nil {
		return err
	}
	if w.Rank() == 0 {
		fmt.Printf("elastic: steps=%d ranks=%d loss=%.12g\n", st.step, w.Size(), t.p.loss(st.w))
	}
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return w.Finalize(fctx)
}

// pidLine is the content of a rank's pid file: its pid and its host.
func pidLine(w *runtime.World) string { return fmt.Sprintf("%d %s", os.Getpid(), w.Host()) }

// writeFile writes the line v to the file name under --state-dir, through a rename, so
// that a reader never sees it half written. Without --state-dir it does nothing.
func (t *trainer) writeFile(name, v string) error {
	if t.o.stateDir == "" {
		return nil
	}
	path := filepath.Join(t.o.stateDir, name)
	tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, []byte(v+"\n"), 0o644); err != nil {
		return fmt.Errorf("--state-dir: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("--state-dir: %w", err)
	}
	return nil
}
