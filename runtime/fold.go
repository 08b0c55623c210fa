package runtime

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
	"golang.org/x/sys/unix"
)

// Folding away from other work (design.md, "Folding away from other work"). Ranks that
// have a processor each spin while they wait. Where other work takes one of their
// processors, the rank beside it runs only when the other work's time slice ends, and
// every rank waits for it. The waiting rule sees the theft (subcore.Waiting.Spun), and
// the rank folds: it moves its threads off the processor it lost, onto the rest of its
// processors, and gives its processor away at each missed poll, as on an oversubscribed
// host. A rank whose processor a folded sibling shares joins that fold. The kernel then
// keeps the other work on the processors the ranks left. A fold lasts as long as the
// rule's hold; the rank then goes back to its own affinity and spins again.

// envFold turns folding off ("off"); "on" or unset leaves it on.
const envFold = "GORMA_FOLD"

// folder folds one rank. fitHost makes one for a rank that spins with a processor to
// itself, has siblings it can read, and may run on more than one processor.
type folder struct {
	rank     int
	debug    bool
	w        *subcore.Waiting
	own      unix.CPUSet   // the rank's affinity at Init
	oversub  bool          // w's Oversub at Init, which an unfold restores
	yields   bool          // w's Yields at Init, which an unfold restores
	siblings []int         // the pids of the host's other ranks that share processors with it, ascending
	orig     []unix.CPUSet // their affinities at Init
	lower    []bool        // their pids are lower than this rank's

	mu   sync.Mutex
	cur  unix.CPUSet   // the threads' affinity: own, or a fold's
	left cpuTimes      // the processors a fold left, as /proc/stat counted them when it began
	seen []unix.CPUSet // joins' reading of the siblings' folds, reused: a spin allocates nothing
	// quiet is the Clock reading until which an unfolded rank joins no fold: its own
	// fold ended as the other work had gone, and its siblings' end soon.
	quiet atomic.Int64
}

// fold is the Waiting's hook (SetFold). It reads the processor the waiting thread is on
// and decides in a goroutine of its own.
func (f *folder) fold(h subcore.Hold) {
	go f.sync(h, getcpu())
}

// joins is the Waiting's question (SetFold). A rank that holds no fold joins a sibling's
// fold that holds the processor this thread runs on. A rank that spins on a processor of
// its own does not see the folded rank that waits for that processor: its spin pauses
// only while the other runs, for less than a StealGap each time. A folded rank joins the
// fold of its lowest sibling (by pid) that holds one, where that fold and its own do not
// meet: folds apart leave each rank waiting for the other's time slices.
func (f *folder) joins() bool {
	cpu := getcpu()
	if !f.mu.TryLock() {
		return false // sync moves the threads: the next FoldCheck asks again
	}
	defer f.mu.Unlock()
	cur := f.cur
	if cur == f.own && subcore.Clock() < time.Duration(f.quiet.Load()) {
		return false
	}
	f.seen = f.folds(f.seen)
	for i, s := range f.seen {
		if s.Count() == 0 {
			continue
		}
		if cur == f.own {
			if cpu >= 0 && s.IsSet(cpu) {
				return true
			}
			continue
		}
		return f.lower[i] && !meets(&s, &cur)
	}
	return false
}

// folds returns the siblings' folds in dst (grown to their number), in their order: a
// sibling's affinity where it differs from its affinity at Init, else (no fold, or
// gone) the empty set.
func (f *folder) folds(dst []unix.CPUSet) []unix.CPUSet {
	out := slices.Grow(dst[:0], len(f.siblings))[:len(f.siblings)]
	for i, pid := range f.siblings {
		if unix.SchedGetaffinity(pid, &out[i]) != nil || out[i] == f.orig[i] {
			out[i] = unix.CPUSet{}
		}
	}
	return out
}

