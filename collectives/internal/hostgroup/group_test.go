package hostgroup

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/runtime"
)

// The tests below drive groups whose members are goroutines of the test, over plain
// memory: one anonymous shared mapping holds every member's region, as the arena's
// regions would. The mapping lies outside the Go heap, as shared scratch does, so the
// race detector sees only the members' own synchronization (the flags' atomics).

// testChunk is the big buffers' size of the test groups: small, so that short vectors
// take several chunks.
const testChunk = 4 << 10

// testCall is a Call without a World: a context and a name.
type testCall struct {
	ctx context.Context
	id  CallID
}

func (c *testCall) Context() context.Context    { return c.ctx }
func (c *testCall) World() *runtime.World       { return nil }
func (c *testCall) ID() CallID                  { return c.id }
func (c *testCall) Flush(bool)                  {}
func (c *testCall) Req(int) *runtime.Request    { return nil }
func (c *testCall) FreshScratch() (bool, error) { return false, nil }

// plainGroups returns p members' views of one group over plain memory, set up: each
// member's region is a part of one shared anonymous mapping.
func plainGroups(t *testing.T, p int) []*Group {
	t.Helper()
	size := regionSize(testChunk)
	mem, err := unix.Mmap(-1, 0, p*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	regions := make([][]byte, p)
	ranks := make([]int, p)
	for i := range p {
		regions[i] = mem[i*size : (i+1)*size : (i+1)*size]
		ranks[i] = i
	}
	gs := make([]*Group, p)
	for i := range gs {
		g := New(ranks, i)
		g.mem, g.chunk = regions, testChunk
		gs[i] = g
	}
	return gs
}

// call starts call number n (kind Allreduce) on g, as Prepare does once g is set up.
func call(ctx context.Context, g *Group, n uint64, kind uint8, root int) (*testCall, error) {
	c := &testCall{ctx: ctx, id: CallID{Number: n, Kind: kind, Root: root, Tag: int(n)}}
	g.call = c.id
	return c, g.settle(c)
}

// runMembers runs f for every member at once and returns their errors, by member.
func runMembers(gs []*Group, f func(g *Group) error) []error {
	errs := make([]error, len(gs))
	var wg sync.WaitGroup
	for i, g := range gs {
		wg.Go(func() { errs[i] = f(g) })
	}
	wg.Wait()
	return errs
}

// TestStepsPlain: members exchange a word per step through their small slots, for
// enough steps that both parities of the flag lines and slots are reused many times.
// Every member reads every other member's word of each step after the step, and finds
// the value that member wrote before publishing it.
func TestStepsPlain(t *testing.T) {
	const steps = 200
	for _, p := range []int{2, 3, 5} {
		gs := plainGroups(t, p)
		errs := runMembers(gs, func(g *Group) error {
			for s := range steps {
				c, err := call(t.Context(), g, uint64(s+1), Kind("Allreduce"), -1)
				if err != nil {
					return err
				}
				v := g.Next()
				SmallSlot[uint64](g, g.Me, v, 1)[0] = uint64(1000*s + g.Me)
				g.SetMeta(v, 8)
				if err := g.Step(c, v, 8); err != nil {
					return err
				}
				for j := range g.Ranks {
					if got, want := SmallSlot[uint64](g, j, v, 1)[0], uint64(1000*s+j); got != want {
						return fmt.Errorf("step %d: member %d read %d from member %d, want %d", v, g.Me, got, j, want)
					}
				}
			}
			return nil
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("p=%d, member %d: %v", p, i, err)
			}
		}
	}
}

// TestStepLastPlain: in a rooted call's last step only the root waits; the others go on
// to their next call (StepLast, WaitNone), whose start waits for the root (settle). The
// root always reads every member's value of the call, though the others never wait for
// it within the call.
func TestStepLastPlain(t *testing.T) {
	const calls, p = 100, 4
	gs := plainGroups(t, p)
	errs := runMembers(gs, func(g *Group) error {
		for n := range calls {
			root := n % p
			c, err := call(t.Context(), g, uint64(n+1), Kind("Gather"), root)
			if err != nil {
				return err
			}
			v := g.Next()
			SmallSlot[uint64](g, g.Me, v, 1)[0] = uint64(n*p + g.Me)
			g.SetMeta(v, 8)
			if g.Me != root {
				if err := g.StepLast(c, v, 8, WaitNone); err != nil {
					return err
				}
				continue
			}
			if err := g.Step(c, v, 8); err != nil {
				return err
			}
			for j := range p {
				if got := SmallSlot[uint64](g, j, v, 1)[0]; got != uint64(n*p+j) {
					return fmt.Errorf("call %d: root %d read %d from member %d, want %d", n, root, got, j, n*p+j)
				}
			}
		}
		return nil
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("member %d: %v", i, err)
		}
	}
}

// allgatherPlain is an Allgather of n words per member through Chunks: member i's block
// is i*n+k at k. It returns what member g gathered.
func allgatherPlain(c Call, g *Group, n, bytes int) ([]uint64, error) {
	p := len(g.Ranks)
	recv := make([]uint64, p*n)
	mine := recv[g.Me*n : (g.Me+1)*n]
	for k := range mine {
		mine[k] = uint64(g.Me*n + k)
	}
	err := g.Chunks(c, n, 8, 1, bytes, func(lo, hi, b int) {
		ScratchInBig(g, Big[uint64](g, g.Me, b, hi-lo), mine[lo:hi], false)
	}, func(lo, hi, b int) {
		for j := range p {
			if j != g.Me {
				ScratchOut(g, recv[j*n+lo:j*n+hi], Big[uint64](g, j, b, hi-lo))
			}
		}
	})
	return recv, err
}

// TestChunksPlain: an Allgather whose blocks take from one to several chunks through
// the alternating big buffers gives every member every block, and each member copies
// its block in once and the others' out once.
func TestChunksPlain(t *testing.T) {
	const p = 3
	gs := plainGroups(t, p)
	for i, n := range []int{1, testChunk / 8, testChunk/8 + 1, 5*testChunk/8 + 3} {
		errs := runMembers(gs, func(g *Group) error {
			c, err := call(t.Context(), g, uint64(i+1), Kind("Allgather"), -1)
			if err != nil {
				return err
			}
			before := g.Moved
			recv, err := allgatherPlain(c, g, n, 8*n)
			if err != nil {
				return err
			}
			for k, x := range recv {
				if x != uint64(k) {
					return fmt.Errorf("n=%d: member %d holds %d at %d", n, g.Me, x, k)
				}
			}
			if st, ld := g.Moved.Stored-before.Stored, g.Moved.Loaded-before.Loaded; st != 8*n || ld != 8*n*(p-1) {
				return fmt.Errorf("n=%d: member %d stored %d and loaded %d bytes, want %d and %d", n, g.Me, st, ld, 8*n, 8*n*(p-1))
			}
			return nil
		})
		for m, err := range errs {
			if err != nil {
				t.Errorf("member %d: %v", m, err)
			}
		}
	}
}

// TestMismatchCountPlain: members that pass different byte counts to one call all fail
// with ErrMismatch at its first step, and the group stays in step (CleanFail): after
// Fail, the next call with matching counts succeeds without a new setup.
func TestMismatchCountPlain(t *testing.T) {
	const p, n = 3, 600
	gs := plainGroups(t, p)
	errs := runMembers(gs, func(g *Group) error {
		c, err := call(t.Context(), g, 1, Kind("Allgather"), -1)
		if err != nil {
			return err
		}
		bytes := 8 * n
		if g.Me == 1 {
			bytes += 8 // another count than the others'
		}
		_, err = allgatherPlain(c, g, n, bytes)
		if !errors.Is(err, runtime.ErrMismatch) {
			return fmt.Errorf("member %d: the mismatched call returned %v, want ErrMismatch", g.Me, err)
		}
		g.Fail()
		if !g.Status().Ready {
			return fmt.Errorf("member %d: a count mismatch broke the group", g.Me)
		}
		c, err = call(t.Context(), g, 2, Kind("Allgather"), -1)
		if err != nil {
			return err
		}
		recv, err := allgatherPlain(c, g, n, 8*n)
		if err != nil {
			return fmt.Errorf("member %d: the call after the mismatch: %w", g.Me, err)
		}
		for k, x := range recv {
			if x != uint64(k) {
				return fmt.Errorf("member %d holds %d at %d after the mismatch", g.Me, x, k)
			}
		}
		return nil
	})
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestMismatchCallPlain: a member at another kind of call is named, as a mismatch, by
// every member that waits for it; the members that saw it must set up again (Fail
// leaves the group broken).
func TestMismatchCallPlain(t *testing.T) {
	const p = 3
	gs := plainGroups(t, p)
	errs := runMembers(gs, func(g *Group) error {
		kind := Kind("Allreduce")
		if g.Me == 2 {
			kind = Kind("Bcast")
		}
		c, err := call(t.Context(), g, 1, kind, -1)
		if err != nil {
			return err
		}
		v := g.Next()
		g.SetMeta(v, 8)
		err = g.Step(c, v, 8)
		if !errors.Is(err, runtime.ErrMismatch) {
			return fmt.Errorf("member %d: got %v, want ErrMismatch", g.Me, err)
		}
		g.Fail()
		if g.Status().Ready {
			return fmt.Errorf("member %d: the group is still set up after another call's step", g.Me)
		}
		return nil
	})
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestMemberStopsPlain: when a member stops before a step, the others' wait for it ends
// with their context's error instead of a result, and the stopped member's flag never
// says it published the step.
func TestMemberStopsPlain(t *testing.T) {
	const p = 3
	gs := plainGroups(t, p)
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // the members that wait see it at their first check
	errs := runMembers(gs[:p-1], func(g *Group) error {
		c, err := call(ctx, g, 1, Kind("Barrier"), -1)
		if err != nil {
			return err
		}
		v := g.Next()
		g.SetMeta(v, 0)
		return g.Step(c, v, 0)
	})
	for i, err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("member %d: the step with a stopped member returned %v, want context.Canceled", i, err)
		}
	}
	if got := *word(gs[0].mem[p-1], flagOff(1)+flagSeq); got != 0 {
		t.Errorf("the stopped member's flag holds %d, want 0", got)
	}
}
