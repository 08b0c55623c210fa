package hang

import (
	"slices"
	"strconv"
	"strings"
)

// ForeignSummary states what the reports of a job with Foreign ranks show, as facts: who
// waits in a PMI fence, who ended and how, who still runs. For example "rank 1 (pid 4242)
// waits in a PMIx fence and rank 0 (pid 4241) still runs", or "rank 0 finalized (exit 0)
// and rank 1 (pid 4242) still runs". It names no cause: a Foreign rank's MPI calls are not
// seen, so a deadlock inside them looks like computing. A group of one rank names its
// process; a larger group is a rank list ("ranks 0-6").
func ForeignSummary(reps []Report) string {
	type group struct {
		what  string // "waits in a PMIx fence", "finalized (exit 0)", ...
		ranks []int
		pid   int // the first rank's process, named for a group of one that still runs
	}
	var groups []*group
	add := func(what string, rep Report) {
		for _, g := range groups {
			if g.what == what {
				g.ranks = append(g.ranks, rep.Rank)
				return
			}
		}
		g := &group{what: what, ranks: []int{rep.Rank}}
		if rep.State != Finalized && rep.State != Exited {
			g.pid = rep.Pid
		}
		groups = append(groups, g)
	}
	// Waits first, then ends, then the ranks that run: the order of the facts' weight.
	for pass := range 3 {
		for _, rep := range reps {
			if what, p := foreignFact(rep); p == pass {
				add(what, rep)
			}
		}
	}
	parts := make([]string, len(groups))
	for i, g := range groups {
		slices.Sort(g.ranks)
		who := rankList(g.ranks)
		if len(g.ranks) == 1 && g.pid > 0 {
			who += " (pid " + strconv.Itoa(g.pid) + ")"
		}
		parts[i] = who + " " + pluralVerb(g.what, len(g.ranks))
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// foreignFact returns what ForeignSummary says of rep, in the singular, and its pass: 0 for
// a wait, 1 for an end, 2 for a rank that runs.
func foreignFact(rep Report) (string, int) {
	switch rep.State {
	case Foreign:
		if rep.PMI.Wait != "" {
			return "waits in a " + rep.PMI.Wire + " " + pmiFenceName(rep.PMI.Wait), 0
		}
	case Finalized, Exited:
		if rep.End != "" {
			return rep.State.String() + " (" + rep.End + ")", 1
		}
		return rep.State.String(), 1
	case Stopped:
		return "is stopped", 2
	case Blocked:
		return "is blocked in gorma calls", 2
	}
	return "still runs", 2
}

// pmiFenceName names a fence request in prose: PMI-1's barrier_in is a barrier.
func pmiFenceName(req string) string {
	if req == "barrier_in" {
		return "barrier (barrier_in)"
	}
	return req
}

// pluralVerb puts the verb that starts a singular fact in the plural for n ranks: "waits"
// becomes "wait", "is" "are", "still runs" "still run"; participles stay.
func pluralVerb(what string, n int) string {
	if n == 1 {
		return what
	}
	for _, v := range [][2]string{{"waits ", "wait "}, {"is ", "are "}, {"still runs", "still run"}} {
		if rest, ok := strings.CutPrefix(what, v[0]); ok {
			return v[1] + rest
		}
	}
	return what
}
