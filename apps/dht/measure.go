package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// timeBatch is the number of operations timed together: a clock read costs a sizeable
// fraction of a cached lookup.
const timeBatch = 64

// updateBit marks an operation of the sequence as an update (keys stay below it).
const updateBit = 1 << 63

// sequence draws this rank's n operations: keys 1..keys, key i+1 with weight 1/(i+1)^s
// (uniform for s = 0), a fraction frac of them updates. The keys are drawn before anything
// is timed.
func sequence(rng *rand.Rand, n, keys int, s, frac float64) []uint64 {
	var cdf []float64
	if s > 0 {
		cdf = make([]float64, keys)
		sum := 0.0
		for i := range cdf {
			sum += math.Pow(float64(i+1), -s)
			cdf[i] = sum
		}
	}
	ops := make([]uint64, n)
	for j := range ops {
		var i int
		if cdf == nil {
			i = rng.IntN(keys)
		} else {
			i = min(sort.SearchFloat64s(cdf, rng.Float64()*cdf[keys-1]), keys-1)
		}
		ops[j] = uint64(i + 1)
		if frac > 0 && rng.Float64() < frac {
			ops[j] |= updateBit
		}
	}
	return ops
}

// rankFigures are one rank's results of one run, sent to rank 0.
type rankFigures struct {
	ops, updates, elapsed, build float64 // elapsed and build in seconds
	cache                        window.CacheStats
	samples                      []float64 // µs per operation of each timed batch
}

const (
	tagFigures = 11
	tagSamples = 12
	nFigures   = 10
)

func (f rankFigures) vector() []float64 {
	c := f.cache
	return []float64{f.ops, f.updates, f.elapsed, f.build, float64(c.Hits), float64(c.Misses),
		float64(c.Installs), float64(c.Invalidations), float64(c.Evictions), float64(len(f.samples))}
}

func figuresOf(v []float64) rankFigures {
	return rankFigures{ops: v[0], updates: v[1], elapsed: v[2], build: v[3], cache: window.CacheStats{
		Hits: int64(v[4]), Misses: int64(v[5]), Installs: int64(v[6]), Invalidations: int64(v[7]),
		Evictions: int64(v[8])}}
}

