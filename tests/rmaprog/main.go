package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
)

// scenario is one test: it returns an error naming what differs.
type scenario func(ctx context.Context, w *runtime.World, o opts) error

// opts are the flags after the scenario name.
type opts struct {
	rounds int
	busy   time.Duration
}

var scenarios = map[string]scenario{
	"lock-counter":   lockCounter,
	"fence":          fenceAllToAll,
	"passive":        passive,
	"acc":            accumulateAll,
	"fop-acc":        fopAcc,
	"cas-mutex":      casMutex,
	"pscw":           pscwRing,
	"dynamic":        dynamic,
	"shared":         shared,
	"request":        requests,
	"stale":          staleRun,
	"split":          splitRun,
	"freed-write":    freedWrite,
	"fence-mismatch": fenceMismatch,
}

// errSkip means the scenario needs a window API that is not built yet.
var errSkip = errors.New("SKIP: this scenario's window API is not built yet")

func main() {
	if len(os.Args) < 2 || scenarios[os.Args[1]] == nil {
		names := make([]string, 0, len(scenarios))
		for n := range scenarios {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "usage: rmaprog SCENARIO [--rounds N] [--busy D]; scenarios: %v\n", names)
		os.Exit(2)
	}
	name := os.Args[1]
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	var o opts
	fs.IntVar(&o.rounds, "rounds", 50, "repetitions (per rank) of the scenario's operation")
	fs.DurationVar(&o.busy, "busy", 200*time.Millisecond, "passive: how long rank 0 computes")
	fs.Parse(os.Args[2:])
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Minute))
	defer cancel()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rmaprog: init: %v\n", err)
		os.Exit(1)
	}
	err = scenarios[name](ctx, w, o)
	if err == errSkip {
		fmt.Printf("SKIP %s\n", name)
		w.Finalize(ctx)
		os.Exit(3)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rmaprog: rank %d: %s: %v\n", w.Rank(), name, err)
		os.Exit(1)
	}
	// Every rank passed its checks; the barrier makes rank 0's line mean all of them.
	if err := runtime.Barrier(ctx, w); err != nil {
		fmt.Fprintf(os.Stderr, "rmaprog: rank %d: %s: final barrier: %v\n", w.Rank(), name, err)
		os.Exit(1)
	}
	if w.Rank() == 0 {
		fmt.Printf("PASS %s %d ranks\n", name, w.Size())
	}
	if err := w.Finalize(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "rmaprog: rank %d: finalize: %v\n", w.Rank(), err)
		os.Exit(1)
	}
}

// gatherInt64 collects v of every rank at every rank, in rank order (through rank 0).
func gatherInt64(ctx context.Context, w *runtime.World, v []int64) ([]int64, error) {
	const tag = 77
	n := len(v)
	all := make([]int64, n*w.Size())
	if w.Rank() != 0 {
		if err := runtime.Send(ctx, w, v, 0, tag); err != nil {
			return nil, err
		}
		_, err := runtime.Recv(ctx, w, all, 0, tag)
		return all, err
	}
	copy(all, v)
	for r := 1; r < w.Size(); r++ {
		if _, err := runtime.Recv(ctx, w, all[r*n:(r+1)*n], r, tag); err != nil {
			return nil, err
		}
	}
	for r := 1; r < w.Size(); r++ {
		if err := runtime.Send(ctx, w, all, r, tag); err != nil {
			return nil, err
		}
	}
	return all, nil
}

// pattern is the value rank r stores at element i in round k.
func pattern(r, i, k int) int64 { return int64(r)<<40 | int64(k)<<20 | int64(i) }
