package runtime

import (
	"os"
	"slices"
	"testing"

	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
	"golang.org/x/sys/unix"
)

// cpuSet returns the set of cpus.
func cpuSet(cpus ...int) unix.CPUSet {
	var s unix.CPUSet
	for _, c := range cpus {
		s.Set(c)
	}
	return s
}

// TestPlanFold: where a rank's threads go after each kind of hold, on hosts of 2 and 4
// processors, with siblings that hold folds or none.
func TestPlanFold(t *testing.T) {
	all2, all4, none := cpuSet(0, 1), cpuSet(0, 1, 2, 3), unix.CPUSet{}
	for _, tt := range []struct {
		name string
		h    subcore.Hold
		v    foldView
		to   []int // nil: no move
	}{
		{"other work took processor 0: off it", subcore.HoldTheft,
			foldView{own: all2, cur: all2, cpu: 0, folds: []unix.CPUSet{none}}, []int{1}},
		{"a sibling took processor 1: fold onto it, for the sibling to join", subcore.HoldTheft,
			foldView{own: all2, cur: all2, cpu: 1, folds: []unix.CPUSet{none}, siblingThief: true}, []int{1}},
		{"folded, a sibling took the processor: stay", subcore.HoldTheft,
			foldView{own: all2, cur: cpuSet(1), cpu: 1, folds: []unix.CPUSet{cpuSet(1)}, siblingThief: true}, nil},
		{"other work took processor 1: into the sibling's fold on 0", subcore.HoldTheft,
			foldView{own: all2, cur: all2, cpu: 1, folds: []unix.CPUSet{cpuSet(0)}}, []int{0}},
		{"a sibling's fold holds the stolen processor: not that one", subcore.HoldTheft,
			foldView{own: all4, cur: all4, cpu: 2, folds: []unix.CPUSet{cpuSet(2, 3), cpuSet(0, 1)}}, []int{0, 1}},
		{"4 processors, other work on 2: the other three", subcore.HoldTheft,
			foldView{own: all4, cur: all4, cpu: 2, folds: []unix.CPUSet{none, none, none}}, []int{0, 1, 3}},
		{"folded on 1 and 3, theft on 3: onto 1", subcore.HoldTheft,
			foldView{own: all4, cur: cpuSet(1, 3), cpu: 3, folds: []unix.CPUSet{none}}, []int{1}},
		{"folded on 3 alone, theft on 3: the rest of its own", subcore.HoldTheft,
			foldView{own: all4, cur: cpuSet(3), cpu: 3, folds: []unix.CPUSet{none}}, []int{0, 1, 2}},
		{"bound to one processor: nowhere to go", subcore.HoldTheft,
			foldView{own: cpuSet(1), cur: cpuSet(1), cpu: 1, folds: []unix.CPUSet{none}}, nil},
		{"theft seen on a processor not its own", subcore.HoldTheft,
			foldView{own: all2, cur: all2, cpu: 5, folds: []unix.CPUSet{none}}, nil},
		{"processor unknown", subcore.HoldTheft,
			foldView{own: all2, cur: all2, cpu: -1, folds: []unix.CPUSet{none}}, nil},
		{"join the fold on this processor, on its processors this rank may use", subcore.HoldJoin,
			foldView{own: cpuSet(0, 1, 2), cur: cpuSet(0, 1, 2), cpu: 1, folds: []unix.CPUSet{cpuSet(0), cpuSet(1, 3)}}, []int{1}},
		{"no fold on this processor: stay", subcore.HoldJoin,
			foldView{own: all2, cur: all2, cpu: 1, folds: []unix.CPUSet{cpuSet(0)}}, nil},
		{"folded apart from the lowest sibling's fold: join it", subcore.HoldJoin,
			foldView{own: all2, cur: cpuSet(0), cpu: 0, folds: []unix.CPUSet{cpuSet(1), cpuSet(0)}, lower: []bool{true, true}}, []int{1}},
		{"folded beside the lowest sibling's fold: stay", subcore.HoldJoin,
			foldView{own: all4, cur: cpuSet(0, 1), cpu: 0, folds: []unix.CPUSet{none, cpuSet(1, 2)}, lower: []bool{true, true}}, nil},
		{"folded, the lowest fold is a higher sibling's: stay", subcore.HoldJoin,
			foldView{own: all2, cur: cpuSet(0), cpu: 0, folds: []unix.CPUSet{cpuSet(1)}, lower: []bool{false}}, nil},
		{"hold ended: back to its own", subcore.HoldEnd,
			foldView{own: all2, cur: cpuSet(1), cpu: 1, folds: []unix.CPUSet{cpuSet(1)}}, []int{0, 1}},
		{"hold ended, not folded: stay", subcore.HoldEnd,
			foldView{own: all2, cur: all2, cpu: 1, folds: []unix.CPUSet{none}}, nil},
	} {
		to, move := planFold(tt.h, tt.v)
		switch {
		case tt.to == nil && move:
			t.Errorf("%s: moved to %v, want no move", tt.name, setList(&to))
		case tt.to != nil && (!move || !slices.Equal(setList(&to), tt.to)):
			t.Errorf("%s: to %v (move %v), want %v", tt.name, setList(&to), move, tt.to)
		}
	}
}

// TestStatCPU reads the state and processor from stat lines whose command holds spaces
// and parentheses.
func TestStatCPU(t *testing.T) {
	fields := " 1 1 1 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 4 0 100 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 7 0 0 0 0 0"
	for _, tt := range []struct {
		line  string
		state byte
		cpu   int
		ok    bool
	}{
		{"123 (prog) R" + fields, 'R', 7, true},
		{"123 (a b) c) S" + fields, 'S', 7, true},
		{"123 (prog) R 1 2", 0, 0, false},
		{"garbage", 0, 0, false},
	} {
		state, cpu, ok := statCPU([]byte(tt.line))
		if state != tt.state || cpu != tt.cpu || ok != tt.ok {
			t.Errorf("statCPU(%.30q...) = %c %d %v, want %c %d %v", tt.line, state, cpu, ok, tt.state, tt.cpu, tt.ok)
		}
	}
	// The goroutine may move to another thread between the open and the read: the state
	// of the thread that opened the file may be any.
	if state, cpu, ok := statCPU(mustRead(t, "/proc/thread-self/stat")); !ok || state < 'A' || state > 'Z' || cpu < 0 {
		t.Errorf("a thread's own stat: state %q, processor %d, ok %v", state, cpu, ok)
	}
}

// TestBusyBetween: processors count as busy when less than half their time was idle, or
// when no time was counted.
func TestBusyBetween(t *testing.T) {
	at := func(idle, total uint64) cpuTimes {
		return cpuTimes{cpus: []int{0}, idle: []uint64{idle}, total: []uint64{total}}
	}
	for _, tt := range []struct {
		name string
		a, b cpuTimes
		busy bool
	}{
		{"all idle", at(0, 0), at(10, 10), false},
		{"all busy", at(0, 0), at(0, 10), true},
		{"half", at(0, 0), at(5, 10), true},
		{"mostly idle", at(0, 0), at(8, 10), false},
		{"no tick counted", at(3, 3), at(3, 3), true},
		{"no processors", cpuTimes{}, cpuTimes{}, false},
	} {
		if got := busyBetween(tt.a, tt.b); got != tt.busy {
			t.Errorf("%s: busy %v, want %v", tt.name, got, tt.busy)
		}
	}
	if c := readCPUTimes([]int{0}); c.total[0] == 0 {
		t.Errorf("/proc/stat counted no time for processor 0: %+v", c)
	}
}

// mustRead returns the file's bytes.
func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
