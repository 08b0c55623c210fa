package collectives

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// vLayout is a v-collective's layout over p ranks: counts (some 0) and displs (nil, or
// the blocks in reverse rank order with a gap of one element before each), and the length
// of the buffer that holds them.
type vLayout struct {
	counts, displs []int
	n              int
}

// layoutOf returns layout kind (0: packed, displs nil; 1: reversed with gaps) for p ranks
// and counts (r*3+seed)%(max+1) (max 0: every count 0).
func layoutOf(p, seed, max, kind int) vLayout {
	l := vLayout{counts: make([]int, p)}
	for r := range l.counts {
		l.counts[r] = (r*3 + seed) % (max + 1)
	}
	if kind == 0 {
		for _, c := range l.counts {
			l.n += c
		}
		return l
	}
	l.displs = make([]int, p)
	for r := p - 1; r >= 0; r-- {
		l.n++ // the gap
		l.displs[r] = l.n
		l.n += l.counts[r]
	}
	return l
}

// at returns block r's displacement.
func (l vLayout) at(r int) int { return displ(l.counts, l.displs, r) }

// checkGatherv runs one Gatherv over l and checks root's recv (each block where l puts
// it, the gaps untouched), that send is left as it was, and that other ranks' recv is
// untouched.
func checkGatherv[T runtime.Elem](e rankEnv, gen func(r, i int) T, l vLayout, root int, inPlace bool) error {
	what := name[T](fmt.Sprintf("gatherv root=%d counts=%v displs=%v", root, l.counts, l.displs), l.n, inPlace)
	send := input(gen, e.r, l.counts[e.r])
	var recv []T
	counts, displs := l.counts, l.displs
	if e.r == root {
		recv = garbage(gen, l.n)
		if inPlace {
			copy(recv[l.at(root):], send)
			send = nil
		}
	} else {
		recv = garbage(gen, 2)
		if e.r%2 == 0 {
			counts, displs = nil, nil // not read at other ranks
		}
	}
	want := slices.Clone(recv)
	if e.r == root {
		for r := range e.p {
			copy(want[l.at(r):], input(gen, r, l.counts[r]))
		}
	}
	if err := Gatherv(e.ctx, e.w, send, recv, counts, displs, root); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if send != nil {
		if err := compare(what+": send changed", send, input(gen, e.r, l.counts[e.r])); err != nil {
			return err
		}
	}
	return compare(what, recv, want)
}

// checkScatterv runs one Scatterv over l and checks every rank's block and that root's
// send is left as it was.
func checkScatterv[T runtime.Elem](e rankEnv, gen func(r, i int) T, l vLayout, root int, inPlace bool) error {
	what := name[T](fmt.Sprintf("scatterv root=%d counts=%v displs=%v", root, l.counts, l.displs), l.n, inPlace)
	src := input(gen, root, l.n)
	var send []T
	counts, displs := l.counts, l.displs
	recv := garbage(gen, l.counts[e.r])
	if e.r == root {
		send = slices.Clone(src)
		if inPlace {
			recv = nil
		}
	} else if e.r%2 == 0 {
		counts, displs = nil, nil
	}
	if err := Scatterv(e.ctx, e.w, send, counts, displs, recv, root); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if e.r == root {
		if err := compare(what+": send changed", send, src); err != nil {
			return err
		}
		if inPlace {
			return nil
		}
	}
	return compare(what, recv, src[l.at(e.r):l.at(e.r)+l.counts[e.r]])
}

// vJobs are the jobs the v-collectives run on: shm, tcp, and two pretend hosts of two
// ranks each (shm within, tcp between).
var vJobs = []struct {
	name string
	p    []int
	opt  runtimetest.Options
}{
	{"shm", []int{1, 2, 3, 4, 5}, runtimetest.Options{Transport: "shm"}},
	{"tcp", []int{2, 3, 5}, runtimetest.Options{Transport: "tcp"}},
	{"hosts", []int{4}, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}},
}

// TestGathervScatterv checks Gatherv and Scatterv against the sequential reference on
// every root, packed and scattered layouts with empty blocks, short and rendezvous
// counts, in place and not, with several element types.
func TestGathervScatterv(t *testing.T) {
	for _, j := range vJobs {
		for _, p := range j.p {
			t.Run(fmt.Sprintf("%s/p=%d", j.name, p), func(t *testing.T) {
				runJob(t, p, j.opt, 60*time.Second, func(e rankEnv) error {
					k := 0
					for _, max := range []int{0, 1, 5, 3000} {
						for kind := range 2 {
							for root := range p {
								l := layoutOf(p, root+kind, max, kind)
								k++
								inPlace := k%2 == 0
								for _, f := range []func() error{
									func() error { return checkGatherv(e, affineCase[int64]().gen, l, root, inPlace) },
									func() error { return checkScatterv(e, affineCase[int64]().gen, l, root, !inPlace) },
									func() error { return checkGatherv(e, floatCases[float32]()[0].gen, l, root, !inPlace) },
									func() error { return checkScatterv(e, mat2Case[uint8]().gen, l, root, inPlace) },
								} {
									if err := f(); err != nil {
										return err
									}
								}
							}
						}
					}
					return Barrier(e.ctx, e.w)
				})
			})
		}
	}
}

