package collectives

import (
	"os"
	"slices"
	"strconv"

	"github.com/gorma-hpc/gorma/runtime"
)

// Teams. A shmGroup's members map each other's scratch and every step waits for every
// member, so one group over every rank of a large host would connect and map every pair of
// ranks. A host of more than shmFlatMax ranks therefore splits its ranks into teams of
// consecutive ranks, at most shmTeamMax each (as equal as the count allows, at least
// half that). Each team is a shmGroup, and the teams' first ranks, the heads, form one
// more. A rank then maps and connects to the members of its team, and a head also to the
// other heads: O(T + N/T) peers instead of N-1.
//
// Teams also follow the host's last-level cache domains (cachedom.go), so that a team's
// flag lines stay in one cache and only the heads' cross domains. Teams stay runs of
// consecutive ranks, so each run of consecutive ranks in one domain is a team (split
// further when it holds more than shmTeamMax ranks), at any count of ranks. That holds
// when every rank of the host is bound to a processor and the ranks make two runs or
// more, of two ranks or more on average (domainRuns). Otherwise the split by count above
// stands: the default binding leaves ranks unbound unless the host is oversubscribed.
// planTeams decides, from the ranks' cards and the host's sysfs, so every rank of the
// host decides alike.
//
// A collective runs in the team, among the heads, then in the team again:
//
//   - Barrier (a one-host job): a team step, a heads' step, a team step.
//   - Allreduce (a one-host job): the team reduces to its head (allreduceSHM with a
//     root), the heads allreduce in place, each head broadcasts to its team (shmBcast).
//     Teams and heads are in rank order, so the result is combined in rank order.
//   - The hierarchical Allreduce of a job spanning hosts: the heads reduce to the host's
//     first rank instead (reduceTeams), which takes part in the leaders' step and
//     broadcasts back through the heads and the teams (bcastTeams).
//
// The rooted and all-to-all collectives move their data in one group of every rank of
// the host while it holds at most shmFlatMax ranks, teams or not; a larger host moves
// them point to point (worldGroup, bcast_shm.go).

// shmFlatMax and shmTeamMax: a host of at most shmFlatMax ranks is one shmGroup; a larger
// one runs in teams of at most shmTeamMax. GORMA_SHM_TEAM (at least 4) sets both. By
// default one group serves up to 32 ranks (the selection sweep, class team, found it
// faster than teams there) and teams hold at most 16: every rank of a group connects to
// every other, and each connection holds shared memory. `apps/scalebench` measures the
// cost of a job at 8 to 256 ranks.
func shmFlatMax() int {
	if v, ok := shmTeamEnv(); ok {
		return v
	}
	return 32
}

func shmTeamMax() int {
	if v, ok := shmTeamEnv(); ok {
		return v
	}
	return 16
}

// shmTeamEnv returns GORMA_SHM_TEAM's value, if it is a count of at least 4.
func shmTeamEnv() (int, bool) {
	if v, err := strconv.Atoi(os.Getenv("GORMA_SHM_TEAM")); err == nil && v >= 4 {
		return v, true
	}
	return 0, false
}

// teamed reports whether the shared-memory collectives of this rank's host run in
// teams, and sets the groups up the first time it says yes. planTeams decides, from the
// host's ranks and their cache domains, alike at every rank of the host.
func (l *localState) teamed() bool {
	if l.team != nil || l.flat {
		return l.team != nil
	}
	var dom []int
	if len(l.host) > 1 {
		dom = rankDomains(l.comm, l.host)
	}
	teams := planTeams(l.host, dom, shmFlatMax(), shmTeamMax())
	if teams == nil {
		l.flat = true
		return false
	}
	me := l.host[l.hostIdx]
	heads := make([]int, len(teams))
	for i, t := range teams {
		heads[i] = t[0]
		if j := slices.Index(t, me); j >= 0 {
			l.team = &shmGroup{ranks: t, me: j}
			if j == 0 {
				l.heads = &shmGroup{me: i}
			}
		}
	}
	if l.heads != nil {
		l.heads.ranks = heads
	}
	return true
}