// sync carries out what h asks, with cpu the processor the waiting thread was on.
func (f *folder) sync(h subcore.Hold, cpu int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if subcore.SharedProcess() {
		return
	}
	v := foldView{own: f.own, cur: f.cur, cpu: cpu, folds: f.folds(nil), lower: f.lower}
	if h == subcore.HoldTheft {
		v.siblingThief = ranOn(f.siblings, cpu)
		if v.siblingThief && f.cur == f.own {
			// The kernel starts or wakes a thread beside a sibling at times, and moves
			// one of the two to an idle processor soon after. Only a sibling that
			// still runs there after siblingSettle shows that the other processors
			// are taken.
			time.Sleep(siblingSettle)
			v.siblingThief = ranOn(f.siblings, cpu)
			if !v.siblingThief {
				return
			}
		}
	}
	to, move := planFold(h, v)
	if h == subcore.HoldEnd && f.w.Busy() || !move {
		return // a hold started again meanwhile, or nowhere to go
	}
	if h == subcore.HoldEnd {
		// The other work is still there when the processors the fold left stayed busy,
		// and no sibling ran there: each holds a fold inside this one.
		if now := readCPUTimes(f.left.cpus); within(v.folds, f.cur) && busyBetween(f.left, now) {
			f.left = now
			f.w.Rehold()
			return
		}
	} else {
		gone := f.own
		for i := range gone {
			gone[i] &^= to[i]
		}
		f.left = readCPUTimes(setList(&gone))
	}
	setThreads(&to)
	f.cur = to
	folded := to != f.own
	if h == subcore.HoldEnd {
		// The other work has gone. The siblings of the fold see it at their own hold's
		// end: until then, their folds are no reason to join.
		f.quiet.Store(int64(subcore.Clock() + subcore.BusyHoldMax))
	}
	f.w.SetSharing(folded)
	if folded {
		f.w.SetOversub(true)
		f.w.SetYields(true)
	} else {
		f.w.SetOversub(f.oversub)
		f.w.SetYields(f.yields)
	}
	if f.debug {
		why := holdWords[h]
		if v.siblingThief {
			why = "a sibling's theft"
		}
		fmt.Fprintf(os.Stderr, "gorma: rank %d: %s onto processors %v (%s on processor %d)\n",
			f.rank, map[bool]string{true: "folded", false: "unfolded"}[folded], setList(&to), why, cpu)
	}
}

// siblingSettle is how long a sibling's theft must last before an unfolded rank folds
// for it: longer than the kernel takes to move one of two threads on a processor to an
// idle one. `GORMA_DEBUG=1 golaunch -n 2 bin/allreducebench --test bcast --size-time
// 2s` shows the folds on a quiet host (none should last), and TestFoldBesideOtherWork
// the folds beside a busy loop.
const siblingSettle = 20 * time.Millisecond

// sortedBy returns the indexes of pids in ascending order of pid.
func sortedBy(pids []int) []int {
	idx := make([]int, len(pids))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return pids[a] - pids[b] })
	return idx
}

// holdWords says what started a move, for GORMA_DEBUG.
var holdWords = map[subcore.Hold]string{
	subcore.HoldEnd:   "hold ended",
	subcore.HoldTheft: "theft",
	subcore.HoldJoin:  "a sibling's fold",
}

// foldView is what planFold decides from.
type foldView struct {
	own, cur unix.CPUSet   // the rank's affinity at Init, and its threads' now
	cpu      int           // the processor the waiting thread was on; -1: unknown
	folds    []unix.CPUSet // the siblings' folds, by pid; empty for a sibling that holds none
	lower    []bool        // the siblings whose pids are lower than this rank's
	// siblingThief: a runnable thread of a sibling was last on cpu when a theft was
	// seen. The rank then shares its processor with a sibling, not with other work.
	siblingThief bool
}

// planFold returns the affinity the rank's threads take after h, and whether they move.
//   - HoldEnd: back to own.
//   - HoldJoin, holding no fold: into the first sibling's fold that holds cpu, on its
//     processors in own. Folded: into the fold of the lowest sibling that holds one,
//     where the two do not meet.
//   - HoldTheft by a sibling: a rank that holds no fold folds onto cpu, which the
//     sibling then joins; a folded rank stays.
//   - HoldTheft by other work: off cpu, into a sibling's fold that leaves it, else onto
//     the rest of the rank's processors (its fold's, else own's).
func planFold(h subcore.Hold, v foldView) (to unix.CPUSet, move bool) {
	moveTo := func(s unix.CPUSet) (unix.CPUSet, bool) { return s, s.Count() > 0 && s != v.cur }
	switch h {
	case subcore.HoldEnd:
		return moveTo(v.own)
	case subcore.HoldJoin:
		if v.cur != v.own {
			for i, f := range v.folds {
				if f.Count() == 0 {
					continue
				}
				s := andSet(f, v.own)
				if both := andSet(s, v.cur); i < len(v.lower) && v.lower[i] && both.Count() == 0 {
					return moveTo(s)
				}
				break
			}
			return to, false
		}
		for _, f := range v.folds {
			if v.cpu >= 0 && f.IsSet(v.cpu) {
				return moveTo(andSet(f, v.own))
			}
		}
		return to, false
	}
	if v.cpu < 0 || !v.own.IsSet(v.cpu) {
		return to, false
	}
	if v.siblingThief {
		if v.cur != v.own {
			return to, false
		}
		to.Set(v.cpu)
		return moveTo(to)
	}
	for _, f := range v.folds {
		if s := andSet(f, v.own); s.Count() > 0 && !s.IsSet(v.cpu) {
			return moveTo(s)
		}
	}
	for _, s := range []unix.CPUSet{v.cur, v.own} {
		if s.Clear(v.cpu); s.Count() > 0 {
			return moveTo(s)
		}
	}
	return to, false
}