// TestScattervSharedBlocks: Scatterv blocks may overlap at root (they are only read):
// every rank gets the same elements.
func TestScattervSharedBlocks(t *testing.T) {
	runJob(t, 4, runtimetest.Options{Transport: "shm"}, 20*time.Second, func(e rankEnv) error {
		send := []int32{9, 8, 7, 6}
		counts, displs := []int{3, 3, 3, 3}, []int{1, 0, 1, 1}
		recv := make([]int32, 3)
		if err := Scatterv(e.ctx, e.w, send, counts, displs, recv, 2); err != nil {
			return err
		}
		return compare("shared blocks", recv, send[displs[e.r]:displs[e.r]+3])
	})
}

// TestGathervBadArguments: a root's bad layout or lengths, and a bad root at any rank,
// fail at once with runtime.ErrInvalid naming the call and what is wrong, and the calls
// work afterwards.
func TestGathervBadArguments(t *testing.T) {
	runJob(t, 3, runtimetest.Options{Transport: "shm"}, 20*time.Second, func(e rankEnv) error {
		ctx, w, me := e.ctx, e.w, e.r
		two, six := make([]int64, 2), make([]int64, 6)
		cases := []struct {
			name string
			err  error
			want string
		}{
			{"Gatherv", Gatherv(ctx, w, two, six, []int{2, 2, 2}, nil, -1), "root -1 of 3 ranks"},
			{"Gatherv", Gatherv(ctx, w, two, six, []int{2, 2, 2}, nil, 3), "root 3 of 3 ranks"},
			{"Gatherv", Gatherv(ctx, w, two, six, []int{2, 2}, nil, me), "len(counts) 2 != 3 ranks"},
			{"Gatherv", Gatherv(ctx, w, two, six, []int{2, -1, 2}, nil, me), "counts[1] = -1 is negative"},
			{"Gatherv", Gatherv(ctx, w, two, six, []int{2, 3, 2}, nil, me), "len(recv) 6 < sum(counts) 7"},
			{"Gatherv", Gatherv(ctx, w, two, six, []int{2, 2, 2}, []int{0, 2}, me), "len(displs) 2 != 3 ranks"},
			{"Gatherv", Gatherv(ctx, w, two, six, []int{2, 2, 2}, []int{0, 5, 2}, me), "block 1, [5, 7) at displs[1], is outside len(recv) 6"},
			{"Gatherv", Gatherv(ctx, w, two, six, []int{2, 2, 2}, []int{0, -1, 2}, me), "block 1, [-1, 1) at displs[1]"},
			{"Gatherv", Gatherv(ctx, w, two, six, []int{2, 2, 2}, []int{4, 1, 0}, me), "blocks 2 [0, 2) and 1 [1, 3) overlap"},
			{"Gatherv", Gatherv(ctx, w, two, six, []int{1, 1, 1}, nil, me), "len(send) 2 at root != counts[" + fmt.Sprint(me) + "] 1"},
			{"Gatherv", Gatherv(ctx, w, six[2*me:2*me+2], six, []int{2, 2, 2}, nil, me), "overlap"},
			{"Scatterv", Scatterv(ctx, w, six, []int{2, 2, 2}, nil, two, -1), "root -1 of 3 ranks"},
			{"Scatterv", Scatterv(ctx, w, six, []int{2, 2, 2}, []int{0, 2, 5}, two, me), "block 2, [5, 7) at displs[2], is outside len(send) 6"},
			{"Scatterv", Scatterv(ctx, w, six, []int{2, -2, 2}, nil, two, me), "counts[1] = -2 is negative"},
			{"Scatterv", Scatterv(ctx, w, six, []int{3, 3, 3}, nil, two, me), "len(send) 6 < sum(counts) 9"},
			{"Scatterv", Scatterv(ctx, w, six, []int{2, 2, 2}, nil, six[:3], me), "len(recv) 3 at root != counts[" + fmt.Sprint(me) + "] 2"},
			{"Scatterv", Scatterv(ctx, w, six, []int{2, 2, 2}, nil, six[1:3], me), "nil recv at root for in place"},
			{"Gatherv", Gatherv(ctx, nil, two, six, nil, nil, 0), "nil world"},
			{"Scatterv", Scatterv(ctx, nil, six, nil, nil, two, 0), "nil world"},
		}
		for i, c := range cases {
			if !errors.Is(c.err, runtime.ErrInvalid) || !strings.HasPrefix(c.err.Error(), "collectives: "+strings.ToLower(c.name)+": ") ||
				!strings.Contains(strings.ToLower(c.err.Error()), strings.ToLower(c.want)) {
				return fmt.Errorf("case %d (%s): got %v, want an ErrInvalid error naming %q", i, c.name, c.err, c.want)
			}
		}
		if err := checkGatherv(e, mat2Case[int16]().gen, layoutOf(3, 1, 3, 1), 1, false); err != nil {
			return fmt.Errorf("after misuse: %w", err)
		}
		return checkScatterv(e, mat2Case[int16]().gen, layoutOf(3, 2, 3, 0), 2, true)
	})
}

