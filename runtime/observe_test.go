package runtime_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/internal/trace"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// TestObserveBarrier: under the profile and the timeline, runtime.Barrier counts one
// Barrier call and a collective message of 0 bytes to each rank its World addresses, by
// job rank: every other rank of Init's World, the other ranks of a Split half, the other
// half's ranks on an intercommunicator (whose barrier within, of the local group, counts
// nothing more). Each shows in the timeline as a Collective event named by its algorithm.
func TestObserveBarrier(t *testing.T) {
	opt := runtimetest.Options{Transport: "shm", Env: runtimetest.ObserveBoth(t.TempDir())}
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	runtimetest.Run(t, 4, opt, func(w *runtime.World) error {
		o, _ := substrate.Observe(w)
		if o == nil || o.Prof == nil || o.Rec == nil {
			return fmt.Errorf("observer %v: want the profile and the timeline on", o)
		}
		me, p := w.Rank(), w.Size()
		lower := me < p/2
		color, remoteLeader := 0, p/2
		if !lower {
			color, remoteLeader = 1, 0
		}
		half, err := w.Split(ctx, color, me)
		if err != nil {
			return err
		}
		defer half.Free()
		ic, err := half.CreateIntercomm(ctx, 0, w, remoteLeader, 7)
		if err != nil {
			return err
		}
		defer ic.Free()
		var others []int // the other half's job ranks
		for r := range p {
			if (r < p/2) != lower {
				others = append(others, r)
			}
		}
		mine := func(r int) bool { return r != me && !slices.Contains(others, r) }
		steps := []struct {
			w     *runtime.World
			peers func(r int) bool // the job ranks that get a message
		}{
			{w, func(r int) bool { return r != me }},
			{half, mine},
			{ic, func(r int) bool { return slices.Contains(others, r) }},
		}
		for i, st := range steps {
			before := o.Profile()
			if err := runtime.Barrier(ctx, st.w); err != nil {
				return fmt.Errorf("barrier %d: %w", i, err)
			}
			after := o.Profile()
			if d := after.Call(prof.CallBarrier).Calls - before.Call(prof.CallBarrier).Calls; d != 1 {
				return fmt.Errorf("barrier %d: %d Barrier calls counted, want 1", i, d)
			}
			for r := range p {
				want := uint64(0)
				if st.peers(r) {
					want = 1
				}
				dm := after.Coll.Msgs[r] - before.Coll.Msgs[r]
				db := after.Coll.Bytes[r] - before.Coll.Bytes[r]
				if dm != want || db != 0 {
					return fmt.Errorf("barrier %d: %d messages of %d bytes to job rank %d, want %d of 0", i, dm, db, r, want)
				}
			}
		}
		return checkBarrierEvents(o.Timeline())
	})
}

// checkBarrierEvents checks that d holds the Collective events of TestObserveBarrier's
// three barriers, in their order.
func checkBarrierEvents(d trace.Dump) error {
	var got []string
	for _, ev := range d.Events {
		if ev.Kind == trace.Collective {
			got = append(got, d.Labels[ev.Label])
		}
	}
	want := []string{"Barrier dissemination", "Barrier dissemination", "Barrier inter"}
	if !slices.Equal(got, want) {
		return fmt.Errorf("Collective events %q, want %q", got, want)
	}
	return nil
}

// TestObserveTimelineAlone: under the timeline alone, a blocking receive's event starts
// as it begins to wait and carries the flow of its message (its Match, which the merge
// writes), and an eager send's event lies at its post, inside the call. Rank 1 sends once
// it sees rank 0's receive posted, and marks that moment; then the two swap roles.
func TestObserveTimelineAlone(t *testing.T) {
	opt := runtimetest.Options{Transport: "shm", Env: map[string]string{"GORMA_TRACE": t.TempDir() + "/trace.json"}}
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	var first atomic.Pointer[runtime.World] // rank 0's World, once it receives
	var mark atomic.Int64                   // when rank 1 saw that receive posted, Unix nanoseconds
	runtimetest.Run(t, 2, opt, func(w *runtime.World) error {
		o, _ := substrate.Observe(w)
		if o == nil || o.Rec == nil || o.Prof != nil {
			return fmt.Errorf("observer %v: want the timeline alone", o)
		}
		buf := make([]byte, 8)
		peer := 1 - w.Rank()
		var sendFrom, sendTo int64 // the send call's bounds, in the recorder's clock
		if w.Rank() == 0 {
			first.Store(w)
			if _, err := runtime.Recv(ctx, w, buf, peer, 0); err != nil {
				return err
			}
			sendFrom = o.Rec.Now()
			if err := runtime.Send(ctx, w, buf, peer, 1); err != nil {
				return err
			}
			sendTo = o.Rec.Now()
		} else {
			for w0 := first.Load(); w0 == nil || posted(w0) == 0; w0 = first.Load() {
				if err := ctx.Err(); err != nil {
					return fmt.Errorf("rank 0's receive never posted: %w", err)
				}
				time.Sleep(100 * time.Microsecond)
			}
			mark.Store(time.Now().UnixNano())
			time.Sleep(5 * time.Millisecond) // the send comes well after the mark
			sendFrom = o.Rec.Now()
			if err := runtime.Send(ctx, w, buf, peer, 0); err != nil {
				return err
			}
			sendTo = o.Rec.Now()
			if _, err := runtime.Recv(ctx, w, buf, peer, 1); err != nil {
				return err
			}
		}
		runtime.FlushEvents(w)
		d := o.Timeline()
		var send, recv *trace.Event
		for i := range d.Events {
			ev := &d.Events[i]
			switch {
			case ev.Kind == trace.Send && d.Labels[ev.Label] == "Send":
				send = ev
			case ev.Kind == trace.Recv && d.Labels[ev.Label] == "Recv":
				recv = ev
			case ev.Kind == trace.Match:
				return fmt.Errorf("a Match event %v: want the Recv to hold it", *ev)
			}
		}
		if send == nil || recv == nil {
			return fmt.Errorf("events %v: want a Send and a Recv", d.Events)
		}
		// The events' times convert stamps at a rate measured at the snapshot, which Now
		// agrees with to a few microseconds (trace.Clock.Exact).
		const slack = int64(50 * time.Microsecond)
		if send.Start < sendFrom-slack || send.End > sendTo+slack || send.Flow == 0 {
			return fmt.Errorf("Send event [%d, %d] flow %d: want it inside the call [%d, %d], with a flow",
				send.Start, send.End, send.Flow, sendFrom, sendTo)
		}
		if send.Flow != 1 || recv.Flow != 1 {
			return fmt.Errorf("Send's flow %d and Recv's %d, want 1: each the first message of its pair", send.Flow, recv.Flow)
		}
		// Rank 0's Recv read its start as it began to wait, about when rank 1 marked: at
		// most the clocks' disagreement after the mark, where a start read at the end would
		// lie the 5 ms pause after it.
		if at := d.Origin + recv.Start; w.Rank() == 0 && at > mark.Load()+int64(time.Millisecond) {
			return fmt.Errorf("rank 0's Recv starts %v after rank 1 saw it posted: want its start read before it waited",
				time.Duration(at-mark.Load()))
		}
		return nil
	})
}

// posted returns how many receives w's engine holds posted.
func posted(w *runtime.World) int {
	n, _, _ := runtime.Pending(w)
	return n
}