// cpuTimes is what /proc/stat counted for some processors: the time each spent idle and
// in all, in clock ticks.
type cpuTimes struct {
	cpus        []int
	idle, total []uint64
}

// readCPUTimes reads /proc/stat's counts for cpus. A processor it does not list counts
// nothing.
func readCPUTimes(cpus []int) cpuTimes {
	t := cpuTimes{cpus: cpus, idle: make([]uint64, len(cpus)), total: make([]uint64, len(cpus))}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return t
	}
	at := make(map[int]int, len(cpus))
	for i, c := range cpus {
		at[c] = i
	}
	for line := range bytes.Lines(b) {
		f := bytes.Fields(line)
		if len(f) < 5 || !bytes.HasPrefix(f[0], []byte("cpu")) {
			continue
		}
		c, err := strconv.Atoi(string(f[0][3:]))
		i, ok := at[c]
		if err != nil || !ok {
			continue
		}
		for k, v := range f[1:] {
			n, _ := strconv.ParseUint(string(v), 10, 64)
			t.total[i] += n
			if k == 3 || k == 4 { // idle and iowait
				t.idle[i] += n
			}
		}
	}
	return t
}

// busyBetween reports whether the processors of a and b (the same, read at two times)
// were busy for more than half of the time between: other work ran there, as the
// rank's threads did not. No time counted (a clock tick is longer than the gap) counts
// as busy.
func busyBetween(a, b cpuTimes) bool {
	var busy, total uint64
	for i := range a.cpus {
		dt, di := b.total[i]-a.total[i], b.idle[i]-a.idle[i]
		total += dt
		busy += dt - min(di, dt)
	}
	return len(a.cpus) > 0 && 2*busy >= total
}

// within reports whether every set of folds is non-empty and inside set.
func within(folds []unix.CPUSet, set unix.CPUSet) bool {
	for _, f := range folds {
		if f.Count() == 0 || andSet(f, set) != f {
			return false
		}
	}
	return true
}

// andSet returns the processors in both a and b.
func andSet(a, b unix.CPUSet) unix.CPUSet {
	for i := range a {
		a[i] &= b[i]
	}
	return a
}

// ranOn reports whether a runnable thread of one of the processes pids was last on
// processor cpu (/proc/PID/task/TID/stat): the thief of a processor that the kernel has
// just handed back is runnable and still there.
func ranOn(pids []int, cpu int) bool {
	for _, pid := range pids {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue
			}
			if state, on, ok := statCPU(b); ok && state == 'R' && on == cpu {
				return true
			}
		}
	}
	return false
}

// statCPU returns a task's state and its last processor from its stat line
// (proc_pid_stat(5): the state is the third field, the processor the 39th; the second,
// the command, is in parentheses and may hold spaces).
func statCPU(b []byte) (state byte, cpu int, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:]) // from the third field on
	if len(f) < 37 || len(f[0]) != 1 {
		return 0, 0, false
	}
	c, err := strconv.Atoi(string(f[36]))
	return f[0][0], c, err == nil
}

// setThreads sets the affinity of every thread of the process to set. A thread started
// meanwhile inherits its creator's, so a second pass catches the threads the first
// one's creators started before they were moved.
func setThreads(set *unix.CPUSet) {
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			unix.SchedSetaffinity(0, set)
			return
		}
		for _, t := range tasks {
			if tid, err := strconv.Atoi(t.Name()); err == nil {
				unix.SchedSetaffinity(tid, set) // a thread that exited meanwhile has no affinity to set
			}
		}
	}
}

// getcpu returns the processor the calling thread runs on, -1 if unknown.
func getcpu() int {
	var cpu uint32
	if _, _, errno := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), 0, 0); errno != 0 {
		return -1
	}
	return int(cpu)
}
