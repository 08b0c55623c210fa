package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
)

func main() {
	countsFlag := flag.String("counts", "0,1,7,3000,300000", "comma-separated element counts (per rank, or per block)")
	flag.Parse()
	counts, err := parseCounts(*countsFlag)
	if err != nil {
		fmt.Fprintf(os.Stderr, "collprog: --counts: %v\n", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Minute))
	defer cancel()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "collprog: init: %v\n", err)
		os.Exit(1)
	}
	t := &tester{ctx: ctx, w: w, me: w.Rank(), p: w.Size()}
	if t.me == 0 {
		hosts := make([]string, t.p)
		for r := range hosts {
			hosts[r] = w.HostOf(r)
		}
		fmt.Printf("collprog: %d ranks on hosts %s\n", t.p, strings.Join(hosts, " "))
	}
	if err := run(t, counts); err != nil {
		fmt.Fprintf(os.Stderr, "collprog: rank %d: %v\n", t.me, err)
		os.Exit(1)
	}
	// Every rank passed its checks; the barrier makes rank 0's line mean all of them.
	if err := collectives.Barrier(ctx, w); err != nil {
		fmt.Fprintf(os.Stderr, "collprog: rank %d: final Barrier: %v\n", t.me, err)
		os.Exit(1)
	}
	if t.me == 0 {
		fmt.Printf("PASS collprog %d ranks\n", t.p)
	}
	if err := w.Finalize(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "collprog: rank %d: finalize: %v\n", t.me, err)
		os.Exit(1)
	}
}

func parseCounts(s string) ([]int, error) {
	var counts []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a count", f)
		}
		counts = append(counts, n)
	}
	return counts, nil
}

// The operators under test. The data movements run once per element type (with the
// first kind of that type).
var (
	int64Sum   = kind[int64]{"int64 sum", collectives.Sum[int64](), func(a, b int64) int64 { return a + b }, func(h uint64) int64 { return int64(h) }}
	float64Max = kind[float64]{"float64 max", collectives.Max[float64](), func(a, b float64) float64 { return max(a, b) }, func(h uint64) float64 { return float64(int64(h%4001)-2000) / 4 }}
	int32Bxor  = kind[int32]{"int32 bxor", collectives.Bxor[int32](), func(a, b int32) int32 { return a ^ b }, func(h uint64) int32 { return int32(uint32(h)) }}
	int64Aff   = kind[int64]{"int64 affine (non-commutative)", affineOp, affine, affineValue}
)

// run runs every collective for every count, not in place then in place, and a Barrier
// after each round.
func run(t *tester, counts []int) error {
	for _, n := range counts {
		for _, inPlace := range []bool{false, true} {
			for _, check := range []func() error{
				func() error { return reductions(t, int64Sum, n, inPlace) },
				func() error { return reductions(t, float64Max, n, inPlace) },
				func() error { return reductions(t, int32Bxor, n, inPlace) },
				func() error { return reductions(t, int64Aff, n, inPlace) },
				func() error { return movements(t, int64Sum, n, inPlace) },
				func() error { return movements(t, float64Max, n, inPlace) },
				func() error { return movements(t, int32Bxor, n, inPlace) },
			} {
				if err := check(); err != nil {
					return err // the first failure ends the run: later calls would only add noise
				}
			}
			if err := collectives.Barrier(t.ctx, t.w); err != nil {
				return fmt.Errorf("barrier after count %d: %w", n, err)
			}
		}
	}
	return nil
}
