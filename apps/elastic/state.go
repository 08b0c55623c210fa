package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// layout is how a World's ranks share the optimizer's state: rank r owns the momentum of
// the coordinates part(dim, n, r), and rank buddy[r] holds a copy of it.
type layout struct {
	me, n, dim int
	buddy      []int // by rank; nil when n is 1 (no copy)
}

func newLayout(w *runtime.World, dim int) layout {
	n := w.Size()
	hosts := make([]string, n)
	for r := range hosts {
		hosts[r] = w.HostOf(r)
	}
	return layout{me: w.Rank(), n: n, dim: dim, buddy: buddies(hosts)}
}

// buddies returns each rank's buddy: the first rank after it, cyclically, on another host,
// so that losing one host loses no state; where every rank shares one host, the next
// rank. One rank has no buddy (nil).
func buddies(hosts []string) []int {
	n := len(hosts)
	if n < 2 {
		return nil
	}
	b := make([]int, n)
	for r := range hosts {
		b[r] = (r + 1) % n
		for d := 1; d < n; d++ {
			if q := (r + d) % n; hosts[q] != hosts[r] {
				b[r] = q
				break
			}
		}
	}
	return b
}

// shard returns the coordinates whose momentum rank r owns.
func (l layout) shard(r int) (lo, hi int) { return part(l.dim, l.n, r) }

// state is what a rank holds once a step committed. The model (w) and the step are the
// same at every rank; the momentum is sharded, as ZeRO stage 1 shards an optimizer's
// state, so each rank's m is its own, and only its copy at the buddy survives the rank.
type state struct {
	step int
	w    []float64
	lay  layout
	m    []float64         // the momentum of lay.shard(lay.me)
	held map[int][]float64 // copies of other ranks' m, by their rank in lay
}

// initial is every rank's state before the first step: zero model and momentum, and
// zero copies, which need no message.
func initial(w *runtime.World, dim int) *state {
	lay := newLayout(w, dim)
	st := &state{w: make([]float64, dim), lay: lay, held: map[int][]float64{}}
	lo, hi := lay.shard(lay.me)
	st.m = make([]float64, hi-lo)
	for r, b := range lay.buddy {
		if b == lay.me && r != lay.me {
			lo, hi := lay.shard(r)
			st.held[r] = make([]float64, hi-lo)
		}
	}
	return st
}

// tagCopy is the tag of the momentum copies sent to buddies.
const tagCopy = 1

// replicate sends m, this rank's momentum under lay, to its buddy and returns the copies
// it receives from the ranks whose buddy it is.
func replicate(ctx context.Context, w *runtime.World, lay layout, m []float64) (map[int][]float64, error) {
	held := map[int][]float64{}
	if lay.n < 2 {
		return held, nil
	}
	var reqs []*runtime.Request
	for r, b := range lay.buddy {
		if b != lay.me || r == lay.me {
			continue
		}
		lo, hi := lay.shard(r)
		held[r] = make([]float64, hi-lo)
		q, err := runtime.Irecv(w, held[r], r, tagCopy)
		if err != nil {
			return nil, fmt.Errorf("receive rank %d's momentum copy: %w", r, err)
		}
		reqs = append(reqs, q)
	}
	q, err := runtime.Isend(w, m, lay.buddy[lay.me], tagCopy)
	if err != nil {
		return nil, fmt.Errorf("send the momentum copy to rank %d: %w", lay.buddy[lay.me], err)
	}
	if err := runtime.WaitAll(ctx, append(reqs, q), nil); err != nil {
		return nil, fmt.Errorf("momentum copies: %w", err)
	}
	return held, nil
}

