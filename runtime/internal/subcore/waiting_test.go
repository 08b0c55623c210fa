package subcore

import (
	"sync"
	"testing"
	"time"
)

func TestAdapt(t *testing.T) {
	const lo, hi = 50 * time.Microsecond, 2 * time.Millisecond
	for _, tt := range []struct {
		name    string
		b, d    time.Duration
		want    time.Duration
		comment string
	}{
		{"slept, ended within the full spin", 100 * time.Microsecond, time.Millisecond, 200 * time.Microsecond, "doubles"},
		{"doubling stops at hi", 1500 * time.Microsecond, hi, hi, "capped"},
		{"outlasted the full spin", hi, 5 * time.Millisecond, hi / 2, "halves"},
		{"halving stops at lo", 60 * time.Microsecond, time.Second, lo, "floored"},
	} {
		if got := Adapt(tt.b, tt.d, lo, hi); got != tt.want {
			t.Errorf("%s: Adapt(%v, %v) = %v, want %v (%s)", tt.name, tt.b, tt.d, got, tt.want, tt.comment)
		}
	}
}

// TestWaitingAdapts plays the waits of a rank whose peer computes for long, then of a
// loop of calls whose waits end soon after the rank slept: the budget falls to the
// floor, then climbs back to the full spin.
func TestWaitingAdapts(t *testing.T) {
	const lo, hi = 50 * time.Microsecond, 2 * time.Millisecond
	w := NewWaiting(lo, hi, false, true)
	if w.Budget() != hi {
		t.Fatalf("a new rule's budget is %v, want %v", w.Budget(), hi)
	}
	w.Done(time.Microsecond, false) // ended while spinning: no change
	if w.Budget() != hi {
		t.Fatalf("a wait that ended spinning changed the budget to %v", w.Budget())
	}
	for range 10 {
		w.Done(100*time.Millisecond, true)
	}
	if w.Budget() != lo {
		t.Fatalf("after long waits the budget is %v, want %v", w.Budget(), lo)
	}
	for range 10 {
		w.Done(w.Budget()+10*time.Microsecond, true)
	}
	if w.Budget() != hi {
		t.Fatalf("after short waits that slept the budget is %v, want %v", w.Budget(), hi)
	}
	fixed := NewWaiting(hi, hi, true, true)
	fixed.Done(time.Hour, true)
	if fixed.Budget() != hi {
		t.Fatalf("a fixed rule's budget moved to %v", fixed.Budget())
	}
}

// TestWaitingConcurrent runs Done, Budget and SetYields from many goroutines (under the
// race detector in make test): the budget stays within its bounds.
func TestWaitingConcurrent(t *testing.T) {
	const lo, hi = 50 * time.Microsecond, 2 * time.Millisecond
	w := NewWaiting(lo, hi, false, true)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				w.Done(time.Duration(i%7)*time.Millisecond, i%3 != 0)
				w.SetYields(g%2 == 0)
				if b := w.Budget(); b < lo || b > hi {
					t.Errorf("budget %v outside [%v, %v]", b, lo, hi)
					return
				}
				_ = w.Yields()
			}
		}()
	}
	wg.Wait()
}

// TestWaitingBusy plays the clock readings of spins: a gap of StealGap ends the spin and
// makes the rank busy (its budget the floor) for BusyHold from that reading; readings
// closer together keep it as it is; the budget then grows back as waits end within the
// full spin; thefts that keep coming double the hold up to BusyHoldMax, and a quiet
// stretch brings it back to BusyHold; a fixed rule never becomes busy.
func TestWaitingBusy(t *testing.T) {
	const lo, hi = 50 * time.Microsecond, 2 * time.Millisecond
	w := NewWaiting(lo, hi, false, true)
	at := time.Second
	for i := range 100 { // a spin on a processor of its own: a few microseconds per check
		if w.Spun(at+time.Duration(i)*5*time.Microsecond, at+time.Duration(i+1)*5*time.Microsecond) {
			t.Fatalf("check %d: a 5 µs gap ended the spin", i)
		}
	}
	if w.Busy() || w.Budget() != hi {
		t.Fatalf("after short gaps: busy %v, budget %v; want false, %v", w.Busy(), w.Budget(), hi)
	}
	stolen := at + StealGap
	if !w.Spun(at, stolen) {
		t.Fatal("a gap of StealGap did not end the spin")
	}
	if !w.Busy() || w.Budget() != lo {
		t.Fatalf("after a stolen processor: busy %v, budget %v; want true, %v", w.Busy(), w.Budget(), lo)
	}
	w.Done(time.Millisecond, true) // a busy rank's sleeps say nothing of its peers
	if w.Spun(stolen, stolen+time.Microsecond); !w.Busy() {
		t.Fatal("the rank stopped being busy within BusyHold")
	}
	later := stolen + BusyHold + time.Microsecond
	if w.Spun(later, later+time.Microsecond) || w.Busy() || w.Budget() != lo {
		t.Fatalf("BusyHold after the gap: busy %v, budget %v; want false, %v (the floor, growing back)", w.Busy(), w.Budget(), lo)
	}
	for want := 2 * lo; want <= hi; want *= 2 {
		w.Done(lo+time.Microsecond, true) // slept, ended within the full spin
		if w.Budget() != want {
			t.Fatalf("budget growing back: %v, want %v", w.Budget(), want)
		}
	}
	// Thefts within a hold of the last one's end double the hold, up to BusyHoldMax.
	now := later + time.Millisecond
	for want := 2 * BusyHold; ; want = min(2*want, BusyHoldMax) {
		if !w.Spun(now-StealGap, now) {
			t.Fatal("a gap of StealGap did not end the spin")
		}
		if h := time.Duration(w.busyUntil.Load()) - now; h != want {
			t.Fatalf("repeated theft: hold %v, want %v", h, want)
		}
		if want == BusyHoldMax {
			break
		}
		now += want + time.Millisecond // past the hold, within a hold of its end
	}
	now += 3 * BusyHoldMax // a quiet stretch
	w.Spun(now-StealGap, now)
	if h := time.Duration(w.busyUntil.Load()) - now; h != BusyHold {
		t.Fatalf("theft after a quiet stretch: hold %v, want %v", h, BusyHold)
	}
	fixed := NewWaiting(lo, lo, true, true)
	if fixed.Spun(0, time.Second) || fixed.Busy() {
		t.Fatal("a fixed rule took a gap for a stolen processor")
	}
}