// TestGathervMismatch: a rank whose length differs from root's count for it (longer,
// shorter, or sending to a block of 0) makes the receiving side fail with ErrTruncated or
// ErrMismatch; every other rank succeeds with what its arguments ask for or ends at the
// deadline, and the World works afterwards.
func TestGathervMismatch(t *testing.T) {
	const wait = 400 * time.Millisecond
	counts := []int{3, 2, 0, 4, 1}
	cases := []struct {
		name    string
		bad, by int // rank bad passes counts[bad]+by elements
		root    int
	}{
		{"Gatherv", 1, 1, 0}, {"Gatherv", 3, -2, 4}, {"Gatherv", 2, 1, 1}, {"Gatherv", 0, -3, 2},
		{"Scatterv", 1, 1, 0}, {"Scatterv", 3, -2, 4}, {"Scatterv", 2, 1, 1}, {"Scatterv", 0, -3, 2},
	}
	seen := make([]atomic.Int32, len(cases))
	runJob(t, 5, runtimetest.Options{Transport: "shm"}, 40*time.Second, func(e rankEnv) error {
		gen := affineCase[int64]().gen
		for k, c := range cases {
			m := counts[e.r]
			if e.r == c.bad {
				m += c.by
			}
			run := func(e rankEnv) (func() error, error) {
				if c.name == "Gatherv" {
					var recv []int64
					if e.r == c.root {
						recv = garbage(gen, 10)
					}
					err := Gatherv(e.ctx, e.w, input(gen, e.r, m), recv, counts, nil, c.root)
					return func() error {
						if e.r != c.root {
							return nil
						}
						return errors.New("root succeeded with a wrong count")
					}, err
				}
				var send []int64
				if e.r == c.root {
					send = input(gen, c.root, 10)
				}
				recv := make([]int64, m)
				err := Scatterv(e.ctx, e.w, send, counts, nil, recv, c.root)
				return func() error {
					return compare("scatterv", recv, input(gen, c.root, 10)[offset(counts, e.r):offset(counts, e.r)+m])
				}, err
			}
			out, err := runMismatched(e, wait, strings.ToLower(c.name), run)
			if err != nil {
				return fmt.Errorf("case %d: %w", k, err)
			}
			if out == mismatchSeen {
				seen[k].Add(1)
			}
			if err := checkGatherv(e, mat2Case[uint8]().gen, layoutOf(5, k, 3, k%2), k%e.p, k%2 == 0); err != nil {
				return fmt.Errorf("case %d: the call after: %w", k, err)
			}
		}
		return nil
	})
	for k, c := range cases {
		if seen[k].Load() == 0 {
			t.Errorf("case %d (%s): no rank reported the mismatch", k, c.name)
		}
	}
}

// TestVZeroAllocs: small Gatherv, Scatterv, ReduceScatterV and Alltoallw (Sizes nil)
// calls allocate nothing in steady state, measured at the root (rank 1) and at another
// rank.
func TestVZeroAllocs(t *testing.T) {
	const p = 4
	ctx := context.Background()
	j, err := runtimetest.Start(ctx, p, runtimetest.Options{Transport: "shm"})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	defer j.Finalize(ctx)
	l := layoutOf(p, 1, 3, 1)
	bufs := make([][2][]int64, p)
	for r := range bufs {
		bufs[r] = [2][]int64{make([]int64, l.counts[r]), make([]int64, l.n)}
	}
	wb := ByteBlocks{Counts: []int{8, 8, 8, 8}, Displs: []int{24, 16, 8, 0}}
	wSend, wRecv := make([][]byte, p), make([][]byte, p)
	for r := range p {
		wSend[r], wRecv[r] = make([]byte, 32), make([]byte, 32)
	}
	for _, m := range []int{1, 2} {
		zeroAllocsInStep(t, j, m, "Gatherv", func(r int, w *runtime.World) error {
			return Gatherv(ctx, w, bufs[r][0], bufs[r][1], l.counts, l.displs, 1)
		})
		zeroAllocsInStep(t, j, m, "Scatterv", func(r int, w *runtime.World) error {
			return Scatterv(ctx, w, bufs[r][1], l.counts, l.displs, bufs[r][0], 1)
		})
		zeroAllocsInStep(t, j, m, "ReduceScatterV", func(r int, w *runtime.World) error {
			return ReduceScatterV(ctx, w, nil, bufs[r][1][:l.n-p], l.counts, Sum[int64]())
		})
		zeroAllocsInStep(t, j, m, "Alltoallw", func(r int, w *runtime.World) error {
			return Alltoallw(ctx, w, wSend[r], wb, wRecv[r], wb)
		})
	}
}
