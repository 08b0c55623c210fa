package runtime

import (
	"errors"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

func TestParseProcs(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want procsPolicy
		err  bool
	}{
		{"", procsAuto, false},
		{"auto", procsAuto, false},
		{"go", procsGo, false},
		{"1", 1, false},
		{"16", 16, false},
		{"0", 0, true},
		{"-2", 0, true},
		{"two", 0, true},
		{"1.5", 0, true},
		{"99999999", 0, true},
	} {
		got, err := parseProcs(tt.in)
		if tt.err {
			if !errors.Is(err, ErrConfig) {
				t.Errorf("parseProcs(%q) = %v, %v; want an ErrConfig error", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseProcs(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestHostProcs(t *testing.T) {
	for _, tt := range []struct {
		name             string
		policy           procsPolicy
		envSet           bool
		cur, local, ncpu int
		oneHost          bool
		want             int
	}{
		{"count wins", 1, true, 16, 1, 16, true, 1},
		{"count above cur", 8, false, 2, 16, 16, true, 8},
		{"go keeps", procsGo, false, 16, 16, 16, true, 0},
		{"auto keeps GOMAXPROCS", procsAuto, true, 16, 16, 16, true, 0},
		{"auto, full host", procsAuto, false, 16, 16, 16, true, fullHostProcs},
		{"auto, full host, peers elsewhere", procsAuto, false, 16, 16, 16, false, crossHostProcs},
		{"auto, oversubscribed", procsAuto, false, 16, 64, 16, true, fullHostProcs},
		{"auto, half a host", procsAuto, false, 16, 8, 16, true, 0},
		{"auto, full host, cur already low", procsAuto, false, 1, 2, 2, true, 0},
		{"auto, full host of 2, peers elsewhere", procsAuto, false, 2, 2, 2, false, 0},
		{"auto, bound to one processor", procsAuto, false, 1, 4, 2, false, 0},
		{"auto, a world of one", procsAuto, false, 16, 1, 16, true, 0},
	} {
		if got := hostProcs(tt.policy, tt.envSet, tt.cur, tt.local, tt.ncpu, tt.oneHost); got != tt.want {
			t.Errorf("%s: hostProcs(%v, %v, cur %d, local %d, ncpu %d, one host %v) = %d, want %d",
				tt.name, tt.policy, tt.envSet, tt.cur, tt.local, tt.ncpu, tt.oneHost, got, tt.want)
		}
	}
}

// TestWaitRule checks the waiting rule's choices: the spin budget and its bounds, and
// when a spin gives the processor away or yields to the Go scheduler.
func TestWaitRule(t *testing.T) {
	forever := subcore.SpinForever
	for _, tt := range []struct {
		name              string
		mode              verbs.WaitMode
		spin              time.Duration
		local, ncpu, proc int
		budget, floor     time.Duration // floor: the budget after waits that outlast it
		oversub, yield    bool
	}{
		{"full host", verbs.WaitHybrid, 0, 16, 16, 1, fullHostSpin, verbs.DefaultSpin, false, true},
		{"half a host, Go's Ps", verbs.WaitHybrid, 0, 8, 16, 16, fullHostSpin, verbs.DefaultSpin, false, false},
		{"full host, peers elsewhere", verbs.WaitHybrid, 0, 16, 16, 2, fullHostSpin, verbs.DefaultSpin, false, false},
		{"oversubscribed", verbs.WaitHybrid, 0, 4, 2, 1, verbs.DefaultSpin, verbs.DefaultSpin, true, true},
		{"oversubscribed, many Ps", verbs.WaitHybrid, 0, 4, 2, 2, verbs.DefaultSpin, verbs.DefaultSpin, true, true},
		{"GORMA_SPIN", verbs.WaitHybrid, 7 * time.Microsecond, 2, 2, 1, 7 * time.Microsecond, 7 * time.Microsecond, false, true},
		{"GORMA_SPIN, oversubscribed", verbs.WaitHybrid, time.Millisecond, 4, 2, 1, time.Millisecond, time.Millisecond, true, true},
		{"spin", verbs.WaitSpin, time.Millisecond, 2, 2, 2, forever, forever, false, false},
		{"block", verbs.WaitBlock, 0, 2, 2, 1, 0, 0, false, true},
	} {
		w := waitRule(tt.mode, tt.spin, tt.local, tt.ncpu, tt.proc)
		if w.Budget() != tt.budget || w.Oversub != tt.oversub || w.Yields() != tt.yield {
			t.Errorf("%s: budget %v, oversub %v, yields %v; want %v, %v, %v",
				tt.name, w.Budget(), w.Oversub, w.Yields(), tt.budget, tt.oversub, tt.yield)
		}
		for range 20 {
			w.Done(time.Second, true)
		}
		if w.Budget() != tt.floor {
			t.Errorf("%s: budget after long waits %v, want %v", tt.name, w.Budget(), tt.floor)
		}
	}
}
