package launcher

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Roster is the rank table of a job: which host runs which rank. It is computed, never
// negotiated ([Place]): by default ranks fill the hosts in host order, each host up to
// its slots ("by slot"), so rank r runs on the first host whose cumulative slots exceed
// r. Hosts that get no rank are not part of the job.
type Roster struct {
	Size      int      // ranks in the job
	Hosts     []string // hosts with at least one rank, in job order (index = node rank)
	RankHost  []int    // rank -> index into Hosts
	LocalRank []int    // rank -> its rank among its host's ranks
	LocalSize []int    // host index -> ranks on that host
}

// PlanRanks places n ranks on hosts in order, each host up to its slots (Place with the
// default placement). It fails when the hosts offer fewer than n slots (golaunch never
// oversubscribes silently).
func PlanRanks(hosts []HostSlots, n int) (Roster, error) {
	return Place(hosts, n, Placement{})
}

// The --map-by policies.
const (
	MapCore   = "core"   // fill each host up to its slots, in host order (the default)
	MapSocket = "socket" // the rank table of MapCore: --bind-to decides the processors within a host
	MapNode   = "node"   // one rank per host in turn, skipping hosts whose slots are full
)

// Placement is how Place fills the hosts with ranks (--map-by, --npernode,
// --oversubscribe and the hostfile's max_slots).
type Placement struct {
	MapBy   string // MapCore, MapSocket or MapNode; "" is MapCore
	PerNode int    // at most this many ranks per host (--npernode); 0: the host's slots
	// Oversubscribe lets ranks beyond the slots onto the hosts: with PerNode, every host
	// takes PerNode ranks whatever its slots; without, the extra ranks go one per host in
	// turn, each host up to its MaxSlots.
	Oversubscribe bool
	MaxSlots      map[string]int // a host's max_slots (hostfile); absent or 0: no bound
}

// capacity is what host h takes before any oversubscription: its slots, bounded by
// PerNode (or exactly PerNode with Oversubscribe).
func (p Placement) capacity(h HostSlots) int {
	switch {
	case p.PerNode > 0 && p.Oversubscribe:
		return p.PerNode
	case p.PerNode > 0:
		return min(h.Slots, p.PerNode)
	}
	return h.Slots
}

// DefaultRanks is the number of ranks a job on hosts gets without -n: the hosts'
// capacities under p.
func (p Placement) DefaultRanks(hosts []HostSlots) int {
	n := 0
	for _, h := range hosts {
		n += p.capacity(h)
	}
	return n
}

// Place places n ranks on hosts as p says. MapCore (and MapSocket) give each host in
// order its capacity before the next; MapNode deals one rank to each host in turn. With
// p.Oversubscribe and no PerNode, the ranks beyond every host's capacity are dealt one
// per host in turn, each host up to its max_slots. Hosts that get no rank are not part
// of the job.
func Place(hosts []HostSlots, n int, p Placement) (Roster, error) {
	if n < 1 {
		return Roster{}, fmt.Errorf("need at least 1 rank, got %d", n)
	}
	caps := make([]int, len(hosts))
	total := 0
	for i, h := range hosts {
		if h.Slots < 0 {
			return Roster{}, fmt.Errorf("host %q has %d slots", h.Name, h.Slots)
		}
		caps[i] = p.capacity(h)
		total += caps[i]
	}
	extra := p.Oversubscribe && p.PerNode == 0 && len(hosts) > 0
	if total < n && !extra {
		hint := "add hosts or slots, or pass --oversubscribe"
		if p.PerNode > 0 {
			hint = "add hosts or raise --npernode"
		}
		return Roster{}, fmt.Errorf("-n %d needs %d slots but the hosts offer %d (%s)%s; %s",
			n, n, total, describeHosts(hosts), p.perNodeNote(), hint)
	}
	count := make([]int, len(hosts))
	seq := make([]int, 0, n) // rank -> index into hosts
	if p.MapBy == MapNode {
		seq = dealRanks(seq, count, n, func(i int) bool { return count[i] < caps[i] })
	} else {
		for i := range hosts {
			for ; count[i] < caps[i] && len(seq) < n; count[i]++ {
				seq = append(seq, i)
			}
		}
	}
	if len(seq) < n {
		seq = dealRanks(seq, count, n, func(i int) bool {
			m := p.MaxSlots[hosts[i].Name]
			return m <= 0 || count[i] < m
		})
	}
	if len(seq) < n {
		return Roster{}, fmt.Errorf("-n %d needs more ranks than the hosts' max_slots allow with --oversubscribe (%d in all)", n, len(seq))
	}
	return rosterOf(hosts, seq), nil
}

