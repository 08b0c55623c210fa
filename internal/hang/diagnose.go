package hang

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Output bounds of Diagnose.
const (
	maxSteps      = 8  // steps of a deadlock line before the middle is elided
	maxMismatches = 8  // mismatch lines before the rest are counted in one line
	maxRankItems  = 8  // ranks or runs of a rank list before the rest are counted
	maxStarts     = 16 // ranks a shortest-cycle search starts from once it has found one
)

// Diagnose returns the cause lines of a hang, possibly none: first one "mismatch: ..." line
// per group of ranks whose collective calls on one communicator disagree with the largest
// group's (the calls they are blocked in, then those of the numbers that a rank's Done
// records hold), then at most one "deadlock: ..." line. A wait for a rank that can never answer
// (the shortest chain, one step) if there is one, else the shortest cycle of waits. A rank
// without a report counts as Silent. design.md states the model.
func Diagnose(reps []Report) []string {
	j := newJob(reps)
	lines := j.mismatches(false)
	if l := j.deadlock(); l != "" {
		lines = append(lines, l)
	}
	return lines
}

// job is the reports of one job, by rank.
type job struct {
	reps  map[int]*Report
	world []int // ranks with a report, ascending
}

func newJob(reps []Report) *job {
	j := &job{reps: make(map[int]*Report, len(reps))}
	for i := range reps {
		if _, dup := j.reps[reps[i].Rank]; !dup {
			j.reps[reps[i].Rank] = &reps[i]
			j.world = append(j.world, reps[i].Rank)
		}
	}
	slices.Sort(j.world)
	return j
}

// members returns the world ranks of rec's communicator.
func (j *job) members(rec Record) []int {
	if rec.Members != nil {
		return rec.Members
	}
	return j.world
}

// blocked returns the records of rank r if it is blocked in at least one call, else nil.
func (j *job) blocked(r int) []Record {
	if rep := j.reps[r]; rep != nil && rep.State == Blocked {
		return rep.Records
	}
	return nil
}

// terminal reports whether rec waits for nobody the model can name: neither a collective
// nor a call with a peer (Finalize, Init, a Wait on an unnamed request).
func terminal(rec Record) bool { return !rec.collective() && rec.Peer == NoRank }

// sink reports whether rank r can never answer anyone: Finalized, Exited, Stopped (until
// someone continues it), or blocked in a terminal call. It returns the clause that says so.
func (j *job) sink(r int) (string, bool) {
	rep := j.reps[r]
	if rep == nil {
		return "", false
	}
	switch rep.State {
	case Finalized:
		return "rank " + strconv.Itoa(r) + " has finalized", true
	case Exited:
		return "rank " + strconv.Itoa(r) + " has exited", true
	case Stopped:
		return "rank " + strconv.Itoa(r) + " is stopped", true
	case Blocked:
		for _, rec := range rep.Records {
			if terminal(rec) {
				return "rank " + strconv.Itoa(r) + " waits in " + rec.short(), true
			}
		}
	}
	return "", false
}

// unknown reports whether rank r may still act: Running, Silent, Foreign (its calls are
// not seen), blocked in no recorded call, or without a report.
func (j *job) unknown(r int) bool {
	rep := j.reps[r]
	return rep == nil || rep.State == Running || rep.State == Silent || rep.State == Foreign ||
		rep.State == Blocked && len(rep.Records) == 0
}

// complements reports whether the point-to-point calls a (of rank x) and b (of rank y)
// can match each other: same communicator, each names the other (or any source), one
// sends what the other receives, and the tags agree.
func complements(x int, a Record, y int, b Record) bool {
	if a.collective() || b.collective() || terminal(a) || terminal(b) || a.Comm != b.Comm {
		return false
	}
	if (a.Peer != y && a.Peer != AnyRank) || (b.Peer != x && b.Peer != AnyRank) {
		return false
	}
	da, db := directionOf(a.Call), directionOf(b.Call)
	if da&sends == 0 || db&receives == 0 {
		if da&receives == 0 || db&sends == 0 {
			return false
		}
	}
	return a.Tag == -1 || b.Tag == -1 || a.Tag == b.Tag
}

// matched reports whether rank y has a call that complements rank x's call a.
func (j *job) matched(x int, a Record, y int) bool {
	for _, b := range j.blocked(y) {
		if complements(x, a, y, b) {
			return true
		}
	}
	return false
}

