package launcher

import (
	"context"
	"fmt"
	"slices"

	"github.com/gorma-hpc/gorma/pmi"
)

// agentGrowth is an agent's part of its job's spawns (grow.go): the roster as it grew,
// the spawned groups, their fences, and the ranks waiting for an answer to their spawn
// request. Guarded by the job's mu.
type agentGrowth struct {
	roster  Roster   // spec.Roster, grown by every spawn since
	mapping string   // PMI_process_mapping of roster
	nodes   []string // the names of mapping's nodes, by node index (nodeHosts)
	addrs   []string // the control address of each of roster's hosts (spec.Addrs, grown)
	groups  []pmi.SpawnGroup
	fenced  map[int]bool                // spawned ranks here that fenced with their group
	waits   map[int]*groupWait          // by a group's first rank: its fence, done or not
	asks    map[int]chan *spawnReplyMsg // by asking rank: where the answer goes
	stop    chan struct{}               // closed when the job aborts
}

// groupWait is a spawned group's fence as its ranks on this agent wait for it: done is
// closed once the submitter has the whole group's puts (err nil) or failed the group.
type groupWait struct {
	done chan struct{}
	err  error
}

// initGrowth readies j's growth from its spec: the roster, the groups spawned before this
// agent joined the job, and their published values.
func (j *agentJob) initGrowth() {
	g := &j.grow
	g.roster = j.spec.Roster
	g.mapping, g.nodes = pmi.FormatProcessMapping(g.roster.RankHost), nodeHosts(g.roster)
	g.addrs = j.spec.Addrs
	g.fenced, g.waits, g.asks = map[int]bool{}, map[int]*groupWait{}, map[int]chan *spawnReplyMsg{}
	g.stop = make(chan struct{})
	for _, sg := range j.spec.Spawns {
		j.addGroupLocked(sg)
	}
	if j.spec.Store != nil {
		j.x.Publish(j.spec.Store)
	}
}

// failedBefore takes the ranks that failed before this agent joined the job (--ft) as
// if the submitter had reported them here: its fences go without them, and its ranks
// hear of them at init.
func (j *agentJob) failedBefore() {
	for _, r := range j.spec.Failed {
		j.mu.Lock()
		j.failed[r] = true
		j.mu.Unlock()
		j.srv.Announce(pmi.Event{Kind: pmi.ProcFailed, Rank: r, Code: -1,
			Cause: fmt.Sprintf("rank %d failed before this agent joined the job", r)})
		j.x.Exclude(r)
	}
}

// addGroupLocked records a spawned group, with a fence to wait on if it has ranks here.
func (j *agentJob) addGroupLocked(sg pmi.SpawnGroup) {
	j.grow.groups = append(j.grow.groups, sg)
	j.grow.waits[sg.First] = &groupWait{done: make(chan struct{})}
}

// rosterNow returns the job's roster as it is now, and its process mapping.
func (j *agentJob) rosterNow() (Roster, string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.grow.roster, j.grow.mapping
}

// addrsNow returns the control address of each host of the job as it is now.
func (j *agentJob) addrsNow() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.grow.addrs
}

// localNow returns this host's ranks as the job is now.
func (j *agentJob) localNow() []int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.local)
}

// nodesNow returns the names of the process mapping's nodes as the job is now.
func (j *agentJob) nodesNow() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.grow.nodes
}

// nodeHosts names the nodes of roster's process mapping by node index: its hosts in order
// of their first rank, as pmi.ParseProcessMapping numbers the nodes.
func nodeHosts(roster Roster) []string {
	seen := make([]bool, len(roster.Hosts))
	var names []string
	for _, h := range roster.RankHost {
		if !seen[h] {
			seen[h] = true
			names = append(names, roster.Hosts[h])
		}
	}
	return names
}

// groupOf returns the spawned group of rank, if rank was spawned.
func (j *agentJob) groupOf(rank int) (pmi.SpawnGroup, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.groupOfLocked(rank)
}

func (j *agentJob) groupOfLocked(rank int) (pmi.SpawnGroup, bool) {
	for _, sg := range j.grow.groups {
		if rank >= sg.First && rank < sg.First+sg.Count {
			return sg, true
		}
	}
	return pmi.SpawnGroup{}, false
}

