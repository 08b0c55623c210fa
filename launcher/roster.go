package launcher

import (
	"fmt"
	"strings"
)

// Roster is the rank table of a job: which host runs which rank. It is computed, never
// negotiated: ranks fill the hosts in host order, each host up to its slots ("by slot"),
// so rank r runs on the first host whose cumulative slots exceed r. Hosts that get no
// rank are not part of the job.
type Roster struct {
	Size      int      // ranks in the job
	Hosts     []string // hosts with at least one rank, in job order (index = node rank)
	RankHost  []int    // rank -> index into Hosts
	LocalRank []int    // rank -> its rank among its host's ranks
	LocalSize []int    // host index -> ranks on that host
}

// PlanRanks places n ranks on hosts in order. It fails when the hosts offer fewer than n
// slots (golaunch never oversubscribes silently).
func PlanRanks(hosts []HostSlots, n int) (Roster, error) {
	if n < 1 {
		return Roster{}, fmt.Errorf("need at least 1 rank, got %d", n)
	}
	total := 0
	for _, h := range hosts {
		if h.Slots < 0 {
			return Roster{}, fmt.Errorf("host %q has %d slots", h.Name, h.Slots)
		}
		total += h.Slots
	}
	if total < n {
		return Roster{}, fmt.Errorf("-n %d needs %d slots but the hosts offer %d (%s)", n, n, total, describeHosts(hosts))
	}
	r := Roster{Size: n, RankHost: make([]int, n), LocalRank: make([]int, n)}
	rank := 0
	for _, h := range hosts {
		if rank == n {
			break
		}
		take := min(h.Slots, n-rank)
		if take == 0 {
			continue
		}
		idx := len(r.Hosts)
		r.Hosts = append(r.Hosts, h.Name)
		r.LocalSize = append(r.LocalSize, take)
		for l := range take {
			r.RankHost[rank] = idx
			r.LocalRank[rank] = l
			rank++
		}
	}
	return r, nil
}

// RanksOn returns the ranks of host index h, in order.
func (r Roster) RanksOn(h int) []int {
	var ranks []int
	for rank, hi := range r.RankHost {
		if hi == h {
			ranks = append(ranks, rank)
		}
	}
	return ranks
}

// Check verifies the roster's internal consistency (an agent checks a pushed roster).
func (r Roster) Check() error {
	if r.Size < 1 || len(r.RankHost) != r.Size || len(r.LocalRank) != r.Size {
		return fmt.Errorf("roster: %d ranks but tables of %d and %d", r.Size, len(r.RankHost), len(r.LocalRank))
	}
	if len(r.Hosts) == 0 || len(r.LocalSize) != len(r.Hosts) {
		return fmt.Errorf("roster: %d hosts but %d local sizes", len(r.Hosts), len(r.LocalSize))
	}
	next := make([]int, len(r.Hosts))
	for rank, h := range r.RankHost {
		if h < 0 || h >= len(r.Hosts) {
			return fmt.Errorf("roster: rank %d on host index %d of %d", rank, h, len(r.Hosts))
		}
		if r.LocalRank[rank] != next[h] {
			return fmt.Errorf("roster: rank %d has local rank %d, want %d", rank, r.LocalRank[rank], next[h])
		}
		next[h]++
	}
	for h, n := range next {
		if n != r.LocalSize[h] || n == 0 {
			return fmt.Errorf("roster: host %q has %d ranks but local size %d", r.Hosts[h], n, r.LocalSize[h])
		}
	}
	return nil
}

func describeHosts(hosts []HostSlots) string {
	if len(hosts) == 0 {
		return "no hosts"
	}
	var b strings.Builder
	for i, h := range hosts {
		if i > 0 {
			b.WriteString(", ")
		}
		if i == 8 {
			fmt.Fprintf(&b, "... %d more", len(hosts)-i)
			break
		}
		fmt.Fprintf(&b, "%s:%d", h.Name, h.Slots)
	}
	return b.String()
}