// measure runs every cache setting of o and returns the report (complete at rank 0, which
// also prints the text to text).
func measure(ctx context.Context, w *runtime.World, o options, text io.Writer) (report, error) {
	me, size := w.Rank(), w.Size()
	rep := report{Benchmark: "dht", Workload: o.workload, Ranks: size, Transports: map[string]int{},
		Keys: o.keys, Buckets: bucketsPerShard(o.keys, size), Lookups: o.lookups, Warmup: o.warmup,
		Zipf: o.zipf, UpdateFrac: o.updateFrac, PageSize: o.pageSize, Seed: o.seed}
	for r := range size {
		if h := w.HostOf(r); !slices.Contains(rep.Hosts, h) {
			rep.Hosts = append(rep.Hosts, h)
		}
		if r != me {
			rep.Transports[w.Transport(r)]++
		}
	}
	fmt.Fprintf(text, "# gorma dht: %d ranks on %d host(s), rank 0's peers by transport %v\n", size, len(rep.Hosts), rep.Transports)
	fmt.Fprintf(text, "# %d keys in %d buckets of 16 B per rank; %d operations per rank (after %d warmup), zipf %g, update fraction %g, page %d B\n",
		o.keys, rep.Buckets, o.lookups, o.warmup, o.zipf, o.updateFrac, o.pageSize)
	fmt.Fprintf(text, "%-6s %9s %12s %9s %10s %10s %10s %10s %14s\n",
		"#cache", "build_s", "ops/s", "mean_us", "median_us", "hits", "misses", "installs", "invalidations")
	rng := rand.New(rand.NewPCG(o.seed, uint64(me)))
	ops := sequence(rng, o.warmup+o.lookups, o.keys, o.zipf, o.updateFrac)
	for _, on := range o.modes() {
		f, err := runOnce(ctx, w, o, on, ops)
		if err != nil {
			return rep, fmt.Errorf("cache %s: %w", onOff(on), err)
		}
		res, err := gather(ctx, w, f)
		if err != nil {
			return rep, err
		}
		res.Cache = onOff(on)
		rep.Runs = append(rep.Runs, res)
		fmt.Fprintf(text, "%-6s %9.2f %12.0f %9.2f %10.2f %10d %10d %10d %14d\n", res.Cache, res.BuildS, res.OpsPerS,
			res.MeanUS, res.MedianUS, res.Hits, res.Misses, res.Installs, res.Invalidations)
	}
	if len(rep.Runs) == 2 && rep.Runs[0].OpsPerS > 0 {
		off, on := rep.Runs[0], rep.Runs[1]
		rep.Speedup = on.OpsPerS / off.OpsPerS
		rep.SpeedupMean = off.MeanUS / max(on.MeanUS, 1e-9)
		fmt.Fprintf(text, "# speedup with the cache on: %.2fx ops/s, %.2fx mean latency, %.2fx median latency\n",
			rep.Speedup, rep.SpeedupMean, off.MedianUS/max(on.MedianUS, 1e-9))
	}
	fmt.Fprintf(text, "# every lookup's value verified\n")
	return rep, nil
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// runOnce builds a table with the cache on or off and runs ops on it (the first o.warmup
// untimed).
func runOnce(ctx context.Context, w *runtime.World, o options, cache bool, ops []uint64) (rankFigures, error) {
	var f rankFigures
	tb, err := newTable(ctx, w, o.keys, o.pageSize, cache)
	if err != nil {
		return f, err
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return f, err
	}
	start := time.Now()
	if err := tb.build(ctx, w.Rank(), o.keys, o.batch, o.build == "local"); err != nil {
		return f, fmt.Errorf("build: %w", err)
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return f, err
	}
	f.build = time.Since(start).Seconds()
	if err := checkShards(ctx, w, tb, o.keys); err != nil {
		return f, err
	}
	if err := tb.win.LockAll(ctx, 0); err != nil {
		return f, err
	}
	version := uint16(w.Rank())
	do := func(op uint64) error {
		if op&updateBit == 0 {
			return tb.lookup(ctx, op)
		}
		version++
		f.updates++
		return tb.update(ctx, op&^updateBit, version)
	}
	for _, op := range ops[:o.warmup] {
		if err := do(op); err != nil {
			return f, err
		}
	}
	f.updates = 0
	if err := runtime.Barrier(ctx, w); err != nil {
		return f, err
	}
	before := tb.win.CacheStats()
	measured := ops[o.warmup:]
	f.samples = make([]float64, 0, len(measured)/timeBatch+1)
	start = time.Now()
	for len(measured) > 0 {
		n := min(timeBatch, len(measured))
		t0 := time.Now()
		for _, op := range measured[:n] {
			if err := do(op); err != nil {
				return f, err
			}
		}
		f.samples = append(f.samples, float64(time.Since(t0).Nanoseconds())/1e3/float64(n))
		measured = measured[n:]
	}
	f.elapsed = time.Since(start).Seconds()
	f.ops = float64(len(ops) - o.warmup)
	after := tb.win.CacheStats()
	f.cache = window.CacheStats{Hits: after.Hits - before.Hits, Misses: after.Misses - before.Misses,
		Installs: after.Installs - before.Installs, Invalidations: after.Invalidations - before.Invalidations,
		Evictions: after.Evictions - before.Evictions}
	if err := tb.win.UnlockAll(ctx); err != nil {
		return f, err
	}
	return f, tb.win.Free(ctx)
}

// checkShards checks every rank's shard after the build and that the shards hold keys
// keys together.
func checkShards(ctx context.Context, w *runtime.World, tb *table, keys int) error {
	n, err := tb.check()
	if err != nil {
		return &errWrong{fmt.Sprintf("after the build, rank %d's shard: %v", w.Rank(), err)}
	}
	counts := []int64{int64(n)}
	if w.Rank() != 0 {
		if err := runtime.Send(ctx, w, counts, 0, tagFigures); err != nil {
			return err
		}
		_, err := runtime.Recv(ctx, w, counts, 0, tagFigures)
		return err
	}
	total := int64(n)
	for r := 1; r < w.Size(); r++ {
		if _, err := runtime.Recv(ctx, w, counts, r, tagFigures); err != nil {
			return err
		}
		total += counts[0]
	}
	counts[0] = total
	for r := 1; r < w.Size(); r++ {
		if err := runtime.Send(ctx, w, counts, r, tagFigures); err != nil {
			return err
		}
	}
	if total != int64(keys) {
		return &errWrong{fmt.Sprintf("after the build the shards hold %d keys, want %d", total, keys)}
	}
	return nil
}

// gather sends this rank's figures to rank 0, which sums them (cache counters, ops/s)
// and pools the latency samples.
func gather(ctx context.Context, w *runtime.World, f rankFigures) (runResult, error) {
	if w.Rank() != 0 {
		if err := runtime.Send(ctx, w, f.vector(), 0, tagFigures); err != nil {
			return runResult{}, err
		}
		return runResult{}, runtime.Send(ctx, w, f.samples, 0, tagSamples)
	}
	all := []rankFigures{f}
	v := make([]float64, nFigures)
	for r := 1; r < w.Size(); r++ {
		if _, err := runtime.Recv(ctx, w, v, r, tagFigures); err != nil {
			return runResult{}, err
		}
		g := figuresOf(v)
		g.samples = make([]float64, int(v[9]))
		if _, err := runtime.Recv(ctx, w, g.samples, r, tagSamples); err != nil {
			return runResult{}, err
		}
		all = append(all, g)
	}
	return summarize(all), nil
}

// summarize combines the ranks' figures.
func summarize(all []rankFigures) runResult {
	var res runResult
	var pooled []float64
	var elapsed, ops float64
	for _, g := range all {
		if g.elapsed > 0 {
			res.OpsPerS += g.ops / g.elapsed
		}
		elapsed += g.elapsed
		ops += g.ops
		res.BuildS = max(res.BuildS, g.build)
		res.Updates += int64(g.updates)
		res.Lookups += int64(g.ops - g.updates)
		res.Hits += g.cache.Hits
		res.Misses += g.cache.Misses
		res.Installs += g.cache.Installs
		res.Invalidations += g.cache.Invalidations
		res.Evictions += g.cache.Evictions
		pooled = append(pooled, g.samples...)
	}
	if ops > 0 {
		res.MeanUS = elapsed / ops * 1e6
	}
	res.MedianUS = median(pooled)
	return res
}

// median is the middle of vals (the mean of the two middle ones for an even count; 0 for
// none); it sorts vals.
func median(vals []float64) float64 {
	n := len(vals)
	if n == 0 {
		return 0
	}
	slices.Sort(vals)
	if n%2 == 1 {
		return vals[n/2]
	}
	return (vals[n/2-1] + vals[n/2]) / 2
}