// grew takes the submitter's word that the job grew by group sg, to roster, and returns
// the new ranks placed on this agent.
func (j *agentJob) grew(sg pmi.SpawnGroup, roster Roster, addrs []string) ([]int, error) {
	if err := roster.Check(); err != nil {
		return nil, fmt.Errorf("spawn: %w", err)
	}
	if addrs != nil && len(addrs) != len(roster.Hosts) {
		return nil, fmt.Errorf("spawn: %d control addresses for %d hosts", len(addrs), len(roster.Hosts))
	}
	if roster.Size != sg.First+sg.Count || len(roster.Hosts) <= j.spec.Node || roster.Hosts[j.spec.Node] != j.host() {
		return nil, fmt.Errorf("spawn of ranks %d to %d with a roster of %d ranks that does not hold this host", sg.First, sg.First+sg.Count-1, roster.Size)
	}
	j.mu.Lock()
	j.grow.roster = roster
	j.grow.mapping, j.grow.nodes = pmi.FormatProcessMapping(roster.RankHost), nodeHosts(roster)
	j.grow.addrs = addrs
	j.addGroupLocked(sg)
	var here []int
	for r := sg.First; r < roster.Size; r++ {
		if roster.RankHost[r] == j.spec.Node {
			here = append(here, r)
		}
	}
	j.local = append(j.local, here...)
	j.mu.Unlock()
	j.x.Grow(roster.Size)
	return here, nil
}

// groupFence runs a spawned rank's first fence, its group's: its puts go to the submitter,
// and it returns once the whole group has fenced. handled is false for any other fence.
func (j *agentJob) groupFence(ctx context.Context, rank int, puts map[string][]byte) (handled bool, err error) {
	j.mu.Lock()
	sg, ok := j.groupOfLocked(rank)
	if !ok || j.grow.fenced[rank] {
		j.mu.Unlock()
		return false, nil
	}
	j.grow.fenced[rank] = true
	w := j.grow.waits[sg.First]
	stop := j.grow.stop
	j.mu.Unlock()
	if err := j.send(fSpawnSync, fenceMsg{Rank: rank, Puts: puts}); err != nil {
		return true, fmt.Errorf("%w: submitter unreachable: %v", pmi.ErrAborted, err)
	}
	select {
	case <-w.done:
		return true, w.err
	case <-stop:
		return true, j.abortedErr()
	case <-ctx.Done():
		return true, fmt.Errorf("pmi: fence of spawned ranks %d to %d: %w", sg.First, sg.First+sg.Count-1, ctx.Err())
	}
}

// groupDone takes the submitter's end of a spawned group's fence: its puts go to the
// store, and its ranks here return from their fence.
func (j *agentJob) groupDone(m *spawnDoneMsg) {
	if m.Err == "" {
		j.x.Publish(m.Puts)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	w := j.grow.waits[m.Group.First]
	if w == nil || isClosed(w.done) {
		return
	}
	if m.Err != "" {
		w.err = fmt.Errorf("%w: %s", pmi.ErrAborted, m.Err)
	}
	close(w.done)
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// spawn asks the submitter for n new ranks on behalf of rank, and waits for the answer.
func (j *agentJob) spawn(ctx context.Context, rank, n int) (int, error) {
	ch := make(chan *spawnReplyMsg, 1)
	j.mu.Lock()
	if j.aborting {
		j.mu.Unlock()
		return 0, j.abortedErr()
	}
	j.grow.asks[rank] = ch
	stop := j.grow.stop
	j.mu.Unlock()
	defer func() {
		j.mu.Lock()
		delete(j.grow.asks, rank)
		j.mu.Unlock()
	}()
	if err := j.send(fSpawnReq, spawnReqMsg{Rank: rank, N: n, Store: j.x.Snapshot(), Rounds: j.x.Rounds()}); err != nil {
		return 0, fmt.Errorf("%w: submitter unreachable: %v", pmi.ErrAborted, err)
	}
	select {
	case m := <-ch:
		if m.Err != "" {
			return 0, fmt.Errorf("%w: %s", pmi.ErrRefused, m.Err)
		}
		if m.N != n {
			return 0, fmt.Errorf("%w: the submitter started %d ranks, not %d", pmi.ErrProtocol, m.N, n)
		}
		return m.First, nil
	case <-stop:
		return 0, j.abortedErr()
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// answerSpawn hands the submitter's answer to the rank that asked.
func (j *agentJob) answerSpawn(m *spawnReplyMsg) {
	j.mu.Lock()
	ch := j.grow.asks[m.Rank]
	j.mu.Unlock()
	if ch != nil {
		select {
		case ch <- m:
		default:
		}
	}
}

// stopGrowth fails every spawn request and group fence waiting here (the job aborts).
func (j *agentJob) stopGrowth() {
	j.mu.Lock()
	defer j.mu.Unlock()
	select {
	case <-j.grow.stop:
	default:
		close(j.grow.stop)
	}
}

func (j *agentJob) abortedErr() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return fmt.Errorf("%w: %s", pmi.ErrAborted, j.abortCause)
}

// isLocal reports whether rank runs on this agent.
func (j *agentJob) isLocal(rank int) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Contains(j.local, rank)
}
