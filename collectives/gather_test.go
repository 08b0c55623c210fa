package collectives

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// garbage is what a buffer holds before a call: values unlike the ranks' inputs.
func garbage[T runtime.Elem](gen func(r, i int) T, n int) []T { return input(gen, 1000, n) }

// gathered is the ranks' inputs of n elements, one after the other in rank order.
func gathered[T runtime.Elem](gen func(r, i int) T, p, n int) []T {
	var all []T
	for r := range p {
		all = append(all, input(gen, r, n)...)
	}
	return all
}

// checkGather runs one Gather of n elements a rank and checks root's recv against the
// ranks' inputs in rank order, that send is left as it was, and that recv at the other
// ranks (garbage, or nil at every third rank) is not touched.
func checkGather[T runtime.Elem](e rankEnv, gen func(r, i int) T, n, root int, inPlace bool) error {
	what := name[T](fmt.Sprintf("gather root=%d", root), n, inPlace)
	send, recv := input(gen, e.r, n), []T(nil)
	switch {
	case e.r == root:
		recv = garbage(gen, e.p*n)
		if inPlace {
			copy(recv[root*n:], send)
			send = nil
		}
	case e.r%3 != 0:
		recv = garbage(gen, n+1)
	}
	before := slices.Clone(recv)
	if err := Gather(e.ctx, e.w, send, recv, root); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if send != nil {
		if err := compare(what+": send changed", send, input(gen, e.r, n)); err != nil {
			return err
		}
	}
	if e.r != root {
		return compare(what+": recv at a rank other than root changed", recv, before)
	}
	return compare(what, recv, gathered(gen, e.p, n))
}

// checkScatter runs one Scatter of n elements a rank from root's input and checks every
// rank's block, that root's send is left as it was, and that send at the other ranks
// (garbage, or nil at every third rank) is not touched.
func checkScatter[T runtime.Elem](e rankEnv, gen func(r, i int) T, n, root int, inPlace bool) error {
	what := name[T](fmt.Sprintf("scatter root=%d", root), n, inPlace)
	send, recv := garbage(gen, n+1), garbage(gen, n)
	switch {
	case e.r == root && inPlace:
		send, recv = input(gen, root, e.p*n), nil
	case e.r == root:
		send = input(gen, root, e.p*n)
	case e.r%3 == 0:
		send = nil
	}
	before := slices.Clone(send)
	if err := Scatter(e.ctx, e.w, send, recv, root); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := compare(what+": send changed", send, before); err != nil {
		return err
	}
	if recv == nil { // in place: root's block is in send, checked above
		return nil
	}
	want := make([]T, n)
	for i := range want {
		want[i] = gen(root, e.r*n+i)
	}
	return compare(what, recv, want)
}

