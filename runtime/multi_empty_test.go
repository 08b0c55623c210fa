package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// empty is MPI's empty status: any source, any tag, count 0.
var empty = runtime.Status{Source: runtime.AnySource, Tag: runtime.AnyTag}

// TestSetCallsEmptyStatus: WaitAll, TestAll, WaitAny, TestAny, WaitSome and TestSome over
// nil Requests mixed with receives, sends and inactive persistent Requests, on the World,
// a split World and an intercommunicator. Nil and inactive entries get the empty Status
// where a Status is reported for them; a receive's Status names its sender in the
// communicator's ranks.
func TestSetCallsEmptyStatus(t *testing.T) {
	for _, c := range []struct {
		name string
		n    int
		opts runtimetest.Options
	}{
		{"shm", 4, runtimetest.Options{Transport: "shm"}},
		{"tcp", 4, runtimetest.Options{Transport: "tcp"}},
		{"shm", 2, runtimetest.Options{Transport: "shm"}},
	} {
		t.Run(fmt.Sprintf("%s/n=%d", c.name, c.n), func(t *testing.T) {
			c.opts.Timeout = 30 * time.Second
			runtimetest.Run(t, c.n, c.opts, func(w *runtime.World) error {
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
				defer cancel()
				ic, local, _, err := parityIntercomm(ctx, w)
				if err != nil {
					return err
				}
				ring := func(c *runtime.World) (to, from int) {
					return (c.Rank() + 1) % c.Size(), (c.Rank() + c.Size() - 1) % c.Size()
				}
				lt, lf := ring(local)
				wt, wf := ring(w)
				// The parity groups are equally large: remote rank i is this rank's peer.
				for _, k := range []struct {
					name     string
					c        *runtime.World
					to, from int
				}{
					{"world", w, wt, wf},
					{"split", local, lt, lf},
					{"inter", ic, ic.Rank(), ic.Rank()},
				} {
					if err := checkEmptyStatuses(ctx, k.c, k.to, k.from); err != nil {
						return fmt.Errorf("%s, rank %d: %w", k.name, k.c.Rank(), err)
					}
				}
				return errors.Join(ic.Free(), local.Free())
			})
		})
	}
}

