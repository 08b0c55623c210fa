package runtime

import (
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"time"

	"github.com/gorma-hpc/gorma/internal/gosched"
	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
	"github.com/gorma-hpc/gorma/transport/verbs"
	"golang.org/x/sys/unix"
)

// GORMA_PROCS (EnvProcs) sets how many processors (GOMAXPROCS) a rank's Go scheduler
// uses: auto (the default, fitHost decides), go (Go's own choice: every processor the
// rank may run on, or the GOMAXPROCS variable), or a count from 1 up.

// A full host is one whose ranks fill its processors. A waiting rank runs its wait in the
// calling goroutine (the poller role, the collectives' flag spin, a window's word), so it
// needs one P. Any more P sits idle, and every goroutine that becomes ready, and every
// runtime.Gosched, wakes that P's thread, which looks for work on a processor that a peer
// rank needs. Under GORMA_PROCS=auto a full host's rank therefore runs on
// fullHostProcs P when every rank of the job shares its host. A rank with peers on other
// hosts gets crossHostProcs: the second P runs the tcp provider's reader goroutines and
// the network poller while the first waits (a bound rank gets the same, launcher's
// boundProcs). `bin/threadwatch --comm allreducebench -- golaunch -n 16
// bin/allreducebench` counts the runnable threads per rank, allreducebench's
// vcsw_per_call the context switches, and the 16-core job of scripts/device16.sh compares
// GORMA_PROCS=auto, 1 and go.
// envDebug (GORMA_DEBUG), set and not 0, makes Init print the rank's host fit on stderr.
const envDebug = "GORMA_DEBUG"

const (
	fullHostProcs  = 1
	crossHostProcs = 2
)

// fullHostSpin is how long a wait on a host whose ranks fit its processors polls before
// it sleeps, in hybrid mode with GORMA_SPIN unset: longer than the steps of any collective
// or message exchange between running ranks, so that a loop of calls never sleeps, and
// short enough that a rank whose peer computes gives its core back soon. The rule then
// adapts it down to verbs.DefaultSpin (subcore.Waiting). `bin/golaunch -n 2
// bin/allreducebench --sizes 8,64K,1M` reports the switches per call (vcsw_per_call).
const fullHostSpin = 2 * time.Millisecond

// procsPolicy is GORMA_PROCS parsed: procsAuto, procsGo, or a count.
type procsPolicy int

const (
	procsAuto procsPolicy = 0
	procsGo   procsPolicy = -1
)

