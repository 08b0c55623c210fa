package collectives

import (
	"slices"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Where a World's ranks are: their hosts, whether the ranks of each host map each
// other's memory, and the host groups (internal/hostgroup) and sub-groups the one-host
// and hierarchical algorithms use.

// locality is what the selection needs to know about where the ranks are.
type locality struct {
	oneHost    bool // every rank on this host, reached through shm (the shm algorithm applies)
	hosts      int  // number of hosts
	shared     bool // some host has more than one rank (the hierarchical algorithm pays)
	contiguous bool // each host's ranks are consecutive (hier keeps rank order)
	even       bool // every host has the same number of ranks (lanes applies)
}

// localState is what a World's collectives keep about locality: the hosts, and the
// shared-memory groups and leaders' sub-group the shm and hierarchical algorithms use.
// Like the rest of state, it is used by one call at a time.
type localState struct {
	comm    *runtime.World // the state's World (teamed reads its ranks' processors)
	loc     locality
	host    []int   // World ranks on this rank's host, ascending
	hostIdx int     // this rank's index in host
	leaders []int   // the lowest rank of every host, ascending
	lead    int     // this rank's index in leaders, or -1
	most    int     // the ranks of the job's largest host
	hosts   [][]int // the ranks of every host, ascending, hosts in the order of leaders
	// unmapped: some host's ranks do not share memory (golaunch --transport tcp), the
	// same at every rank; a forced hier then fails with ErrConfig
	unmapped bool

	world   *hostgroup.Group // every rank (allreduceSHM on a one-host job of at most hostgroup.FlatMax() ranks)
	team    *hostgroup.Group // this rank's team (a one-host job of more ranks: teams.go)
	heads   *hostgroup.Group // the teams' first ranks, when this rank is one; else nil
	flat    bool             // the host's ranks are one group: no teams (teamed said so)
	oneGrp  bool             // the host holds at most hostgroup.FlatMax() ranks: its data moves take one group (worldGroup)
	onHost  *hostgroup.Group // the ranks of this host (allreduceHier)
	leaderS *state           // the leaders' sub-group, for the point-to-point step of hier
	hostS   *state           // this host's ranks, for the on-host steps of lanes (nil: not even)
	laneS   *state           // the ranks of every host with this rank's index there (lanes)
}

// localOf returns s's locality state, working it out on first use. Ranks are on the same
// host when the World names the same host for them; a host can share memory when this
// rank reaches all of its other ranks through shm (the runtime's choice, the same on
// every rank of a host).
func localOf(s *state) *localState {
	if s.local != nil {
		return s.local
	}
	w := s.comm
	l := &localState{comm: w, lead: -1}
	byHost := map[string][]int{}
	var order []string
	for r := range s.size {
		h := w.HostOf(r)
		if _, ok := byHost[h]; !ok {
			order = append(order, h)
		}
		byHost[h] = append(byHost[h], r)
	}
	l.host = byHost[w.HostOf(s.rank)]
	l.oneGrp = len(l.host) <= hostgroup.FlatMax()
	l.hostIdx = slices.Index(l.host, s.rank)
	// Whether the ranks of every host share memory, decided alike at every rank: from
	// ReachBetween, not from this rank's own ReachOf, which a rank alone on its host
	// cannot use to see that the others do not (golaunch --transport tcp). Deciding it per
	// host made such a rank pick hier while its peers picked another algorithm, and every
	// rank waited for the others forever (TestAllreduceHierUnmappedIsConfigError).
	mapped := true
	l.loc = locality{hosts: len(order), contiguous: true, even: true}
	for _, h := range order {
		rs := byHost[h]
		for _, r := range rs[1:] {
			if !substrate.ReachBetween(w, rs[0], r).Has(substrate.ReachMap) {
				mapped = false
			}
		}
		l.leaders = append(l.leaders, rs[0])
		l.hosts = append(l.hosts, rs)
		l.most = max(l.most, len(rs))
		l.loc.shared = l.loc.shared || len(rs) > 1
		l.loc.contiguous = l.loc.contiguous && rs[len(rs)-1]-rs[0] == len(rs)-1
		l.loc.even = l.loc.even && len(rs) == len(l.host)
	}
	l.loc.oneHost = len(order) == 1 && mapped
	l.unmapped = !mapped
	l.loc.shared = l.loc.shared && mapped
	l.lead = slices.Index(l.leaders, s.rank)
	if l.lead >= 0 && len(l.leaders) > 1 {
		l.leaderS = &state{comm: s.comm, rank: l.lead, size: len(l.leaders), ranks: l.leaders, bt: s.bt}
	}
	if l.loc.even && len(order) > 1 && len(l.host) > 1 {
		lane := make([]int, len(order))
		for i, h := range order {
			lane[i] = byHost[h][l.hostIdx]
		}
		l.hostS = &state{comm: s.comm, rank: l.hostIdx, size: len(l.host), ranks: l.host, bt: s.bt}
		l.laneS = &state{comm: s.comm, rank: slices.Index(lane, s.rank), size: len(lane), ranks: lane, bt: s.bt}
	}
	s.local = l
	return l
}

// fail drops what a failed call may have left inconsistent: the shared-memory groups are
// set up again at their next use, but for one whose failure left its members in step
// (hostgroup.Group.cleanFail); the leaders' Requests and scratch are replaced.
func (l *localState) fail() {
	for _, g := range []*hostgroup.Group{l.world, l.team, l.heads, l.onHost} {
		g.Fail()
	}
	for _, sub := range []*state{l.leaderS, l.hostS, l.laneS} {
		if sub != nil {
			sub.reqs = nil
			sub.scratch = [2][]uint64{}
		}
	}
}
