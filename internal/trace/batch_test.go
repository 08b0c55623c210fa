package trace

import (
	"os"
	"sync"
	"testing"
)

// TestBatch adds more events than a batch holds: a full batch flushes on the next Add,
// Flush stores the rest, and the events keep the order they were added in.
func TestBatch(t *testing.T) {
	r := nsRecorder(0, 64)
	r.Label("Send")
	b := NewBatch(r)
	const n = 2*BatchLen + 3
	for i := range n {
		*b.Add() = Event{Kind: Send, Start: int64(i), End: int64(i + 1), Flow: uint64(i + 1), Peer: 1, Tag: -1}
		if total, _ := r.Recorded(); total != uint64(i/BatchLen*BatchLen) {
			t.Fatalf("after %d adds the recorder has %d events, want %d", i+1, total, i/BatchLen*BatchLen)
		}
	}
	if b.Len() != n%BatchLen {
		t.Fatalf("batch holds %d events, want %d", b.Len(), n%BatchLen)
	}
	b.Flush()
	b.Flush() // an empty batch stores nothing
	d := r.Snapshot()
	checkSnapshot(t, d)
	if d.Total != n || len(d.Events) != n || b.Len() != 0 {
		t.Fatalf("total %d, events %d, held %d; want %d, %d, 0", d.Total, len(d.Events), b.Len(), n, n)
	}
	for k, e := range d.Events {
		if e.Start != int64(k) || d.Seqs[k] != uint64(k) {
			t.Errorf("event %d: start %d seq %d, want %d", k, e.Start, d.Seqs[k], k)
		}
	}
}

// TestBatchPut: Put stores each field it is given in its place.
func TestBatchPut(t *testing.T) {
	r := nsRecorder(0, 16)
	b := NewBatch(r)
	b.Put(Match, 10, 12, 8, 5, 3, 7, 0)
	b.Put(Wait, 20, 30, 0, 0, NoPeer, -1, 0)
	b.Flush()
	want := []Event{
		{Kind: Match, Start: 10, End: 12, Bytes: 8, Flow: 5, Peer: 3, Tag: 7},
		{Kind: Wait, Start: 20, End: 30, Peer: NoPeer, Tag: -1},
	}
	d := r.Snapshot()
	if len(d.Events) != len(want) {
		t.Fatalf("%d events, want %d", len(d.Events), len(want))
	}
	for k, e := range d.Events {
		if e != want[k] {
			t.Errorf("event %d: %+v, want %+v", k, e, want[k])
		}
	}
}

// TestBatchBesideRecord flushes a batch while other goroutines record and take
// snapshots; under -race it checks that a flush hands the ring's slots over as Record
// does, and that a flush's events take consecutive indices.
func TestBatchBesideRecord(t *testing.T) {
	const each = 3000
	r := nsRecorder(1, 1<<14)
	r.Label("Call")
	var wg sync.WaitGroup
	wg.Go(func() {
		b := NewBatch(r)
		for i := range each {
			*b.Add() = Event{Kind: Send, Start: int64(i), End: int64(i), Flow: uint64(i + 1), Peer: 0, Tag: -1}
		}
		b.Flush()
	})
	wg.Go(func() {
		for i := range each {
			r.Record(Event{Kind: Call, Start: int64(i), End: int64(i), Peer: NoPeer, Tag: -1})
		}
	})
	wg.Go(func() {
		for range 20 {
			checkSnapshot(t, r.Snapshot())
		}
	})
	wg.Wait()
	d := r.Snapshot()
	checkSnapshot(t, d)
	if d.Total != 2*each || uint64(len(d.Events))+d.Lost != 2*each {
		t.Fatalf("total %d, events %d, lost %d; want %d in all", d.Total, len(d.Events), d.Lost, 2*each)
	}
	var next int64 // the batch's events come out in their order, in runs of BatchLen
	for k, e := range d.Events {
		if e.Kind != Send {
			continue
		}
		if e.Start != next {
			t.Fatalf("batched event %d (seq %d) starts at %d, want %d", k, d.Seqs[k], e.Start, next)
		}
		if e.Start%BatchLen != 0 && d.Seqs[k] != d.Seqs[k-1]+1 {
			t.Fatalf("batched event %d has seq %d after %d: a flush's indices are not consecutive", k, d.Seqs[k], d.Seqs[k-1])
		}
		next++
	}
}

func TestBatchAllocatesNothing(t *testing.T) {
	b := NewBatch(NewRecorder(0, 64))
	if n := testing.AllocsPerRun(1000, func() {
		*b.Add() = Event{Kind: Call, Start: b.r.Stamp(), Peer: NoPeer, Tag: -1, Bytes: -1}
	}); n != 0 {
		t.Fatalf("Add allocates %v times per call", n)
	}
}

// BenchmarkBatch adds events to a batch over a ring of the runtime's default size; it
// is BenchmarkRecord's figure for an owner that batches. Under ringfile the ring and the
// batch lie in a ring file (MapRecorder), as under golaunch.
func BenchmarkBatch(b *testing.B) {
	b.Run("heap", func(b *testing.B) { benchBatch(b, NewRecorder(0, 1<<17)) })
	b.Run("ringfile", func(b *testing.B) {
		dir := "/dev/shm" // memory, as golaunch's memfd
		if _, err := os.Stat(dir); err != nil {
			dir = b.TempDir()
		}
		f, err := os.CreateTemp(dir, "gorma-bench-ring-")
		if err != nil {
			b.Fatal(err)
		}
		defer os.Remove(f.Name())
		defer f.Close()
		r, err := MapRecorder(0, 1<<17, f)
		if err != nil {
			b.Fatal(err)
		}
		defer unmap(r.file.mem)
		benchBatch(b, r)
	})
}

func benchBatch(b *testing.B, r *Recorder) {
	bt := NewBatch(r)
	var f uint64
	for b.Loop() {
		f++
		bt.Put(Send, int64(f), int64(f), 8, f, 1, 0, 0)
	}
	bt.Flush()
}

// BenchmarkRoundTrip records what one rank of a traced ping-pong records per round trip,
// as the runtime's engine does (runtime/observe.go): a Send call and a Recv call, each
// timed by two stamps, and three events (Send, Recv, and the Recv's Match) in a batch
// that is flushed when the Recv starts to wait. Sub-benchmarks split the cost: clock is
// the four stamps alone, events the three events and the flush alone, all both.
// `go test -run '^$' -bench Observe8B ./runtime` measures the same in whole calls.
func BenchmarkRoundTrip(b *testing.B) {
	for _, c := range []struct {
		name          string
		clock, events bool
	}{{"clock", true, false}, {"events", false, true}, {"all", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			r := NewRecorder(0, 1<<17) // the runtime's default
			bt := NewBatch(r)
			stamp := func() int64 {
				if c.clock {
					return r.Stamp()
				}
				return 1
			}
			var flow uint64
			var sum int64
			for b.Loop() {
				flow++
				s0 := stamp()
				s1 := stamp()
				r0 := stamp()
				if c.events {
					bt.Put(Send, s0, s1, 8, flow, 1, 0, 0)
					bt.Flush()
				}
				r1 := stamp()
				if c.events {
					bt.Put(Recv, r0, r1, 8, 0, 1, 0, 1)
					bt.Put(Match, r1-1, r1, 8, flow, 1, 0, 2)
				}
				sum += s0 + s1 + r0 + r1
			}
			bt.Flush()
			sink = sum
		})
	}
}