// TestWaitingFoldHook plays the holds of a rank whose rule has a fold hook: a theft
// starts a hold once, the hold's end is told once, joins is asked at most once per
// FoldCheck, during a hold too, its true answer starts a hold or renews one (told each
// time), and Rehold keeps the rank busy without telling the hook. The clock readings are Clock's, as a spin's are.
func TestWaitingFoldHook(t *testing.T) {
	const lo, hi = 50 * time.Microsecond, 2 * time.Millisecond
	w := NewWaiting(lo, hi, false, true)
	var got []Hold
	asked, join := 0, false
	w.SetFold(func(h Hold) { got = append(got, h) }, func() bool { asked++; return join })
	want := func(step string, hs ...Hold) {
		t.Helper()
		if len(got) != len(hs) {
			t.Fatalf("%s: the hook learned %v, want %v", step, got, hs)
		}
		for i := range hs {
			if got[i] != hs[i] {
				t.Fatalf("%s: the hook learned %v, want %v", step, got, hs)
			}
		}
		got = got[:0]
	}

	now := Clock() + 2*FoldCheck
	if w.Spun(now, now+time.Microsecond) || asked != 1 {
		t.Fatalf("a short gap ended the spin, or joins was asked %d times, want 1", asked)
	}
	w.Spun(now, now+2*time.Microsecond)
	if asked != 1 {
		t.Fatalf("joins was asked %d times within FoldCheck, want 1", asked)
	}
	want("no theft")

	now += FoldCheck
	if !w.Spun(now, now+StealGap) || !w.Busy() || w.Budget() != lo {
		t.Fatalf("a gap of StealGap did not start a hold at the floor (busy %v, budget %v)", w.Busy(), w.Budget())
	}
	w.Spun(now+StealGap, now+2*StealGap) // another theft in the hold
	want("theft", HoldTheft)
	asked = 0
	w.Spun(now+3*StealGap, now+3*StealGap+time.Microsecond)
	if asked != 1 {
		t.Fatalf("joins was asked %d times in a hold, a FoldCheck after the last, want 1", asked)
	}

	end := now + 2*StealGap + 2*BusyHold // the hold doubled once
	w.Spun(end, end+time.Microsecond)
	if w.Busy() {
		t.Fatal("the hold outlived its end")
	}
	want("hold ended", HoldEnd)

	join = true
	now = end + 2*FoldCheck
	if !w.Spun(now, now+time.Microsecond) || !w.Busy() {
		t.Fatal("joins said to join and no hold started")
	}
	want("join", HoldJoin)
	now += FoldCheck
	if !w.Spun(now, now+time.Microsecond) || !w.Busy() {
		t.Fatal("joins said to join during a hold and the spin went on")
	}
	want("join during a hold", HoldJoin)

	join = false
	w.Spun(now+BusyHoldMax, now+BusyHoldMax+1) // ends the hold
	want("join's hold ended", HoldEnd)
	w.Rehold()
	if !w.Busy() || w.Budget() != lo {
		t.Fatalf("Rehold left busy %v and budget %v", w.Busy(), w.Budget())
	}
	want("rehold")
}

// TestWaitingSharingGap: in a fold (Sharing) a gap is a sibling's turn, not a theft: it
// starts no hold and renews none, so a fold's hold ends when it runs out.
func TestWaitingSharingGap(t *testing.T) {
	const lo, hi = 50 * time.Microsecond, 2 * time.Millisecond
	w := NewWaiting(lo, hi, false, true)
	var got []Hold
	w.SetFold(func(h Hold) { got = append(got, h) }, func() bool { return false })
	now := Clock() + 2*FoldCheck
	if !w.Spun(now, now+StealGap) || !w.Busy() {
		t.Fatal("a gap of StealGap did not start a hold")
	}
	w.SetSharing(true)
	for i := range 100 { // a sibling's turns through the hold and past its end
		at := now + time.Duration(i)*BusyHold/10
		if w.Spun(at, at+StealGap) {
			t.Fatalf("a gap while sharing ended the spin as a theft")
		}
	}
	if w.Busy() {
		t.Fatal("gaps while sharing renewed the hold past its end")
	}
	if len(got) != 2 || got[0] != HoldTheft || got[1] != HoldEnd {
		t.Fatalf("the hook learned %v, want [theft, hold ended]", got)
	}
}
