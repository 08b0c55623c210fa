package runtime

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The processors a rank may use are its affinity, whatever launched it: golaunch,
// srun's --cpu-bind, Hydra's -bind-to, mpirun's binding or a user's taskset. Every
// launcher starts a host's ranks as children of one process (golaunch's agent,
// slurmstepd, hydra_pmi_proxy, mpirun or orted), so a rank reads its host's ranks'
// affinities from the kernel (siblingAffinities), at no cost to the process manager.
// The host's processors are the union of those, capped by the CPU quota of the rank's
// cgroup. fitOf decides from those alone; hostfit.go turns the decision into GOMAXPROCS
// and the waiting rule.

// hostFit is what fitOf decides for one rank of a host.
type hostFit struct {
	local int     // ranks on this host, this rank included
	cpus  int     // the host's processors: the union of its ranks' affinities, capped by the quota
	own   int     // processors in this rank's affinity
	alone int     // of those, the ones no other rank of the host may run on
	share int     // ranks that share processors with this rank, through any chain, itself included
	quota float64 // the cgroup's CPU quota in processors; 0: none
	// oversub: the ranks that share this rank's processors outnumber them, or the host's
	// ranks outnumber its quota. A waiting rank must then give its processor away.
	oversub bool
	// full: those ranks take every processor they share (at least one rank each), or the
	// quota's. A waiting rank needs one Go processor, no more.
	full bool
}

// fitOf decides for rank me of a host whose ranks have affinities sets (sets[me] is
// me's), under a CPU quota of quota processors (0: none). Two ranks share processors
// when their affinities meet; share counts the ranks that reach me through such
// meetings, and they compete for the union of their affinities.
func fitOf(me int, sets []unix.CPUSet, quota float64) hostFit {
	n := len(sets)
	in := make([]bool, n) // in me's group of sharing ranks
	in[me] = true
	for grew := true; grew; {
		grew = false
		for i := range sets {
			if in[i] {
				continue
			}
			for j := range sets {
				if in[j] && meets(&sets[i], &sets[j]) {
					in[i], grew = true, true
					break
				}
			}
		}
	}
	var all, group, others unix.CPUSet
	f := hostFit{local: n, own: sets[me].Count(), quota: quota}
	for i := range sets {
		orSet(&all, &sets[i])
		if in[i] {
			f.share++
			orSet(&group, &sets[i])
		}
		if i != me {
			orSet(&others, &sets[i])
		}
	}
	for i := range len(sets[me]) * 64 {
		if sets[me].IsSet(i) && !others.IsSet(i) {
			f.alone++
		}
	}
	f.cpus, f.alone = quotaCap(all.Count(), quota), quotaCap(f.alone, quota)
	groupCPUs := group.Count()
	f.oversub = f.share > groupCPUs || quota > 0 && float64(n) > quota
	f.full = f.share >= groupCPUs || quota > 0 && float64(n) >= quota
	return f
}

// quotaCap returns n processors capped by a quota of q processors (0: none), rounded up.
func quotaCap(n int, q float64) int {
	if q > 0 {
		return min(n, max(1, int(math.Ceil(q))))
	}
	return n
}

// setList returns the processors of set, ascending.
func setList(set *unix.CPUSet) []int {
	var out []int
	for i := range len(set) * 64 {
		if set.IsSet(i) {
			out = append(out, i)
		}
	}
	return out
}

func meets(a, b *unix.CPUSet) bool {
	for i := range a {
		if a[i]&b[i] != 0 {
			return true
		}
	}
	return false
}

func orSet(dst, src *unix.CPUSet) {
	for i := range dst {
		dst[i] |= src[i]
	}
}

// affinity returns the processors this process may run on; all of Go's view of them
// when the kernel's set cannot be read.
func affinity() unix.CPUSet {
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) == nil && set.Count() > 0 {
		return set
	}
	set.Zero()
	for i := range goruntime.NumCPU() {
		set.Set(i)
	}
	return set
}

// appendSet appends set as a byte count and the bytes up to its last processor.
func appendSet(b []byte, set *unix.CPUSet) []byte {
	var raw []byte
	for _, w := range set {
		raw = le.AppendUint64(raw, uint64(w))
	}
	raw = bytes.TrimRight(raw, "\x00")
	b = le.AppendUint16(b, uint16(len(raw)))
	return append(b, raw...)
}

// readSet reads what appendSet wrote from the front of p and returns the rest.
func readSet(p []byte) (unix.CPUSet, []byte, error) {
	var set unix.CPUSet
	if len(p) < 2 {
		return set, nil, fmt.Errorf("card affinity: %d bytes, want a 2-byte length", len(p))
	}
	n := int(le.Uint16(p))
	p = p[2:]
	if n > len(set)*8 || len(p) < n {
		return set, nil, fmt.Errorf("card affinity of %d bytes, %d present (at most %d)", n, len(p), len(set)*8)
	}
	for i, c := range p[:n] {
		for bit := range 8 {
			if c&(1<<bit) != 0 {
				set.Set(8*i + bit)
			}
		}
	}
	return set, p[n:], nil
}