// dealRanks appends to seq one rank per host in turn, on the hosts that have room, until
// it holds n ranks or no host has room; count[i] counts host i's ranks.
func dealRanks(seq, count []int, n int, room func(i int) bool) []int {
	for len(seq) < n {
		placed := false
		for i := range count {
			if len(seq) < n && room(i) {
				seq = append(seq, i)
				count[i]++
				placed = true
			}
		}
		if !placed {
			break
		}
	}
	return seq
}

// rosterOf builds the roster of the ranks placed as seq (rank -> index into hosts).
func rosterOf(hosts []HostSlots, seq []int) Roster {
	r := Roster{Size: len(seq), RankHost: make([]int, len(seq)), LocalRank: make([]int, len(seq))}
	idx := make([]int, len(hosts)) // index into hosts -> index into r.Hosts, or -1
	used := make([]bool, len(hosts))
	for _, i := range seq {
		used[i] = true
	}
	for i, h := range hosts {
		idx[i] = -1
		if used[i] {
			idx[i] = len(r.Hosts)
			r.Hosts = append(r.Hosts, h.Name)
			r.LocalSize = append(r.LocalSize, 0)
		}
	}
	for rank, i := range seq {
		h := idx[i]
		r.RankHost[rank] = h
		r.LocalRank[rank] = r.LocalSize[h]
		r.LocalSize[h]++
	}
	return r
}

func (p Placement) perNodeNote() string {
	if p.PerNode > 0 {
		return fmt.Sprintf(", at most %d per host with --npernode %d", p.PerNode, p.PerNode)
	}
	return ""
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

// maxWireRanks bounds the ranks of a roster decoded from the control wire, so that a
// frame cannot make an agent allocate without bound.
const maxWireRanks = 1 << 22

// rosterWire is a Roster on the control wire: the rank table as runs of consecutive ranks
// on one host, as pairs (host index, ranks). The local ranks and sizes follow from it. A
// block placement takes one run per host, so the roster costs O(hosts), not O(ranks).
type rosterWire struct {
	Size  int
	Hosts []string
	Runs  []int
}

// MarshalJSON encodes r as a rosterWire.
func (r Roster) MarshalJSON() ([]byte, error) {
	return json.Marshal(rosterWire{Size: r.Size, Hosts: r.Hosts, Runs: r.runs()})
}

// runs returns r's ranks in order as runs of ranks on one host: host, count, ...
func (r Roster) runs() []int {
	runs := []int{}
	for rank, h := range r.RankHost {
		if n := len(runs); rank > 0 && runs[n-2] == h {
			runs[n-1]++
			continue
		}
		runs = append(runs, h, 1)
	}
	return runs
}

// UnmarshalJSON decodes a rosterWire and rebuilds the tables; Check still applies.
func (r *Roster) UnmarshalJSON(b []byte) error {
	var w rosterWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	out, err := rosterFromRuns(w.Size, w.Hosts, w.Runs)
	if err != nil {
		return err
	}
	*r = out
	return nil
}

// rosterFromRuns rebuilds the roster of size ranks on hosts from its runs (runs).
func rosterFromRuns(size int, hosts []string, runs []int) (Roster, error) {
	if size < 0 || size > maxWireRanks || len(runs)%2 != 0 || len(hosts) > maxWireRanks {
		return Roster{}, fmt.Errorf("roster: %d ranks in %d run numbers (at most %d ranks, in pairs)", size, len(runs), maxWireRanks)
	}
	out := Roster{Size: size, Hosts: hosts, RankHost: make([]int, 0, size), LocalRank: make([]int, 0, size),
		LocalSize: make([]int, len(hosts))}
	for i := 0; i < len(runs); i += 2 {
		h, n := runs[i], runs[i+1]
		if h < 0 || h >= len(hosts) || n < 1 || n > size-len(out.RankHost) {
			return Roster{}, fmt.Errorf("roster: run of %d ranks on host index %d of %d, after %d of %d ranks", n, h, len(hosts), len(out.RankHost), size)
		}
		for range n {
			out.RankHost = append(out.RankHost, h)
			out.LocalRank = append(out.LocalRank, out.LocalSize[h])
			out.LocalSize[h]++
		}
	}
	if len(out.RankHost) != size {
		return Roster{}, fmt.Errorf("roster: runs of %d ranks for %d", len(out.RankHost), size)
	}
	return out, nil
}
