package hostgroup

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Cache domains. The processors that share a last-level cache (L3 on most hosts) form a
// domain, named by its lowest processor. A rank whose processors (substrate.CPUsOf, its
// affinity) all lie in one domain is in that domain: bound to one processor, to a block
// of a cache's processors (srun -c, mpirun's PE=, golaunch's blocks) or to them all. A
// rank whose processors span domains (an unbound rank on a host of several) has none
// (-1). teamed splits a host's ranks by domain (PlanTeams, teams.go), so that a team's
// flag lines stay in one cache and only the heads' cross domains.

// sysCPU is where Linux describes the processors and their caches.
const sysCPU = "/sys/devices/system/cpu"

// envSysCPU (GORMA_TEST_SYSCPU) names a pretend sysCPU tree, for the tests that run
// real ranks on a machine whose caches sysfs does not describe.
const envSysCPU = "GORMA_TEST_SYSCPU"

// llc is this process's table of last-level cache domains, read from sysCPU.
var llc = &cacheDomains{root: cmp.Or(os.Getenv(envSysCPU), sysCPU)}

// cacheDomains maps processors to their last-level cache domains, read from sysfs under
// root on first use and kept. Its methods are safe for concurrent use.
type cacheDomains struct {
	root string

	mu  sync.Mutex
	dom map[int]int // processor to domain, -1 where it could not be read
}

// of returns the domain of processor cpu, or -1 when cpu is negative or its cache cannot
// be read (no sysfs, another OS). Reading one processor's cache records the domain of
// every processor that shares it.
func (c *cacheDomains) of(cpu int) int {
	if cpu < 0 {
		return -1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.dom[cpu]; ok {
		return d
	}
	if c.dom == nil {
		c.dom = map[int]int{}
	}
	shared, err := readLLC(c.root, cpu)
	if err != nil || !slices.Contains(shared, cpu) {
		c.dom[cpu] = -1
		return -1
	}
	for _, p := range shared {
		c.dom[p] = shared[0]
	}
	return shared[0]
}

// ofSet returns the domain that holds every processor of cpus, or -1 when they span
// domains, one is unknown, or cpus is empty.
func (c *cacheDomains) ofSet(cpus []int) int {
	d := -1
	for i, p := range cpus {
		q := c.of(p)
		if q < 0 || i > 0 && q != d {
			return -1
		}
		d = q
	}
	return d
}

// RankDomains returns the cache domain of each of ranks (ranks of w on this rank's host,
// ascending), -1 where unknown. Every rank of the host gets the same answer: the
// processors come from the ranks' cards and the domains from the host's sysfs. Once one
// domain is unknown the rest are left unknown unread, since PlanTeams then ignores them.
// A test replaces it to pretend domains.
var RankDomains = func(w *runtime.World, ranks []int) []int {
	dom := make([]int, len(ranks))
	known := true
	for i, r := range ranks {
		dom[i] = -1
		if known {
			dom[i] = llc.ofSet(substrate.CPUsOf(w, r))
			known = dom[i] >= 0
		}
	}
	return dom
}

// maxCPU bounds the processor numbers parseCPUList accepts: sysfs never lists more, and
// a corrupt range cannot make it allocate without bound.
const maxCPU = 1 << 16

// parseCPUList parses a Linux processor list ("0-3,8,10-11\n", as in shared_cpu_list)
// into its processors, ascending and without repeats.
func parseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty processor list")
	}
	var set [maxCPU / 64]uint64
	first, last := maxCPU, 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b >= maxCPU {
			return nil, fmt.Errorf("processor list %q: bad item %q", s, part)
		}
		for p := a; p <= b; p++ {
			set[p/64] |= 1 << (p % 64)
		}
		first, last = min(first, a), max(last, b)
	}
	var cpus []int
	for p := first; p <= last; p++ {
		if set[p/64]&(1<<(p%64)) != 0 {
			cpus = append(cpus, p)
		}
	}
	return cpus, nil
}