// cpuQuota returns the CPU quota, in processors, of the cgroup this process runs in:
// the smallest of cgroup v2's cpu.max along its path, or v1's cpu.cfs_quota_us over
// cpu.cfs_period_us. 0: no quota, or none readable.
func cpuQuota() float64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	return quotaOf(string(b), "/sys/fs/cgroup", func(p string) (string, error) {
		b, err := os.ReadFile(p)
		return string(b), err
	})
}

// quotaOf is cpuQuota's rule over the text of /proc/self/cgroup and the cgroup file
// system mounted at root, whose files read returns.
func quotaOf(cgroups, root string, read func(path string) (string, error)) float64 {
	q := 0.0
	take := func(v float64) {
		if v > 0 && (q == 0 || v < q) {
			q = v
		}
	}
	sc := bufio.NewScanner(strings.NewReader(cgroups))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "": // v2
			for dir := filepath.Join(root, parts[2]); strings.HasPrefix(dir, root); dir = filepath.Dir(dir) {
				if s, err := read(filepath.Join(dir, "cpu.max")); err == nil {
					take(parseCPUMax(s))
				}
				if dir == root {
					break
				}
			}
		case hasController(parts[1], "cpu"): // v1
			for _, mount := range []string{"cpu,cpuacct", "cpu"} {
				dir := filepath.Join(root, mount, parts[2])
				qs, err1 := read(filepath.Join(dir, "cpu.cfs_quota_us"))
				ps, err2 := read(filepath.Join(dir, "cpu.cfs_period_us"))
				if err1 == nil && err2 == nil {
					take(parseCFS(qs, ps))
					break
				}
			}
		}
	}
	return q
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// parseCPUMax parses cgroup v2's cpu.max ("QUOTA PERIOD", QUOTA "max" for none) into
// processors; 0 for none.
func parseCPUMax(s string) float64 {
	f := strings.Fields(s)
	if len(f) != 2 || f[0] == "max" {
		return 0
	}
	return ratio(f[0], f[1])
}

// parseCFS parses cgroup v1's cpu.cfs_quota_us (-1: none) and cpu.cfs_period_us into
// processors; 0 for none.
func parseCFS(quota, period string) float64 {
	return ratio(strings.TrimSpace(quota), strings.TrimSpace(period))
}

func ratio(q, p string) float64 {
	qn, err1 := strconv.ParseInt(q, 10, 64)
	pn, err2 := strconv.ParseInt(p, 10, 64)
	if err1 != nil || err2 != nil || qn <= 0 || pn <= 0 {
		return 0
	}
	return float64(qn) / float64(pn)
}

// siblingAffinities returns the affinities and pids of this process and of its siblings
// (the other children of its parent), and this process's index among them, when they are n
// in all: the ranks of this host. ok is false when they are not n (a wrapper between the
// launcher and the rank, ranks that share a process) or a set cannot be read. Children
// that run the parent's own program are left out first, then, while still too many,
// those that do not run this rank's.
func siblingAffinities(n int) (sets []unix.CPUSet, pids []int, me int, ok bool) {
	parent := os.Getppid()
	pids = childrenOf(parent)
	// A launcher's own helpers run its program (golaunch's); where still too many, the
	// ranks run this rank's program (not so in an MPMD job).
	for _, keep := range []func(pid int) bool{
		func(pid int) bool { return !sameExe(pid, parent) },
		func(pid int) bool { return sameExe(pid, os.Getpid()) },
	} {
		if len(pids) <= n {
			break
		}
		pids = slices.DeleteFunc(pids, func(pid int) bool { return !keep(pid) })
	}
	if len(pids) != n {
		return nil, nil, 0, false
	}
	me = -1
	for i, pid := range pids {
		var set unix.CPUSet
		if unix.SchedGetaffinity(pid, &set) != nil {
			return nil, nil, 0, false
		}
		if pid == os.Getpid() {
			me = i
		}
		sets = append(sets, set)
	}
	return sets, pids, me, me >= 0
}

// childrenOf returns the pids of the live children of process pid, from every thread's
// /proc/PID/task/TID/children.
func childrenOf(pid int) []int {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "children"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil && !zombie(c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// sameExe reports whether processes a and b run the same executable file.
func sameExe(a, b int) bool {
	var sa, sb unix.Stat_t
	return unix.Stat(fmt.Sprintf("/proc/%d/exe", a), &sa) == nil && unix.Stat(fmt.Sprintf("/proc/%d/exe", b), &sb) == nil &&
		sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// zombie reports whether process pid has exited and awaits its parent's wait.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}
