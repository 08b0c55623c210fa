package runtime

import (
	"errors"
	"os"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
	"github.com/gorma-hpc/gorma/transport/verbs"
	"golang.org/x/sys/unix"
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
	full := func(alone int) hostFit { return hostFit{full: true, alone: alone} }
	for _, tt := range []struct {
		name    string
		policy  procsPolicy
		set     bool
		cur     int
		fit     hostFit
		oneHost bool
		want    int
	}{
		{"count wins", 1, true, 16, hostFit{}, true, 1},
		{"count above cur", 8, false, 2, full(0), true, 8},
		{"go keeps", procsGo, false, 16, full(0), true, 0},
		{"auto keeps a set GOMAXPROCS", procsAuto, true, 16, full(0), true, 0},
		{"auto, full host", procsAuto, false, 16, full(0), true, fullHostProcs},
		{"auto, full host, peers elsewhere", procsAuto, false, 16, full(0), false, crossHostProcs},
		{"auto, not full", procsAuto, false, 16, hostFit{}, true, 0},
		{"auto, full host, cur already low", procsAuto, false, 1, full(0), true, 0},
		{"auto, full host of 2, peers elsewhere", procsAuto, false, 2, full(0), false, 0},
		{"auto, bound to one processor", procsAuto, false, 1, full(1), false, 0},
		{"auto, 4 processors alone (srun -c 4)", procsAuto, false, 4, full(4), true, 0},
		{"auto, 4 alone of Go's 8", procsAuto, false, 8, full(4), true, 4},
	} {
		if got := hostProcs(tt.policy, tt.set, tt.cur, tt.fit, tt.oneHost); got != tt.want {
			t.Errorf("%s: hostProcs(%v, %v, cur %d, %+v, one host %v) = %d, want %d",
				tt.name, tt.policy, tt.set, tt.cur, tt.fit, tt.oneHost, got, tt.want)
		}
	}
}

// cpus returns a set of the processors listed.
func cpus(list ...int) unix.CPUSet {
	var s unix.CPUSet
	for _, c := range list {
		s.Set(c)
	}
	return s
}

// span returns the set of processors lo to hi-1.
func span(lo, hi int) unix.CPUSet {
	var s unix.CPUSet
	for c := lo; c < hi; c++ {
		s.Set(c)
	}
	return s
}