// sameCall reports whether rank y is in collective c too.
func (j *job) sameCall(y int, c Record) bool {
	for _, b := range j.blocked(y) {
		if b.Comm == c.Comm && b.Seq == c.Seq && b.Call == c.Call {
			return true
		}
	}
	return false
}

// waits returns the ranks rank r's call rec waits for, ascending; none if rec can
// complete with what the others are in (a matching call, every member in the collective)
// or if rec is terminal.
func (j *job) waits(r int, rec Record) []int {
	var w []int
	switch {
	case terminal(rec):
		return nil
	case rec.collective():
		for _, m := range j.members(rec) {
			if m != r && !j.sameCall(m, rec) {
				w = append(w, m)
			}
		}
	case rec.Peer == AnyRank: // every other member that could send; all of them if none could
		var sinks []int
		for _, m := range j.members(rec) {
			if m == r {
				continue
			}
			if j.matched(r, rec, m) {
				return nil
			}
			if _, ok := j.sink(m); ok {
				sinks = append(sinks, m)
			} else {
				w = append(w, m)
			}
		}
		if len(w) == 0 {
			w = sinks
		}
	default:
		if j.matched(r, rec, rec.Peer) {
			return nil
		}
		w = append(w, rec.Peer)
	}
	slices.Sort(w)
	return slices.Compact(w)
}

// edge is one wait: to a rank, in a call.
type edge struct {
	to  int
	rec Record
}

// deadlock returns the deadlock line, or "" when the reports do not show one.
func (j *job) deadlock() string {
	edges := map[int][]edge{}
	var stuck []int
	for _, r := range j.world {
		if j.unknown(r) {
			return ""
		}
		if _, ok := j.sink(r); ok {
			continue
		}
		for _, rec := range j.blocked(r) { // neither unknown nor a sink: blocked with records
			w := j.waits(r, rec)
			if len(w) == 0 {
				return "" // this call can complete: the rank may be slow, not stuck
			}
			for _, p := range w {
				if j.unknown(p) {
					return ""
				}
				edges[r] = append(edges[r], edge{p, rec})
			}
		}
		stuck = append(stuck, r)
	}
	for _, r := range stuck { // the shortest chain: a wait for a rank that can never answer
		for _, e := range edges[r] {
			if _, ok := j.sink(e.to); ok {
				return j.deadlockLine(r, []edge{e})
			}
		}
	}
	var best []edge
	bestStart := -1
	for i, s := range stuck {
		if best != nil && (len(best) <= 2 || i >= maxStarts) {
			break
		}
		if p := shortestCycle(s, edges); p != nil && (best == nil || len(p) < len(best)) {
			best, bestStart = p, s
		}
	}
	if best == nil {
		return ""
	}
	return j.deadlockLine(bestStart, best)
}

// shortestCycle returns the edges of the shortest cycle of waits through start, found
// breadth-first following each rank's edges in order, or nil.
func shortestCycle(start int, edges map[int][]edge) []edge {
	parent := map[int]edge{} // the edge BFS reached each rank by
	from := map[int]int{}    // the rank that edge leaves
	seen := map[int]bool{start: true}
	queue := []int{start}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, e := range edges[u] {
			if e.to == start {
				p := []edge{e}
				for r := u; r != start; r = from[r] {
					p = append(p, parent[r])
				}
				slices.Reverse(p)
				return p
			}
			if !seen[e.to] {
				seen[e.to], parent[e.to], from[e.to] = true, e, u
				queue = append(queue, e.to)
			}
		}
	}
	return nil
}

// deadlockLine spells the path p from start: each wait, then the sink's clause if the
// path ends at one; a long path keeps its first steps and its last.
func (j *job) deadlockLine(start int, p []edge) string {
	var steps []string
	at := start
	for _, e := range p {
		steps = append(steps, "rank "+strconv.Itoa(at)+" waits for rank "+strconv.Itoa(e.to)+" in "+e.rec.short())
		at = e.to
	}
	if s, ok := j.sink(at); ok && at != start {
		steps = append(steps, s)
	}
	if len(steps) > maxSteps {
		keep := maxSteps - 2
		elided := len(steps) - keep - 1
		steps = append(steps[:keep:keep], "... ("+strconv.Itoa(elided)+" more)", steps[len(steps)-1])
	}
	return "deadlock: " + strings.Join(steps, "; ")
}