// parseProcs parses GORMA_PROCS ("" is auto).
func parseProcs(v string) (procsPolicy, error) {
	switch v {
	case "", "auto":
		return procsAuto, nil
	case "go":
		return procsGo, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1<<16 {
		return procsAuto, fmt.Errorf("%w: %s=%q: want auto, go or a processor count such as 2", ErrConfig, EnvProcs, v)
	}
	return procsPolicy(n), nil
}

// hostProcs returns the GOMAXPROCS a rank should use, or 0 to leave Go's: policy is
// GORMA_PROCS, set whether the GOMAXPROCS variable or the program (before Init) set it,
// cur Go's current value, f the rank's fit, and oneHost whether every peer of the rank is
// on its host (no tcp device). A count in GORMA_PROCS wins. Auto leaves a GOMAXPROCS
// that was set. It lowers cur only where the ranks sharing the rank's processors take
// them all (f.full): to fullHostProcs (oneHost) or crossHostProcs, but never below the
// processors that the rank alone may run on (f.alone).
func hostProcs(policy procsPolicy, set bool, cur int, f hostFit, oneHost bool) int {
	want := crossHostProcs
	if oneHost {
		want = fullHostProcs
	}
	want = max(want, f.alone)
	switch {
	case policy > 0:
		return int(policy)
	case policy == procsGo, set:
		return 0
	case f.full && cur > want:
		return want
	}
	return 0
}

// waitRule returns a rank's waiting rule (subcore.Waiting, runtime/design.md "The
// waiting rule"): mode is GORMA_PROGRESS, spin GORMA_SPIN (0 when unset), oversub
// whether ranks outnumber the processors they share (hostFit) and procs the rank's
// GOMAXPROCS.
//   - spin mode polls for ever, block mode sleeps at once;
//   - hybrid mode polls for GORMA_SPIN when it is set;
//   - else, on an oversubscribed host, for verbs.DefaultSpin;
//   - else for fullHostSpin, adapting down to verbs.DefaultSpin.
//
// A spin yields to the Go scheduler only where that wakes no thread: one P, or an
// oversubscribed host.
func waitRule(mode verbs.WaitMode, spin time.Duration, oversub bool, procs int) *subcore.Waiting {
	yield := oversub || procs <= 1
	fixed := func(d time.Duration) *subcore.Waiting { return subcore.NewWaiting(d, d, oversub, yield) }
	switch {
	case mode == verbs.WaitSpin:
		return fixed(subcore.SpinForever)
	case mode == verbs.WaitBlock:
		return fixed(0)
	case spin > 0:
		return fixed(spin)
	case oversub:
		return fixed(verbs.DefaultSpin)
	}
	return subcore.NewWaiting(verbs.DefaultSpin, fullHostSpin, false, yield)
}

// startProcs is GOMAXPROCS when the package was initialized, before main ran: a
// different value at Init is the program's own choice, which stands.
var startProcs = goruntime.GOMAXPROCS(0)

// fitHost reads the affinities of this host's ranks (siblingAffinities) and the
// cgroup's CPU quota, decides the rank's fit (fitOf), applies GORMA_PROCS and sets the
// waiting rule. Init calls it once the rank knows its host's ranks and before the
// devices open. Where the ranks are not the children of one process, it takes every
// rank's affinity to be this rank's, and the host's processors to be at most e.ncpu
// (the launch contract's GOLAUNCH_HOST_CPUS, else Go's count), as a quota would. With
// GORMA_DEBUG set, the rank prints what it decided on stderr.
func (j join) fitHost() {
	e := j.e
	quota := cpuQuota()
	sets, pids, me, ok := siblingAffinities(e.localSize)
	if !ok {
		sets, me = make([]unix.CPUSet, max(1, e.localSize)), 0
		for i := range sets {
			sets[i] = affinity()
		}
		if c := float64(e.ncpu); c > 0 && c < float64(sets[0].Count()) && (quota == 0 || c < quota) {
			quota = c
		}
	}
	f := fitOf(me, sets, quota)
	e.ncpu = f.cpus
	oneHost := e.localSize >= e.size // a device that reaches other hosts raises it (crossHost)
	// A rank whose calls come from C threads (gosched.Locked) never yields to its other
	// goroutines: they run on a second P, as a cross-host rank's readers do.
	n := hostProcs(e.cfg.procs, e.cfg.maxProcsSet, goruntime.GOMAXPROCS(0), f, oneHost && !gosched.Locked())
	if n > 0 {
		goruntime.GOMAXPROCS(n)
		if e.cfg.procs == procsAuto {
			e.cfg.procsFit = n
		}
	}
	w := waitRule(e.cfg.progress, e.cfg.spinSet, f.oversub, goruntime.GOMAXPROCS(0))
	j.setWaiting(w)
	if ok && e.cfg.fold && f.full && w.Adapts() && sets[me].Count() > 1 {
		fo := &folder{rank: e.rank, debug: e.cfg.debug, w: w, own: sets[me], cur: sets[me], oversub: w.Oversub(), yields: w.Yields()}
		for _, i := range sortedBy(pids) {
			if i != me && meets(&sets[i], &sets[me]) {
				fo.siblings, fo.orig = append(fo.siblings, pids[i]), append(fo.orig, sets[i])
				fo.lower = append(fo.lower, pids[i] < pids[me])
			}
		}
		if len(fo.siblings) > 0 {
			w.SetFold(fo.fold, fo.joins)
		}
	}
	if e.cfg.debug {
		fmt.Fprintf(os.Stderr, "gorma: rank %d: %s\n", e.rank, fitLine(f, ok, goruntime.GOMAXPROCS(0), n > 0, w))
	}
}

// fitLine says what fitHost decided, in one line: the fit, where the ranks' affinities
// came from (siblings: the kernel's, else this rank's taken for all), GOMAXPROCS
// (lowered or left) and the waiting rule.
func fitLine(f hostFit, siblings bool, procs int, lowered bool, w *subcore.Waiting) string {
	quota := "no quota"
	if f.quota > 0 {
		quota = fmt.Sprintf("quota %.2f", f.quota)
	}
	state := "not oversubscribed"
	if f.oversub {
		state = "oversubscribed"
	}
	how := "left"
	if lowered {
		how = "lowered"
	}
	from := "their own"
	if !siblings {
		from = "this rank's, taken for all"
	}
	return fmt.Sprintf("host fit: %d ranks on %d processors (%s); this rank may run on %d, %d alone, shared by %d ranks: %s, full %v; GOMAXPROCS %d (%s); spin %v, yields %v; affinities: %s",
		f.local, f.cpus, quota, f.own, f.alone, f.share, state, f.full, procs, how, w.Budget(), w.Yields(), from)
}

// crossHost gives a rank that GORMA_PROCS=auto put on fullHostProcs the crossHostProcs of
// a rank with peers on other hosts, when it opens a device that reaches them (a job that
// grew across hosts, or one whose Init chose tcp for a peer).
func (cfg *config) crossHost() {
	if cfg.procsFit == 0 || cfg.procsFit >= crossHostProcs {
		return
	}
	goruntime.GOMAXPROCS(crossHostProcs)
	cfg.procsFit = crossHostProcs
	if w := cfg.waiting; w != nil && !w.Oversub() {
		w.SetYields(false)
	}
}

// setWaiting makes w the rank's waiting rule, which the poller and the layers above
// (substrate.WaitRule) follow. Before the engine starts.
func (j join) setWaiting(w *subcore.Waiting) {
	e := j.e
	e.waiting, e.poll.rule, e.cfg.waiting = w, w, w
}

// Waiting returns the rank's waiting rule.
func (s *subWorld) Waiting() *subcore.Waiting { return s.e.waiting }