// rootedSuite runs Gather and Scatter over counts, roots and in place and not, with gen's
// element type.
func rootedSuite[T runtime.Elem](e rankEnv, gen func(r, i int) T, counts, roots []int) error {
	for k, n := range counts {
		for j, root := range roots {
			inPlace := (j+k)%2 == 0
			if err := checkGather(e, gen, n, root, inPlace); err != nil {
				return err
			}
			if err := checkScatter(e, gen, n, root, !inPlace); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestGatherScatter checks Gather and Scatter against the sequential reference on 1 to 9
// ranks, every element type, counts 0, 1, odd and past the eager limit, in place and not:
// every root for the short counts (the subtree that wraps past rank p-1 moves for each),
// the first, middle and last for the others.
func TestGatherScatter(t *testing.T) {
	for p := 1; p <= 9; p++ {
		t.Run(fmt.Sprintf("p=%d", p), func(t *testing.T) {
			runJob(t, p, runtimetest.Options{Transport: "shm"}, 40*time.Second, func(e rankEnv) error {
				every := make([]int, p)
				for i := range every {
					every[i] = i
				}
				some := []int{0, p / 2, p - 1}
				short, long := []int{0, 1, 7}, []int{2*p + 1, 3001}
				for _, f := range []func() error{
					func() error { return rootedSuite(e, mat2Case[int8]().gen, short, every) },
					func() error { return rootedSuite(e, mat2Case[int8]().gen, long, some) },
					func() error { return rootedSuite(e, mat2Case[uint16]().gen, short, some) },
					func() error { return rootedSuite(e, mat2Case[int32]().gen, long, some) },
					func() error { return rootedSuite(e, affineCase[int64]().gen, short, every) },
					func() error { return rootedSuite(e, affineCase[uint64]().gen, long, some) },
					func() error { return rootedSuite(e, floatCases[float32]()[0].gen, short, some) },
					func() error { return rootedSuite(e, floatCases[float64]()[0].gen, long, some) },
					func() error { return rootedSuite(e, stressComplex[complex64]()[1].gen, short, some) },
					func() error { return rootedSuite(e, complexCases()[0].gen, long, some) },
				} {
					if err := f(); err != nil {
						return err
					}
				}
				return Barrier(e.ctx, e.w)
			})
		})
	}
}

// TestGatherScatterLarge moves a few MiB (rendezvous messages, whole subtrees of blocks
// forwarded by inner ranks, and at roots other than 0 the subtree that wraps past rank
// p-1, copied through scratch), on shm and over tcp. The ranks' inputs are the blocks of
// one vector made before the job, and each rank reuses its buffers from call to call:
// under -race, generating the inputs in every rank, and registering fresh buffers for
// every rendezvous, took seconds.
func TestGatherScatterLarge(t *testing.T) {
	const total = 4 << 20 // bytes at root
	jobs := []struct {
		p   int
		opt runtimetest.Options
	}{
		{3, runtimetest.Options{Transport: "shm"}},
		{6, runtimetest.Options{Transport: "shm"}},
		{4, runtimetest.Options{Transport: "tcp"}},
	}
	for _, j := range jobs {
		t.Run(fmt.Sprintf("%s/p=%d", j.opt.Transport, j.p), func(t *testing.T) {
			n := total / 8 / j.p
			all := make([]float64, j.p*(n+2))
			for i := range all {
				all[i] = float64(i)
			}
			runJob(t, j.p, j.opt, 40*time.Second, func(e rankEnv) error {
				b := largeBufs{make([]float64, len(all)), make([]float64, len(all))}
				for k, root := range []int{0, e.p - 1, 1} {
					if err := b.gather(e, all[:e.p*(n+k)], root, k == 1); err != nil {
						return err
					}
					if err := b.scatter(e, all[:e.p*(n+2-k)], root, k == 2); err != nil {
						return err
					}
				}
				return Barrier(e.ctx, e.w)
			})
		})
	}
}

// largeBufs are a rank's send and recv buffers, reused by its calls.
type largeBufs struct{ send, recv []float64 }

// gather gathers the blocks of want, rank r's block r, at root.
func (b largeBufs) gather(e rankEnv, want []float64, root int, inPlace bool) error {
	n := len(want) / e.p
	what := name[float64](fmt.Sprintf("gather root=%d", root), n, inPlace)
	send, recv := b.send[:n], []float64(nil)
	copy(send, want[e.r*n:])
	if e.r == root {
		recv = b.recv[:len(want)]
		clear(recv)
		if inPlace {
			copy(recv[root*n:], send)
			send = nil
		}
	}
	if err := Gather(e.ctx, e.w, send, recv, root); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if e.r != root {
		return nil
	}
	return compare(what, recv, want)
}

// scatter scatters want from root: rank r gets block r.
func (b largeBufs) scatter(e rankEnv, want []float64, root int, inPlace bool) error {
	n := len(want) / e.p
	what := name[float64](fmt.Sprintf("scatter root=%d", root), n, inPlace)
	var send []float64
	recv := b.recv[:n]
	clear(recv)
	if e.r == root {
		send = b.send[:len(want)]
		copy(send, want)
		if inPlace {
			recv = nil
		}
	}
	if err := Scatter(e.ctx, e.w, send, recv, root); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if recv == nil {
		return compare(what, send, want)
	}
	return compare(what, recv, want[e.r*n:(e.r+1)*n])
}

// TestRootedLayouts runs Gather, Scatter, Scan and Exscan over tcp and over two pretend
// hosts.
func TestRootedLayouts(t *testing.T) {
	layouts := []struct {
		name string
		n    int
		opt  runtimetest.Options
	}{
		{"tcp", 3, runtimetest.Options{Transport: "tcp"}},
		{"hosts", 5, runtimetest.Options{Hosts: []string{"a", "a", "b", "b", "b"}}},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			runJob(t, l.n, l.opt, 40*time.Second, func(e rankEnv) error {
				counts := []int{1, 3000, 20000}
				if err := rootedSuite(e, affineCase[int64]().gen, counts, []int{0, e.p - 1, 1}); err != nil {
					return err
				}
				return scanSuite(e, []opCase[int64]{affineCase[int64](), intCases[int64]()[0]}, counts)
			})
		})
	}
}

// TestCallTag: calls at one number whose kinds or roots differ have different tags, and
// a tag of one (number, kind, root) comes back for another kind or root only many calls
// later: at least 2^31/(3*tagKinds*(p+1)) on p ranks, for p up to 4096 (kindTag's
// documentation).
func TestCallTag(t *testing.T) {
	const m = runtime.MaxTag + 1
	closest, d, k := m, 1, tagStride
	for _, p := range []int{1, 2, 3, 4, 9, 64, 1024, 4096} {
		// The call of index j = kind + tagKinds*root at number s has the tag of index
		// j' at number s + (j-j')*tagStride; j runs over [0, tagKinds*(p+1)).
		for ; d < tagKinds*(p+1); d, k = d+1, (k+tagStride)%m {
			closest = min(closest, k, m-k)
		}
		if want := m / (3 * tagKinds * (p + 1)); closest < want {
			t.Errorf("p=%d: two kinds' or roots' tags %d calls apart, want at least %d", p, closest, want)
		}
	}
	calls := []struct {
		tag  int
		kind string
		root int // -1: none
	}{{5, "Bcast", 0}, {5, "Allreduce", -1}, {5, "Reduce", 1}, {5, "Reduce", 2}, {5, "Gather", 0},
		{5, "Iallreduce", -1}, {runtime.MaxTag, "Bcast", 0}, {runtime.MaxTag, "Allreduce", -1}}
	seen := map[int]int{}
	for i, c := range calls {
		tag := kindTag(c.tag, hostgroup.Kind(c.kind))
		if c.root >= 0 {
			tag = rootTag(tag, c.root)
		}
		if j, ok := seen[tag]; ok || tag < 0 || tag > runtime.MaxTag {
			t.Errorf("%+v: tag %d, out of range or that of %+v", c, tag, calls[j])
		}
		seen[tag] = i
	}
	if kindTag(runtime.MaxTag, 0) != runtime.MaxTag || rootTag(7, 0) != 7 {
		t.Errorf("kind 0 or root 0 changes a tag")
	}
}