// group is the ranks of one communicator that are in one collective call or returned
// from it.
type group struct {
	rec   Record // the first member's call
	ranks []int  // ascending
	done  int    // how many of ranks returned from the call (a Done record)
}

// Mismatched returns the first of Diagnose's mismatch lines whose groups are at the same
// call number, or "". Ranks blocked at one number in calls that disagree can never
// complete them, whatever else runs; nor can ranks blocked in a call that another rank
// returned from as another call. Groups at different numbers may be a deadlock in which
// some ranks returned early from a rooted call: Diagnose names those too, and Mismatched
// leaves them out.
func Mismatched(reps []Report) string {
	if lines := newJob(reps).mismatches(true); len(lines) > 0 {
		return lines[0]
	}
	return ""
}

// mismatches returns the mismatch lines: those of the blocked ranks' calls, communicator
// by communicator (with sameSeq, only those between groups at the same call number),
// then those of the calls ranks returned from (doneMismatches).
func (j *job) mismatches(sameSeq bool) []string {
	type comm struct {
		key    string
		name   string
		groups []*group
	}
	var comms []*comm
	byKey := map[string]*comm{}
	for _, r := range j.world {
		for _, rec := range j.blocked(r) {
			if !rec.collective() {
				continue
			}
			key := commKey(rec)
			c := byKey[key]
			if c == nil {
				c = &comm{key: key, name: rec.Comm}
				byKey[key] = c
				comms = append(comms, c)
			}
			if i := slices.IndexFunc(c.groups, func(g *group) bool { return slices.Contains(g.ranks, r) }); i >= 0 {
				continue // one call per rank and communicator
			}
			c.groups = addCall(c.groups, r, rec, false)
		}
	}
	slices.SortStableFunc(comms, func(a, b *comm) int { return cmp.Compare(a.key, b.key) })
	var lines []string
	for _, c := range comms {
		ref := reference(c.groups)
		for _, g := range c.groups {
			if g == ref || !conflict(g.rec, ref.rec) || sameSeq && g.rec.Seq != ref.rec.Seq {
				continue
			}
			lines = append(lines, mismatchLine(g, ref, c.name))
		}
	}
	lines = append(lines, j.doneMismatches()...)
	if len(lines) > maxMismatches {
		more := len(lines) - maxMismatches
		lines = append(lines[:maxMismatches:maxMismatches], "mismatch: "+strconv.Itoa(more)+" more left out")
	}
	return lines
}

// doneMismatches returns the mismatch lines of the call numbers that some rank returned
// from (its Done records): for each communicator and such a number, the ranks' calls of
// that number, blocked or returned from, grouped and compared with the largest group as
// mismatches does. A conflict between two groups of blocked ranks only is left to
// mismatches' first lines.
func (j *job) doneMismatches() []string {
	type at struct {
		key  string
		seq  uint64
		name string
	}
	calls := map[at][]*group{}
	seen := map[at][]int{} // the ranks with a call of that number
	var nums []at
	add := func(r int, rec Record, done bool) {
		if !rec.collective() {
			return
		}
		k := at{commKey(rec), rec.Seq, rec.Comm}
		if slices.Contains(seen[k], r) {
			return
		}
		if _, ok := calls[k]; !ok && done {
			nums = append(nums, k)
		}
		seen[k] = append(seen[k], r)
		calls[k] = addCall(calls[k], r, rec, done)
	}
	for _, r := range j.world {
		for _, rec := range j.reps[r].Done {
			add(r, rec, true)
		}
	}
	for _, r := range j.world {
		for _, rec := range j.blocked(r) {
			add(r, rec, false)
		}
	}
	slices.SortFunc(nums, func(a, b at) int { return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.seq, b.seq)) })
	var lines []string
	for _, k := range nums {
		groups := calls[k]
		ref := reference(groups)
		for _, g := range groups {
			if g != ref && (g.done > 0 || ref.done > 0) && conflict(g.rec, ref.rec) {
				lines = append(lines, mismatchLine(g, ref, k.name))
			}
		}
	}
	return lines
}

// addCall adds rank r's call rec (done: r returned from it) to the group of its exact
// signature, or to a new group, and returns the groups.
func addCall(groups []*group, r int, rec Record, done bool) []*group {
	i := slices.IndexFunc(groups, func(g *group) bool { return sameSignature(g.rec, rec) })
	if i < 0 {
		groups = append(groups, &group{rec: rec})
		i = len(groups) - 1
	}
	g := groups[i]
	g.ranks = append(g.ranks, r)
	slices.Sort(g.ranks)
	if done {
		g.done++
	}
	return groups
}

