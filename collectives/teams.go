package collectives

import (
	"slices"

	"github.com/gorma-hpc/gorma/collectives/internal/hostgroup"
	"github.com/gorma-hpc/gorma/runtime"
)

// Teams. A hostgroup.Group's members map each other's scratch and every step waits for every
// member, so one group over every rank of a large host would connect and map every pair of
// ranks. A host of more than hostgroup.FlatMax() ranks therefore splits its ranks into teams of
// consecutive ranks, at most hostgroup.TeamMax() each (as equal as the count allows, at least
// half that). Each team is a hostgroup.Group, and the teams' first ranks, the heads, form one
// more. A rank then maps and connects to the members of its team, and a head also to the
// other heads: O(T + N/T) peers instead of N-1.
//
// Teams also follow the host's last-level cache domains (hostgroup/cachedom.go), so that
// a team's flag lines stay in one cache and only the heads' cross domains. Teams stay
// runs of consecutive ranks, so each run of consecutive ranks in one domain is a team
// (split further when it holds more than hostgroup.TeamMax() ranks), at any count of
// ranks. That holds when every rank of the host is bound to a processor and the ranks
// make two runs or more, of two ranks or more on average (domainRuns). Otherwise the
// split by count above stands: the default binding leaves ranks unbound unless the host
// is oversubscribed. planTeams decides, from the ranks' cards and the host's sysfs, so
// every rank of the host decides alike.
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
// the host while it holds at most hostgroup.FlatMax() ranks, teams or not; a larger host moves
// them point to point (worldGroup, bcast_shm.go).

// teamed reports whether the shared-memory collectives of this rank's host run in
// teams, and sets the groups up the first time it says yes. planTeams decides, from the
// host's ranks and their cache domains, alike at every rank of the host.
func (l *localState) teamed() bool {
	if l.team != nil || l.flat {
		return l.team != nil
	}
	var dom []int
	if len(l.host) > 1 {
		dom = hostgroup.RankDomains(l.comm, l.host)
	}
	teams := hostgroup.PlanTeams(l.host, dom, hostgroup.FlatMax(), hostgroup.TeamMax())
	if teams == nil {
		l.flat = true
		return false
	}
	me := l.host[l.hostIdx]
	heads := make([]int, len(teams))
	for i, t := range teams {
		heads[i] = t[0]
	}
	for i, t := range teams {
		if j := slices.Index(t, me); j >= 0 {
			l.team = hostgroup.New(t, j)
			if j == 0 {
				l.heads = hostgroup.New(heads, i)
			}
		}
	}
	return true
}

// barrierTeams is Barrier of a one-host job in teams.
func barrierTeams(c *call, l *localState) error {
	if err := l.team.Prepare(c, 0); err != nil {
		return err
	}
	v := l.team.Next()
	l.team.SetMeta(v, 0) // a call's first step: the call number is checked
	if err := l.team.Step(c, v, 0); err != nil {
		return err
	}
	if h := l.heads; h != nil {
		if err := h.Prepare(c, 0); err != nil {
			return err
		}
		v := h.Next()
		h.SetMeta(v, 0)
		if err := h.Step(c, v, 0); err != nil {
			return err
		}
	}
	// Until the heads' step is over, each team's head keeps the team here.
	return l.team.Step(c, l.team.Next(), -1)
}

// allreduceTeams is the shared-memory Allreduce of a one-host job in teams: the heads
// allreduce among themselves, then each broadcasts to its team.
func allreduceTeams[T runtime.Elem](c *call, l *localState, src, recv []T, op Op[T]) error {
	if err := reduceTeams(c, l, src, recv, op, -1); err != nil {
		return err
	}
	if h := l.heads; h != nil {
		if err := h.ReleaseBig(c); err != nil {
			return err
		}
	}
	if err := shmBcast(c, l.team, recv, 0); err != nil {
		return err
	}
	return l.team.ReleaseBig(c)
}

// reduceTeams reduces the vectors of this host's ranks, in teams: each team to its head,
// then the heads to headsRoot (the first team's head, 0) or among themselves (-1). The big
// buffers stay held until the caller releases them (allreduceTeams, bcastTeams).
func reduceTeams[T runtime.Elem](c *call, l *localState, src, recv []T, op Op[T], headsRoot int) error {
	bytes := len(recv) * elemSize[T]()
	if err := l.team.Prepare(c, bytes); err != nil {
		return err
	}
	if err := allreduceSHM(c, l.team, src, recv, op, 0); err != nil {
		return err
	}
	if h := l.heads; h != nil {
		if err := h.Prepare(c, bytes); err != nil {
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
		if err := h.ReleaseBig(c); err != nil {
			return err
		}
	}
	if err := shmBcast(c, l.team, recv, 0); err != nil {
		return err
	}
	return l.team.ReleaseBig(c)
}
