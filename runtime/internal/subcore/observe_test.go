package subcore

import (
	"testing"

	"github.com/gorma-hpc/gorma/internal/prof"
	"github.com/gorma-hpc/gorma/internal/trace"
)

// TestBatches: a call ended into a batch (EndIn) reaches the recorder when the batch is
// flushed, dropped (DropBatch) or flushed with the others (FlushBatches), not before; a
// dropped batch is not among those FlushBatches stores.
func TestBatches(t *testing.T) {
	o, _ := NewObs(0, 2, false, 64, nil)
	a, b := o.NewBatch(), o.NewBatch()
	end := func(bt *trace.Batch, label uint16) {
		o.Begin(prof.CallAllreduce).EndIn(bt, trace.Collective, 8, trace.NoPeer, -1, label)
	}
	count := func() int { return len(o.Rec.Snapshot().Events) }

	end(a, 1)
	end(b, 2)
	if n := count(); n != 0 {
		t.Fatalf("%d events recorded before a flush, want 0", n)
	}
	o.DropBatch(a)
	if n := count(); n != 1 {
		t.Fatalf("%d events after DropBatch, want 1", n)
	}
	end(a, 3) // a's owner is gone: FlushBatches does not store a
	o.FlushBatches()
	d := o.Rec.Snapshot()
	if len(d.Events) != 2 || d.Events[0].Label != 1 || d.Events[1].Label != 2 {
		t.Fatalf("events %+v, want labels 1 and 2", d.Events)
	}
	end(nil, 4) // no batch: recorded at once
	if n := count(); n != 3 {
		t.Fatalf("%d events after EndIn without a batch, want 3", n)
	}
	if ev := o.Timeline().Events[2]; ev.Kind != trace.Collective || ev.Bytes != 8 || ev.End < ev.Start {
		t.Fatalf("event %+v, want a Collective of 8 bytes", ev)
	}
}

// TestBatchesOff: without a timeline there is no batch, and the calls on a nil batch or
// a nil Obs do nothing.
func TestBatchesOff(t *testing.T) {
	o, _ := NewObs(0, 2, true, 0, nil)
	if b := o.NewBatch(); b != nil {
		t.Fatalf("NewBatch without a timeline = %v, want nil", b)
	}
	o.Begin(prof.CallBarrier).EndIn(nil, trace.Collective, 0, trace.NoPeer, -1, 0)
	o.DropBatch(nil)
	o.FlushBatches()
	if got := o.Profile().Call(prof.CallBarrier).Calls; got != 1 {
		t.Fatalf("%d Barrier calls counted, want 1", got)
	}
	var none *Obs
	none.FlushBatches()
	none.DropBatch(nil)
	if b := none.NewBatch(); b != nil {
		t.Fatal("a nil Obs made a batch")
	}
}

// TestLater: a call begun with Later reads no clock until Start, reads it once there,
// and ends with a reading of its own, or with the one FinishAt gives; where the profile
// is on, Later's call is timed from its beginning to its own end.
func TestLater(t *testing.T) {
	o, _ := NewObs(0, 2, false, 64, nil)
	c := o.Later(prof.CallRecv)
	if !c.On() || c.Started() != 0 {
		t.Fatalf("Later: on %v, started %d; want on and not started", c.On(), c.Started())
	}
	if end := c.Finish(8); end <= 0 {
		t.Fatalf("Finish of a call never started = %d, want a reading", end)
	}
	c = c.Start()
	s := c.Started()
	if s <= 0 || c.Start().Started() != s {
		t.Fatalf("Start read %d, then %d: want one reading, kept", s, c.Start().Started())
	}
	if end := c.Finish(8); end < s {
		t.Fatalf("Finish = %d, before the start %d", end, s)
	}
	if at := c.FinishAt(8, 7); at != 7 {
		t.Fatalf("FinishAt(8, 7) of a Later call = %d, want the reading it was given", at)
	}
	if end := c.FinishAt(8, 0); end < s {
		t.Fatalf("FinishAt(8, 0) = %d, before the start %d: want a reading of its own", end, s)
	}
	var none *Obs
	if none.Later(prof.CallRecv).On() {
		t.Fatal("a nil Obs's Later call is on")
	}
	both, _ := NewObs(0, 2, true, 64, nil)
	if c := both.Later(prof.CallRecv); c.Started() == 0 {
		t.Fatal("with the profile on, Later's call is not timed from its beginning")
	} else if end := c.FinishAt(8, 7); end == 7 {
		t.Fatal("with the profile on, FinishAt took the reading it was given: want the call's own end")
	}
	if off, _ := NewObs(0, 2, true, 0, nil); off.Later(prof.CallRecv).On() {
		t.Fatal("with the timeline off, Later's call is on")
	}
}