// planTeams returns the teams of a host's ranks (ranks, ascending), or nil when they are
// one group. dom[i] is the cache domain of ranks[i], -1 when unknown. Every team is a run
// of consecutive ranks, and the teams come in rank order.
//   - By domain, when domainRuns says the domains decide: a team per run of ranks in
//     one domain, a run of more than teamMax ranks split into near-equal parts
//     (splitRun).
//   - Otherwise by size: one group up to flatMax ranks, else near-equal parts of at most
//     teamMax.
func planTeams(ranks, dom []int, flatMax, teamMax int) [][]int {
	if ends := domainRuns(dom); ends != nil {
		var teams [][]int
		lo := 0
		for _, hi := range ends {
			teams = append(teams, splitRun(ranks[lo:hi], teamMax)...)
			lo = hi
		}
		return teams
	}
	if len(ranks) <= flatMax {
		return nil
	}
	return splitRun(ranks, teamMax)
}

// domainRuns returns where the runs of consecutive ranks in one domain end (run i ends
// before ends[i]), or nil when the domains do not decide the teams:
//   - some domain is unknown (an unbound rank);
//   - every rank is in one domain;
//   - the runs hold fewer than two ranks on average, so teams would mostly add steps
//     (every domain of one rank, or a binding that interleaves domains rank by rank).
//
// A domain may make several runs: golaunch deals the ranks of an oversubscribed host out
// to its processors in turn, so the runs repeat every round.
func domainRuns(dom []int) []int {
	var ends []int
	for i, d := range dom {
		switch {
		case d < 0:
			return nil
		case i > 0 && d != dom[i-1]:
			ends = append(ends, i)
		}
	}
	if len(ends) == 0 || 2*(len(ends)+1) > len(dom) {
		return nil
	}
	return append(ends, len(dom))
}

// splitRun splits ranks into the fewest near-equal parts of at most t ranks (t >= 1):
// part i of k holds ranks[i*n/k : (i+1)*n/k], at least half of t when n > t.
func splitRun(ranks []int, t int) [][]int {
	n := len(ranks)
	k := (n + t - 1) / t
	parts := make([][]int, k)
	for i := range k {
		parts[i] = slices.Clone(ranks[i*n/k : (i+1)*n/k])
	}
	return parts
}

// barrierTeams is Barrier of a one-host job in teams.
func barrierTeams(c *call, l *localState) error {
	if err := l.team.prepare(c, 0); err != nil {
		return err
	}
	v := l.team.seq + 1
	l.team.setMeta(c, v, 0) // a call's first step: the call number is checked
	if err := l.team.step(c, v, 0); err != nil {
		return err
	}
	if h := l.heads; h != nil {
		if err := h.prepare(c, 0); err != nil {
			return err
		}
		v := h.seq + 1
		h.setMeta(c, v, 0)
		if err := h.step(c, v, 0); err != nil {
			return err
		}
	}
	// Until the heads' step is over, each team's head keeps the team here.
	return l.team.step(c, l.team.seq+1, -1)
}

// allreduceTeams is the shared-memory Allreduce of a one-host job in teams: the heads
// allreduce among themselves, then each broadcasts to its team.
func allreduceTeams[T runtime.Elem](c *call, l *localState, src, recv []T, op Op[T]) error {
	if err := reduceTeams(c, l, src, recv, op, -1); err != nil {
		return err
	}
	if h := l.heads; h != nil {
		if err := h.releaseBig(c); err != nil {
			return err
		}
	}
	if err := shmBcast(c, l.team, recv, 0); err != nil {
		return err
	}
	return l.team.releaseBig(c)
}

// reduceTeams reduces the vectors of this host's ranks, in teams: each team to its head,
// then the heads to headsRoot (the first team's head, 0) or among themselves (-1). The big
// buffers stay held until the caller releases them (allreduceTeams, bcastTeams).
func reduceTeams[T runtime.Elem](c *call, l *localState, src, recv []T, op Op[T], headsRoot int) error {
	bytes := len(recv) * elemSize[T]()
	if err := l.team.prepare(c, bytes); err != nil {
		return err
	}
	if err := allreduceSHM(c, l.team, src, recv, op, 0); err != nil {
		return err
	}
	if h := l.heads; h != nil {
		if err := h.prepare(c, bytes); err != nil {
			return err
		}
		return allreduceSHM(c, h, recv, recv, op, headsRoot)
	}
	return nil
}

// bcastTeams gives every rank of this host the host's first rank's recv: to the heads,
// then each head to its team; it releases the big buffers reduceTeams held.
func bcastTeams[T runtime.Elem](c *call, l *localState, recv []T) error {
	if h := l.heads; h != nil {
		if err := shmBcast(c, h, recv, 0); err != nil {
			return err
		}
		if err := h.releaseBig(c); err != nil {
			return err
		}
	}
	if err := shmBcast(c, l.team, recv, 0); err != nil {
		return err
	}
	return l.team.releaseBig(c)
}