// step runs st's next step over w and returns the state it leads to, which the caller
// commits only once every rank succeeded. The ranks split the step's batch by contiguous
// ranges and sum the gradients by Allreduce; each rank updates the coordinates it owns,
// Allgatherv gathers the model, and each rank's new momentum goes to its buddy.
func (t *trainer) step(ctx context.Context, w *runtime.World, st *state) (*state, error) {
	lay := st.lay
	g := make([]float64, lay.dim)
	j0, j1 := part(t.p.batch, lay.n, lay.me)
	t.p.gradSum(st.w, g, st.step, j0, j1)
	if err := collectives.Allreduce(ctx, w, nil, g, collectives.Sum[float64]()); err != nil {
		return nil, fmt.Errorf("step %d: gradient Allreduce: %w", st.step, err)
	}
	for k := range g {
		g[k] /= float64(t.p.batch)
	}
	next := &state{step: st.step + 1, w: slices.Clone(st.w), lay: lay, m: slices.Clone(st.m)}
	lo, _ := lay.shard(lay.me)
	t.opt.update(next.w, next.m, g, lo)
	counts := make([]int, lay.n)
	for r := range counts {
		a, b := lay.shard(r)
		counts[r] = b - a
	}
	if err := collectives.Allgatherv(ctx, w, nil, next.w, counts); err != nil {
		return nil, fmt.Errorf("step %d: model Allgatherv: %w", st.step, err)
	}
	var err error
	if next.held, err = replicate(ctx, w, lay, next.m); err != nil {
		return nil, fmt.Errorf("step %d: %w", st.step, err)
	}
	return next, nil
}

// errLost is the error of a restore that found a shard with no copy left.
var errLost = errors.New("optimizer state lost")

// restore rebuilds the state over w, a World made of ranks of st's World (their committed
// states) and perhaps new ranks (st nil). The first rank holding a state broadcasts the
// step and the model. The momentum is reassembled by one Allreduce: each survivor puts
// its own shard, and the copies it holds of the lost ranks' shards, at their coordinates,
// and counts each shard it gave. Every shard must be given exactly once. Then w's ranks
// take their shards under w's layout and send them to their buddies.
func (t *trainer) restore(ctx context.Context, w *runtime.World, st *state) (*state, error) {
	n := w.Size()
	mine, old := []int64{-1}, make([]int64, n)
	if st != nil {
		mine[0] = int64(st.lay.me)
	}
	if err := collectives.Allgather(ctx, w, mine, old); err != nil {
		return nil, fmt.Errorf("restore: gather the ranks' former ranks: %w", err)
	}
	root := slices.IndexFunc(old, func(r int64) bool { return r >= 0 })
	if root < 0 {
		return nil, fmt.Errorf("%w: every rank that held the model failed; rerun the job", errLost)
	}
	hdr := []int64{0, 0, int64(t.target)}
	model := make([]float64, t.o.dim)
	if st != nil {
		hdr[0], hdr[1] = int64(st.step), int64(st.lay.n)
		copy(model, st.w)
	}
	if err := collectives.Bcast(ctx, w, hdr, root); err != nil {
		return nil, fmt.Errorf("restore: broadcast the step: %w", err)
	}
	if err := collectives.Bcast(ctx, w, model, root); err != nil {
		return nil, fmt.Errorf("restore: broadcast the model: %w", err)
	}
	t.target = int(hdr[2])
	was := int(hdr[1])
	buf := make([]float64, t.o.dim+was)
	if st != nil {
		present := map[int]bool{}
		for _, r := range old {
			present[int(r)] = true
		}
		give := func(r int, m []float64) {
			lo, _ := st.lay.shard(r)
			copy(buf[lo:], m)
			buf[t.o.dim+r]++
		}
		give(st.lay.me, st.m)
		for r, m := range st.held {
			if !present[r] {
				give(r, m)
			}
		}
	}
	if err := collectives.Allreduce(ctx, w, nil, buf, collectives.Sum[float64]()); err != nil {
		return nil, fmt.Errorf("restore: reassemble the momentum: %w", err)
	}
	for r, c := range buf[t.o.dim:] {
		if c != 1 {
			return nil, fmt.Errorf("%w at step %d: rank %d of the %d-rank World failed with the rank that held the only copy of its momentum (a rank's copy is on the next rank of another host); rerun the job", errLost, hdr[0], r, was)
		}
	}
	lay := newLayout(w, t.o.dim)
	lo, hi := lay.shard(lay.me)
	next := &state{step: int(hdr[0]), w: model, lay: lay, m: slices.Clone(buf[lo:hi])}
	var err error
	if next.held, err = replicate(ctx, w, lay, next.m); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	return next, nil
}