// reference returns the largest group (ties: the one holding the lowest rank), or nil for
// none.
func reference(groups []*group) *group {
	var ref *group
	for _, g := range groups {
		if ref == nil || len(g.ranks) > len(ref.ranks) || len(g.ranks) == len(ref.ranks) && g.ranks[0] < ref.ranks[0] {
			ref = g
		}
	}
	return ref
}

// commKey identifies rec's communicator: its name and members.
func commKey(rec Record) string { return rec.Comm + "|" + membersKey(rec.Members) }

func membersKey(m []int) string {
	if m == nil {
		return "world"
	}
	return string(appendMembers(nil, m))
}

// sameSignature reports whether a and b are the same collective call exactly.
func sameSignature(a, b Record) bool {
	return a.Seq == b.Seq && a.Call == b.Call && a.Count == b.Count && a.Type == b.Type &&
		a.Op == b.Op && a.Root == b.Root && a.Win == b.Win
}

// conflict reports whether collective calls a and b on one communicator cannot both be
// right: a different number or call, or a count, type, operator, root or window that
// differ where both are known. The vector variants (names ending in "v" or "w") may differ
// in count.
func conflict(a, b Record) bool {
	if a.Seq != b.Seq || a.Call != b.Call {
		return true
	}
	vector := strings.HasSuffix(a.Call, "v") || strings.HasSuffix(a.Call, "w")
	return !vector && a.Count >= 0 && b.Count >= 0 && a.Count != b.Count ||
		a.Type != "" && b.Type != "" && a.Type != b.Type ||
		a.Op != "" && b.Op != "" && a.Op != b.Op ||
		a.Root >= 0 && b.Root >= 0 && a.Root != b.Root ||
		a.Win != "" && b.Win != "" && a.Win != b.Win
}

// mismatchLine names the two groups, the one with the lower rank first:
// "mismatch: rank 0 is in window.Allocate #2, rank 1 in Allreduce #2 on World",
// "mismatch: rank 0 returned from Bcast #1, rank 1 in Allreduce #1 on World".
func mismatchLine(a, b *group, comm string) string {
	if b.ranks[0] < a.ranks[0] {
		a, b = b, a
	}
	da, db := a.rec.name()+" #"+strconv.FormatUint(a.rec.Seq, 10), b.rec.name()+" #"+strconv.FormatUint(b.rec.Seq, 10)
	if da == db { // the difference is in the details
		da += " (" + strings.Join(a.rec.details(false), ", ") + ")"
		db += " (" + strings.Join(b.rec.details(false), ", ") + ")"
	}
	return "mismatch: " + rankList(a.ranks) + a.verb(true) + da + ", " + rankList(b.ranks) + b.verb(false) + db + " on " + comm
}

// verb says where g's ranks are, after their list: " is in ", " are in ", " returned
// from ", " are in or returned from "; in a line's second group (first false) without
// "is" or "are".
func (g *group) verb(first bool) string {
	switch {
	case g.done == len(g.ranks):
		return " returned from "
	case g.done > 0 && first:
		return " are in or returned from "
	case g.done > 0:
		return " in or returned from "
	case !first:
		return " in "
	case len(g.ranks) > 1:
		return " are in "
	}
	return " is in "
}

// rankList spells ascending ranks: "rank 3", "ranks 0-4,6-63", "ranks 0,2,4,... and 40 more".
func rankList(ranks []int) string {
	if len(ranks) == 1 {
		return "rank " + strconv.Itoa(ranks[0])
	}
	var items []string
	left := 0
	for i := 0; i < len(ranks); {
		k := i
		for k+1 < len(ranks) && ranks[k+1] == ranks[k]+1 {
			k++
		}
		if len(items) == maxRankItems {
			left += k - i + 1
		} else if k > i {
			items = append(items, strconv.Itoa(ranks[i])+"-"+strconv.Itoa(ranks[k]))
		} else {
			items = append(items, strconv.Itoa(ranks[i]))
		}
		i = k + 1
	}
	s := "ranks " + strings.Join(items, ",")
	if left > 0 {
		s += " and " + strconv.Itoa(left) + " more"
	}
	return s
}
