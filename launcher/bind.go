package launcher

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Binding ranks to processors (--bind-to). Under core, an agent binds each rank it
// starts within the processors it may use itself. When the host's n ranks outnumber its
// c processors, they are dealt out in turn, as mpirun's --map-by core wraps around.
// Local rank l runs on processor l mod c (4 ranks on 2: 0 and 2 on the first, 1 and 3 on
// the second), so that neighbours, the usual partners, sit on different processors.
// Otherwise each rank gets a block of its own: processors l·c/n up to (l+1)·c/n. Under
// socket, as mpirun's --bind-to socket (or package), each rank may run on every processor
// of the socket that holds the first processor core would give it: a rank never shares
// one processor with another while its socket has others. none binds nothing.
//
// The default, auto, binds no rank, as mpirun leaves ranks unbound on a host they
// oversubscribe. A bound rank cannot leave its processor when other work lands there:
// on a busy host, ranks bound to a shared processor wait for each other's time slices
// while another processor idles, and real programs run several times slower than
// unbound. On a quiet host real programs run alike bound and unbound
// (scripts/real-programs.sh with BIND=core against the default, and with LOAD=2);
// benchmarks of short messages between oversubscribed ranks gain from core (`golaunch
// -n 4 --bind-to core bin/allreducebench` against the default measures it). An
// unoversubscribed rank stays unbound as well: a Go rank computes with goroutines on
// every processor it may use (GOMAXPROCS follows the binding), which binding would take
// away.
const (
	BindAuto   = "auto"
	BindCore   = "core"
	BindSocket = "socket"
	BindNone   = "none"
)

// boundProcs is the GOMAXPROCS of a rank bound to a single processor, unless its
// environment sets one. Go sizes GOMAXPROCS by the processors a process may use. With 1,
// a rank computing in one goroutine keeps the tcp provider's goroutines, which serve
// passive-target operations, from running until Go preempts it (10 ms and more, per
// operation on a computing target: `golaunch -n 2 --bind-to core -x GOMAXPROCS=1
// bin/rmabench --test busy_get` measures it). With 2 those goroutines get a thread of
// their own, which the kernel runs beside the computing one.
const boundProcs = "2"

// bindRank returns the processors local rank l of n is bound to (nil: unbound) and its
// environment, env with GOMAXPROCS=boundProcs added when it is bound to a single
// processor and env sets no GOMAXPROCS.
func bindRank(policy string, cpus []int, l, n int, env []string) ([]int, []string) {
	set := bindSet(policy, cpus, cpuPackage, l, n)
	if len(set) != 1 || envValue(env, "GOMAXPROCS") != "" {
		return set, env
	}
	return set, append(env, "GOMAXPROCS="+boundProcs)
}

// envValue returns the value of name in env (the last one, as the child would see it).
func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}

// checkBindTo validates a --bind-to policy.
func checkBindTo(policy string) error {
	switch policy {
	case BindAuto, BindCore, BindSocket, BindNone:
		return nil
	}
	return fmt.Errorf("--bind-to %q: want auto, core, socket or none", policy)
}

// bindSet returns the processors that local rank l of n ranks on this host is bound to
// under policy, from cpus, the processors the agent may use (ascending); nil means
// unbound. pkg gives a processor's socket (cpuPackage).
func bindSet(policy string, cpus []int, pkg func(cpu int) int, l, n int) []int {
	c := len(cpus)
	if c == 0 || n < 1 || l < 0 || l >= n || policy != BindCore && policy != BindSocket {
		return nil
	}
	lo, hi := l%c, l%c+1
	if n <= c {
		lo, hi = l*c/n, (l+1)*c/n
	}
	if policy == BindCore {
		return cpus[lo:hi:hi]
	}
	var set []int
	for _, p := range cpus {
		if pkg(p) == pkg(cpus[lo]) {
			set = append(set, p)
		}
	}
	return set
}

// cpuPackage returns the socket (physical package) of processor cpu, as sysfs tells, or
// 0 where it does not.
func cpuPackage(cpu int) int {
	b, err := os.ReadFile("/sys/devices/system/cpu/cpu" + strconv.Itoa(cpu) + "/topology/physical_package_id")
	if err != nil {
		return 0
	}
	id, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return id
}

// agentCPUs returns the processors this process may run on, ascending: the set ranks are
// bound within and whose size is their host's processor count. It falls back to
// 0..NumCPU-1 if the affinity cannot be read.
func agentCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil {
		var cpus []int
		for i := 0; i < len(set)*64; i++ {
			if set.IsSet(i) {
				cpus = append(cpus, i)
			}
		}
		if len(cpus) > 0 {
			return cpus
		}
	}
	cpus := make([]int, runtime.NumCPU())
	for i := range cpus {
		cpus[i] = i
	}
	return cpus
}

// pinThread binds the calling thread (locked to its goroutine) to cpus, so that a child
// it forks inherits the binding, and returns the function that restores the thread's
// former set. Nothing is done for an empty cpus.
func pinThread(cpus []int) (restore func(), err error) {
	if len(cpus) == 0 {
		return func() {}, nil
	}
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return nil, fmt.Errorf("read the spawner's processor set: %w", err)
	}
	for _, c := range cpus {
		set.Set(c)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("bind to processors %v: %w (run with --bind-to none)", cpus, err)
	}
	return func() { unix.SchedSetaffinity(0, &old) }, nil
}
