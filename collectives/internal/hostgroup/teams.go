package hostgroup

import "slices"

// PlanTeams returns the teams of a host's ranks (ranks, ascending), or nil when they are
// one group. dom[i] is the cache domain of ranks[i], -1 when unknown. Every team is a run
// of consecutive ranks, and the teams come in rank order.
//   - By domain, when domainRuns says the domains decide: a team per run of ranks in
//     one domain, a run of more than teamMax ranks split into near-equal parts
//     (splitRun).
//   - Otherwise by size: one group up to flatMax ranks, else near-equal parts of at most
//     teamMax.
func PlanTeams(ranks, dom []int, flatMax, teamMax int) [][]int {
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
