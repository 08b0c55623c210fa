package launcher

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestBindSet(t *testing.T) {
	two, eight := []int{0, 1}, []int{0, 1, 2, 3, 4, 5, 6, 7}
	odd := []int{2, 5, 9}                                       // an agent run under taskset: its own set, not 0..c-1
	twoSockets := func(p int) int { return p / 4 }              // processors 0-3 and 4-7
	four, s0, s1 := []int{1, 2, 5, 6}, []int{1, 2}, []int{5, 6} // two of each socket
	tests := []struct {
		policy string
		cpus   []int
		n      int
		want   [][]int // by local rank; nil entries: unbound
		pkg    func(int) int
	}{
		{BindAuto, two, 4, [][]int{nil, nil, nil, nil}, onePackage},
		{BindAuto, two, 3, [][]int{nil, nil, nil}, onePackage},
		{BindAuto, odd, 5, [][]int{nil, nil, nil, nil, nil}, onePackage},
		{BindAuto, two, 2, [][]int{nil, nil}, onePackage},
		{BindAuto, eight, 3, [][]int{nil, nil, nil}, onePackage},
		{BindCore, two, 2, [][]int{{0}, {1}}, onePackage},
		{BindCore, eight, 3, [][]int{{0, 1}, {2, 3, 4}, {5, 6, 7}}, onePackage},
		{BindCore, eight, 8, [][]int{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}, onePackage},
		{BindCore, odd, 1, [][]int{{2, 5, 9}}, onePackage},
		{BindCore, two, 5, [][]int{{0}, {1}, {0}, {1}, {0}}, onePackage},
		{BindNone, two, 4, [][]int{nil, nil, nil, nil}, onePackage},
		{BindCore, nil, 2, [][]int{nil, nil}, onePackage},
		// socket: every processor of the socket of the rank's first core processor.
		{BindSocket, two, 4, [][]int{two, two, two, two}, onePackage},
		{BindSocket, eight, 2, [][]int{eight[:4], eight[4:]}, twoSockets},
		{BindSocket, eight, 3, [][]int{eight[:4], eight[:4], eight[4:]}, twoSockets},
		{BindSocket, eight, 10, [][]int{eight[:4], eight[:4], eight[:4], eight[:4], eight[4:], eight[4:], eight[4:], eight[4:], eight[:4], eight[:4]}, twoSockets},
		{BindSocket, four, 4, [][]int{s0, s0, s1, s1}, twoSockets},
		{BindSocket, four, 5, [][]int{s0, s0, s1, s1, s0}, twoSockets},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%v/%d", tt.policy, tt.cpus, tt.n), func(t *testing.T) {
			for l := range tt.n {
				if got := bindSet(tt.policy, tt.cpus, tt.pkg, l, tt.n); !reflect.DeepEqual(got, tt.want[l]) {
					t.Errorf("local rank %d: %v, want %v", l, got, tt.want[l])
				}
			}
		})
	}
	// Blocks cover the processors once, without gaps, for every count up to the
	// processors; beyond, every processor carries ceil or floor of n/c ranks.
	for c := 1; c <= 9; c++ {
		cpus := make([]int, c)
		for i := range cpus {
			cpus[i] = 10 + i
		}
		for n := 1; n <= 3*c; n++ {
			load := map[int]int{}
			var seen []int
			for l := range n {
				set := bindSet(BindCore, cpus, onePackage, l, n)
				if len(set) == 0 {
					t.Fatalf("c=%d n=%d: local rank %d unbound", c, n, l)
				}
				seen = append(seen, set...)
				for _, p := range set {
					load[p]++
				}
			}
			if n <= c && !reflect.DeepEqual(seen, cpus) {
				t.Errorf("c=%d n=%d: blocks %v, want each of %v once, in order", c, n, seen, cpus)
			}
			if n > c {
				for _, p := range cpus {
					if load[p] < n/c || load[p] > (n+c-1)/c {
						t.Errorf("c=%d n=%d: processor %d carries %d ranks", c, n, p, load[p])
					}
				}
			}
		}
	}
	if bindSet(BindCore, two, onePackage, 2, 2) != nil || bindSet(BindSocket, two, onePackage, -1, 2) != nil {
		t.Error("a local rank out of range was bound")
	}
}

// onePackage puts every processor in socket 0.
func onePackage(int) int { return 0 }

func TestBindRank(t *testing.T) {
	two := []int{0, 1}
	env := []string{"PATH=/bin", "GOLAUNCH_RANK=3"}
	// auto binds no rank, oversubscribed or not, as mpirun does.
	if set, got := bindRank(BindAuto, two, 3, 4, env); set != nil || !reflect.DeepEqual(got, env) {
		t.Errorf("auto, oversubscribed: %v %q", set, got)
	}
	set, got := bindRank(BindCore, two, 3, 4, env)
	if !reflect.DeepEqual(set, []int{1}) || !reflect.DeepEqual(got, append(env[:2:2], "GOMAXPROCS=2")) {
		t.Errorf("core, oversubscribed: %v %q", set, got)
	}
	// The user's GOMAXPROCS wins, from -x or the agent's own environment.
	withProcs := append(env[:2:2], "GOMAXPROCS=1")
	if _, got := bindRank(BindCore, two, 0, 4, withProcs); !reflect.DeepEqual(got, withProcs) {
		t.Errorf("GOMAXPROCS set: %q", got)
	}
	// Blocks of several processors leave GOMAXPROCS to Go.
	if set, got := bindRank(BindCore, []int{0, 1, 2, 3}, 1, 2, env); !reflect.DeepEqual(set, []int{2, 3}) || !reflect.DeepEqual(got, env) {
		t.Errorf("block: %v %q", set, got)
	}
	if set, got := bindRank(BindNone, two, 0, 4, env); set != nil || !reflect.DeepEqual(got, env) {
		t.Errorf("none: %v %q", set, got)
	}
}

func TestJobSpecBindTo(t *testing.T) {
	spec := jobSpec{ID: "j", Program: "/bin/true", Secret: make([]byte, 32)}
	spec.Roster, _ = PlanRanks([]HostSlots{{"a", 1}}, 1)
	if err := spec.check(); err != nil || spec.BindTo != BindAuto {
		t.Fatalf("a spec without BindTo (an older submitter): %v, BindTo %q", err, spec.BindTo)
	}
	spec.BindTo = "numa"
	if err := spec.check(); err == nil || !strings.Contains(err.Error(), `"numa"`) {
		t.Fatalf("BindTo numa: %v", err)
	}
}

func TestPinThread(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, during, after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	cpus := agentCPUs()
	if len(cpus) == 0 || len(cpus) != before.Count() {
		t.Fatalf("agentCPUs %v, the thread's set holds %d", cpus, before.Count())
	}
	restore, err := pinThread(cpus[len(cpus)-1:])
	if err != nil {
		t.Fatal(err)
	}
	unix.SchedGetaffinity(0, &during)
	restore()
	unix.SchedGetaffinity(0, &after)
	if during.Count() != 1 || !during.IsSet(cpus[len(cpus)-1]) || after != before {
		t.Fatalf("pinned to %d: during %v, after %v (before %v)", cpus[len(cpus)-1], during, after, before)
	}
	if restore, err := pinThread(nil); err != nil {
		t.Fatal(err)
	} else {
		restore()
	}
	if _, err := pinThread([]int{1 << 20}); err == nil || !strings.Contains(err.Error(), "--bind-to none") {
		t.Fatalf("binding to a processor that does not exist: %v", err)
	}
	if unix.SchedGetaffinity(0, &after); after != before {
		t.Fatal("a failed binding changed the thread's set")
	}
}