// checkEmptyStatuses runs every set call on c, sending to rank to and receiving from
// rank from.
func checkEmptyStatuses(ctx context.Context, c *runtime.World, to, from int) error {
	inactive, err := runtime.RecvInit(c, make([]int32, 1), from, 99)
	if err != nil {
		return err
	}
	defer inactive.Free()
	// exchange starts a send of one int32 with tag and a receive of one; it returns the
	// receive and the send.
	exchange := func(tag int) (*runtime.Request, *runtime.Request, error) {
		r, err := runtime.Irecv(c, make([]int32, 1), from, tag)
		if err != nil {
			return nil, nil, err
		}
		s, err := runtime.Isend(c, []int32{int32(tag)}, to, tag)
		return r, s, err
	}
	got := func(st runtime.Status, tag int) error {
		if want := (runtime.Status{Source: from, Tag: tag, Count: 1, Bytes: 4}); st != want {
			return fmt.Errorf("tag %d: receive's Status %+v, want %+v", tag, st, want)
		}
		return nil
	}

	// WaitAll and TestAll: nil entries and the inactive one report the empty Status.
	r, s, err := exchange(1)
	if err != nil {
		return err
	}
	sts := make([]runtime.Status, 5)
	if err := runtime.WaitAll(ctx, []*runtime.Request{nil, r, nil, s, inactive}, sts); err != nil {
		return err
	}
	if sts[0] != empty || sts[2] != empty || sts[4] != empty {
		return fmt.Errorf("WaitAll: statuses %+v, want the empty Status at 0, 2 and 4", sts)
	}
	if err := got(sts[1], 1); err != nil {
		return fmt.Errorf("WaitAll: %w", err)
	}
	if r, s, err = exchange(2); err != nil {
		return err
	}
	sts = make([]runtime.Status, 4)
	set := []*runtime.Request{r, nil, inactive, s}
	if err := until(ctx, "TestAll", func() (bool, error) { return runtime.TestAll(set, sts) }); err != nil {
		return err
	}
	if sts[1] != empty || sts[2] != empty {
		return fmt.Errorf("TestAll: statuses %+v, want the empty Status at 1 and 2", sts)
	}
	if err := got(sts[0], 2); err != nil {
		return fmt.Errorf("TestAll: %w", err)
	}
	for _, rs := range [][]*runtime.Request{nil, {nil, nil}} {
		sts = make([]runtime.Status, len(rs))
		if err := runtime.WaitAll(ctx, rs, sts); err != nil || slices.ContainsFunc(sts, func(st runtime.Status) bool { return st != empty }) {
			return fmt.Errorf("WaitAll over %d nil Requests: %+v, %v", len(rs), sts, err)
		}
		sts = slices.Repeat([]runtime.Status{{Source: 7}}, len(rs))
		if ok, err := runtime.TestAll(rs, sts); !ok || err != nil || slices.ContainsFunc(sts, func(st runtime.Status) bool { return st != empty }) {
			return fmt.Errorf("TestAll over %d nil Requests: %v %+v, %v", len(rs), ok, sts, err)
		}
	}

	// WaitAny and TestAny: no active entry gives index -1 and the empty Status.
	for _, rs := range [][]*runtime.Request{nil, {nil}, {nil, nil}, {nil, inactive}} {
		if i, st, err := runtime.WaitAny(ctx, slices.Clone(rs)); i != -1 || st != empty || err != nil {
			return fmt.Errorf("WaitAny over %v: %d %+v %v, want -1 and the empty Status", rs, i, st, err)
		}
		if i, ok, st, err := runtime.TestAny(slices.Clone(rs)); i != -1 || !ok || st != empty || err != nil {
			return fmt.Errorf("TestAny over %v: %d %v %+v %v, want -1, true and the empty Status", rs, i, ok, st, err)
		}
	}
	if r, s, err = exchange(3); err != nil {
		return err
	}
	set = []*runtime.Request{nil, inactive, r}
	i, st, err := runtime.WaitAny(ctx, set)
	if err != nil || i != 2 {
		return fmt.Errorf("WaitAny: %d %v, want index 2", i, err)
	}
	if err := got(st, 3); err != nil {
		return fmt.Errorf("WaitAny: %w", err)
	}
	if _, err := s.Wait(ctx); err != nil {
		return err
	}
	if r, s, err = exchange(4); err != nil {
		return err
	}
	set = []*runtime.Request{r, nil}
	if err := until(ctx, "TestAny", func() (bool, error) {
		var ok bool
		i, ok, st, err = runtime.TestAny(set)
		return ok, err
	}); err != nil {
		return err
	}
	if i != 0 {
		return fmt.Errorf("TestAny: index %d, want 0", i)
	}
	if err := got(st, 4); err != nil {
		return fmt.Errorf("TestAny: %w", err)
	}
	if _, err := s.Wait(ctx); err != nil {
		return err
	}

	// WaitSome and TestSome report the completed receive only; with no active entry
	// they report no index.
	if r, s, err = exchange(5); err != nil {
		return err
	}
	sts = make([]runtime.Status, 3)
	idx, err := runtime.WaitSome(ctx, []*runtime.Request{nil, r, inactive}, sts)
	if err != nil || !slices.Equal(idx, []int{1}) {
		return fmt.Errorf("WaitSome: %v %v, want [1]", idx, err)
	}
	if err := got(sts[1], 5); err != nil {
		return fmt.Errorf("WaitSome: %w", err)
	}
	if _, err := s.Wait(ctx); err != nil {
		return err
	}
	if r, s, err = exchange(6); err != nil {
		return err
	}
	set = []*runtime.Request{inactive, nil, r}
	sts = make([]runtime.Status, 3)
	if err := until(ctx, "TestSome", func() (bool, error) {
		idx, err = runtime.TestSome(set, sts)
		return len(idx) > 0, err
	}); err != nil {
		return err
	}
	if !slices.Equal(idx, []int{2}) {
		return fmt.Errorf("TestSome: %v, want [2]", idx)
	}
	if err := got(sts[2], 6); err != nil {
		return fmt.Errorf("TestSome: %w", err)
	}
	if _, err := s.Wait(ctx); err != nil {
		return err
	}
	for _, rs := range [][]*runtime.Request{{nil, nil}, {inactive, nil}} {
		if idx, err := runtime.WaitSome(ctx, rs, nil); len(idx) != 0 || err != nil {
			return fmt.Errorf("WaitSome over %v: %v %v, want no index", rs, idx, err)
		}
		if idx, err := runtime.TestSome(rs, nil); len(idx) != 0 || err != nil {
			return fmt.Errorf("TestSome over %v: %v %v, want no index", rs, idx, err)
		}
	}
	return nil
}

// until calls test until it reports true or an error, or ctx ends.
func until(ctx context.Context, what string, test func() (bool, error)) error {
	for {
		ok, err := test()
		if ok || err != nil {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s never reported completion: %w", what, ctx.Err())
		}
	}
}