// TestFitOf checks the fit under the bindings of golaunch, srun, Hydra and mpirun, and
// under a CPU quota.
func TestFitOf(t *testing.T) {
	repeat := func(s unix.CPUSet, n int) []unix.CPUSet {
		out := make([]unix.CPUSet, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	perCore := func(n, cores int) []unix.CPUSet { // dealt in turn, as --bind-to core
		out := make([]unix.CPUSet, n)
		for i := range out {
			out[i] = cpus(i % cores)
		}
		return out
	}
	perBlock := func(n, width int) []unix.CPUSet { // srun -c width
		out := make([]unix.CPUSet, n)
		for i := range out {
			out[i] = span(i*width, (i+1)*width)
		}
		return out
	}
	for _, tt := range []struct {
		name                    string
		sets                    []unix.CPUSet
		me                      int
		quota                   float64
		cpus, own, alone, share int
		oversub, full           bool
	}{
		{"2 unbound on 2", repeat(span(0, 2), 2), 0, 0, 2, 2, 0, 2, false, true},
		{"4 unbound on 2", repeat(span(0, 2), 4), 1, 0, 2, 2, 0, 4, true, true},
		{"8 unbound on 16", repeat(span(0, 16), 8), 0, 0, 16, 16, 0, 8, false, false},
		{"2 bound a core each", perCore(2, 2), 1, 0, 2, 1, 1, 1, false, true},
		{"4 dealt to 2 cores", perCore(4, 2), 0, 0, 2, 1, 0, 2, true, true},
		{"16 ranks of 4 (srun -c 4)", perBlock(16, 4), 5, 0, 64, 4, 4, 1, false, false},
		{"2 on one core", repeat(cpus(0), 2), 0, 0, 1, 1, 0, 2, true, true},
		{"alone beside a shared core", []unix.CPUSet{cpus(0), cpus(1), cpus(1)}, 0, 0, 2, 1, 1, 1, false, true},
		{"the shared core of it", []unix.CPUSet{cpus(0), cpus(1), cpus(1)}, 2, 0, 2, 1, 0, 2, true, true},
		{"chained sets", []unix.CPUSet{cpus(0, 1), cpus(1, 2), cpus(2, 3)}, 0, 0, 4, 2, 1, 3, false, false},
		{"2 unbound, quota 1", repeat(span(0, 2), 2), 0, 1, 1, 2, 0, 2, true, true},
		{"2 unbound, quota 1.5", repeat(span(0, 2), 2), 0, 1.5, 2, 2, 0, 2, true, true},
		{"2 bound, quota 2", perCore(2, 2), 0, 2, 2, 1, 1, 1, false, true},
		{"1 rank of 4 alone, quota 2", perBlock(1, 4), 0, 2, 2, 4, 2, 1, false, false},
		{"a world of one", repeat(span(0, 2), 1), 0, 0, 2, 2, 2, 1, false, false},
	} {
		f := fitOf(tt.me, tt.sets, tt.quota)
		if f.local != len(tt.sets) || f.cpus != tt.cpus || f.own != tt.own || f.alone != tt.alone || f.share != tt.share ||
			f.oversub != tt.oversub || f.full != tt.full {
			t.Errorf("%s: %+v; want cpus %d, own %d, alone %d, share %d, oversub %v, full %v",
				tt.name, f, tt.cpus, tt.own, tt.alone, tt.share, tt.oversub, tt.full)
		}
	}
}

// TestQuotaOf reads cgroup v2's cpu.max along the path, the smallest quota winning, and
// v1's cfs files.
func TestQuotaOf(t *testing.T) {
	files := map[string]string{
		"/cg/cpu.max":                                 "max 100000\n",
		"/cg/job/cpu.max":                             "150000 100000\n",
		"/cg/job/step/cpu.max":                        "max 100000\n",
		"/cg/job/step/task/cpu.max":                   "300000 100000\n",
		"/cg/open/cpu.max":                            "max 100000\n",
		"/cg/cpu,cpuacct/slurm/cpu.cfs_quota_us":      "50000\n",
		"/cg/cpu,cpuacct/slurm/cpu.cfs_period_us":     "100000\n",
		"/cg/cpu,cpuacct/unlimited/cpu.cfs_quota_us":  "-1\n",
		"/cg/cpu,cpuacct/unlimited/cpu.cfs_period_us": "100000\n",
		"/cg/cpu,cpuacct/broken/cpu.cfs_quota_us":     "x\n",
		"/cg/cpu,cpuacct/broken/cpu.cfs_period_us":    "100000\n",
	}
	read := func(p string) (string, error) {
		if s, ok := files[p]; ok {
			return s, nil
		}
		return "", os.ErrNotExist
	}
	for _, tt := range []struct {
		cgroup string
		want   float64
	}{
		{"0::/job/step/task\n", 1.5},
		{"0::/open\n", 0},
		{"0::/\n", 0},
		{"0::/absent/path\n", 0},
		{"4:cpu,cpuacct:/slurm\n1:name=systemd:/x\n", 0.5},
		{"4:cpuacct,cpu:/unlimited\n", 0},
		{"4:cpu,cpuacct:/broken\n", 0},
		{"garbage", 0},
	} {
		if got := quotaOf(tt.cgroup, "/cg", read); got != tt.want {
			t.Errorf("quotaOf(%q) = %v, want %v", tt.cgroup, got, tt.want)
		}
	}
	if q := cpuQuota(); q < 0 {
		t.Errorf("cpuQuota() = %v", q)
	}
}

// TestWaitRule checks the waiting rule's choices: the spin budget and its bounds, and
// when a spin gives the processor away or yields to the Go scheduler.
func TestWaitRule(t *testing.T) {
	forever := subcore.SpinForever
	for _, tt := range []struct {
		name           string
		mode           verbs.WaitMode
		spin           time.Duration
		over           bool
		proc           int
		budget, floor  time.Duration // floor: the budget after waits that outlast it
		oversub, yield bool
	}{
		{"full host", verbs.WaitHybrid, 0, false, 1, fullHostSpin, verbs.DefaultSpin, false, true},
		{"half a host, Go's Ps", verbs.WaitHybrid, 0, false, 16, fullHostSpin, verbs.DefaultSpin, false, false},
		{"full host, peers elsewhere", verbs.WaitHybrid, 0, false, 2, fullHostSpin, verbs.DefaultSpin, false, false},
		{"oversubscribed", verbs.WaitHybrid, 0, true, 1, verbs.DefaultSpin, verbs.DefaultSpin, true, true},
		{"oversubscribed, many Ps", verbs.WaitHybrid, 0, true, 2, verbs.DefaultSpin, verbs.DefaultSpin, true, true},
		{"GORMA_SPIN", verbs.WaitHybrid, 7 * time.Microsecond, false, 1, 7 * time.Microsecond, 7 * time.Microsecond, false, true},
		{"GORMA_SPIN, oversubscribed", verbs.WaitHybrid, time.Millisecond, true, 1, time.Millisecond, time.Millisecond, true, true},
		{"spin", verbs.WaitSpin, time.Millisecond, false, 2, forever, forever, false, false},
		{"block", verbs.WaitBlock, 0, false, 1, 0, 0, false, true},
	} {
		w := waitRule(tt.mode, tt.spin, tt.over, tt.proc)
		if w.Budget() != tt.budget || w.Oversub() != tt.oversub || w.Yields() != tt.yield {
			t.Errorf("%s: budget %v, oversub %v, yields %v; want %v, %v, %v",
				tt.name, w.Budget(), w.Oversub(), w.Yields(), tt.budget, tt.oversub, tt.yield)
		}
		for range 20 {
			w.Done(time.Second, true)
		}
		if w.Budget() != tt.floor {
			t.Errorf("%s: budget after long waits %v, want %v", tt.name, w.Budget(), tt.floor)
		}
	}
}

// TestProcsSetByProgram: a GOMAXPROCS that the program set before Init counts as set,
// as the variable does, so that GORMA_PROCS=auto leaves it.
func TestProcsSetByProgram(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(0))
	goruntime.GOMAXPROCS(startProcs)
	if cfg, err := readConfig(env(nil)); err != nil || cfg.maxProcsSet {
		t.Errorf("GOMAXPROCS as at start: set %v, %v; want false", cfg.maxProcsSet, err)
	}
	if cfg, err := readConfig(env(map[string]string{"GOMAXPROCS": "3"})); err != nil || !cfg.maxProcsSet {
		t.Errorf("the GOMAXPROCS variable: set %v, %v; want true", cfg.maxProcsSet, err)
	}
	goruntime.GOMAXPROCS(startProcs + 1)
	if cfg, err := readConfig(env(nil)); err != nil || !cfg.maxProcsSet {
		t.Errorf("GOMAXPROCS set by the program: set %v, %v; want true", cfg.maxProcsSet, err)
	}
	for _, v := range []string{"", "0", "1"} {
		if cfg, err := readConfig(env(map[string]string{envDebug: v})); err != nil || cfg.debug != (v == "1") {
			t.Errorf("%s=%q: debug %v, %v", envDebug, v, cfg.debug, err)
		}
	}
}
