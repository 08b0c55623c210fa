package idlewatch

import (
	"slices"
	"testing"
)

func TestStaleSlots(t *testing.T) {
	last := make([]uint64, 4)
	w := func(count, state uint64) uint64 { return count<<2 | state }
	steps := []struct {
		slots  []uint64
		n      int
		idle   bool
		parked []int
		why    string
	}{
		{[]uint64{0, 0, 0, 0}, 4, false, nil, "nothing idle or parked"},
		{[]uint64{w(1, SlotIdle), 0, 0, 0}, 4, false, nil, "slot 0 just left idle"},
		{[]uint64{w(1, SlotIdle), 0, 0, 0}, 4, true, nil, "slot 0 idle at the same count a tick later"},
		{[]uint64{w(3, SlotIdle), 0, 0, 0}, 4, false, nil, "slot 0 taken and left idle again in between"},
		{[]uint64{w(4, SlotBusy), 0, 0, 0}, 4, false, nil, "slot 0 taken"},
		{[]uint64{w(4, SlotBusy), w(1, SlotParked), 0, 0}, 4, false, nil, "slot 1's reader just parked"},
		{[]uint64{w(4, SlotBusy), w(1, SlotParked), 0, 0}, 4, false, []int{1}, "slot 1 parked a whole tick: its socket is checked"},
		{[]uint64{w(4, SlotBusy), w(3, SlotParked), 0, 0}, 4, false, nil, "slot 1's reader ran in between"},
		{[]uint64{w(4, SlotBusy), w(3, SlotParked), 0, w(1, SlotIdle)}, 3, false, []int{1}, "slot 3 is past the slots in use"},
		{[]uint64{w(4, SlotBusy), w(3, SlotParked), 0, w(1, SlotIdle)}, 4, false, []int{1}, "slot 3 seen for the first time"},
		{[]uint64{w(4, SlotBusy), w(3, SlotParked), 0, w(1, SlotIdle)}, 4, true, []int{1}, "slot 3 stale"},
		{[]uint64{w(4, SlotBusy), w(3, SlotParked), 0, w(1, SlotIdle)}, -1, false, nil, "a negative count scans nothing"},
		{[]uint64{w(4, SlotBusy), w(3, SlotParked), 0, w(1, SlotIdle)}, 1 << 20, true, []int{1}, "a count past the page is clamped"},
	}
	var parked []int
	for i, s := range steps {
		var idle bool
		idle, parked = staleSlots(func(i int) uint64 { return s.slots[i] }, s.n, last, parked[:0])
		if idle != s.idle || !slices.Equal(parked, s.parked) {
			t.Fatalf("step %d (%s): idle %v, parked %v; want %v, %v", i, s.why, idle, parked, s.idle, s.parked)
		}
	}
}
