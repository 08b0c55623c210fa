package subcore

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// TestTrackDone: a Track keeps its last DoneKept ended collective calls, oldest first,
// with their details; calls that are not collective and calls under way are not among
// them.
func TestTrackDone(t *testing.T) {
	tr := NewTrack(nil, new(atomic.Uint64), TrackInfo{Comm: "World"})
	done := func() (got []string) {
		TrackDone(tr, func(call string, seq uint64, sig *CallSig) {
			s := fmt.Sprintf("%s #%d", call, seq)
			if sig != nil {
				s += fmt.Sprintf(" root=%d", sig.Root)
			}
			got = append(got, s)
		})
		return got
	}
	if got := done(); got != nil {
		t.Fatalf("TrackDone before any call = %q, want none", got)
	}
	bcast := &CallSig{Call: "Bcast", Count: 8, Root: 0}
	tr.BeginSig(bcast, tr.Next())
	tr.End()
	tr.Begin("Recv", false)
	tr.End()
	tr.Begin("Barrier", true)
	tr.End()
	if got, want := done(), []string{"Bcast #1 root=0", "Barrier #2"}; !slices.Equal(got, want) {
		t.Fatalf("TrackDone = %q, want %q", got, want)
	}
	for range 4 {
		tr.Begin("Barrier", true)
		tr.End()
	}
	tr.Begin("Allreduce", true) // under way: not done
	want := []string{"Barrier #3", "Barrier #4", "Barrier #5", "Barrier #6"}
	if got := done(); !slices.Equal(got, want) {
		t.Fatalf("TrackDone = %q, want %q", got, want)
	}
	tr.End()
}

// TestTrackDoneConcurrent: TrackDone, run while another goroutine ends calls, reports
// only whole entries: each call's name with its own number, in ascending order.
func TestTrackDoneConcurrent(t *testing.T) {
	tr := NewTrack(nil, new(atomic.Uint64), TrackInfo{Comm: "World"})
	names := []string{"Bcast", "Allreduce", "Gather"}
	sigs := []*CallSig{{Call: "Bcast", Root: 0}, {Call: "Allreduce", Root: -1}, {Call: "Gather", Root: 1}}
	const calls = 20000
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range calls {
			seq := tr.Next()
			tr.BeginSig(sigs[seq%3], seq)
			tr.End()
		}
	}()
	for i := 0; i < 2000; i++ {
		var last uint64
		TrackDone(tr, func(call string, seq uint64, sig *CallSig) {
			if call != names[seq%3] || sig == nil || sig != sigs[seq%3] || seq <= last {
				t.Fatalf("TrackDone gave %s #%d (%+v) after #%d", call, seq, sig, last)
			}
			last = seq
		})
	}
	wg.Wait()
}

// TestTrackRecordPairs: a report taken while another goroutine runs calls of a dozen
// names (more than a Track's name cache holds) always pairs a call's name with its own
// number, and reads no call between them.
func TestTrackRecordPairs(t *testing.T) {
	tr := NewTrack(nil, new(atomic.Uint64), TrackInfo{Comm: "World"})
	names := make([]string, 12)
	for i := range names {
		names[i] = fmt.Sprintf("call%02d", i)
	}
	const calls = 20000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := uint64(1); k <= calls; k++ {
			tr.BeginAt(names[k%uint64(len(names))], k)
			tr.End()
		}
	}()
	seen := 0
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		call, seq, _, _, ok := TrackRecord(tr)
		if !ok {
			continue
		}
		seen++
		if want := names[seq%uint64(len(names))]; call != want {
			t.Fatalf("a report paired call %q with number %d, whose call is %q", call, seq, want)
		}
	}
	if _, _, _, _, ok := TrackRecord(tr); ok || Busy(tr) {
		t.Fatal("a report after the last End sees a call under way")
	}
	n := 0
	TrackDone(tr, func(call string, seq uint64, _ *CallSig) {
		n++
		if want := names[seq%uint64(len(names))]; call != want || seq > calls || seq <= calls-DoneKept {
			t.Errorf("TrackDone: call %q number %d, want the last %d calls' names", call, seq, DoneKept)
		}
	})
	if n != DoneKept {
		t.Errorf("TrackDone gave %d calls, want %d", n, DoneKept)
	}
	t.Logf("%d reports saw a call under way", seen)
}
