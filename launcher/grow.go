package launcher

import (
	"fmt"
	"io"
	"log"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gorma-hpc/gorma/pmi"
)

// Growing a job: a rank's World.Spawn asks its agent (pmi gorma-spawn), which asks the
// submitter (fSpawnReq). The submitter serves one spawn at a time, in the order asked:
//
//  1. It places the new ranks (planSpawn): first on agents that joined the cluster after
//     the job began, then on any free slot of the others (a host's slots less its live
//     ranks of this job), and beyond the slots only with --oversubscribe. The new ranks
//     continue the job's numbering.
//  2. An agent new to the job is dialed and gets the job (fJob) with the grown roster,
//     the spawned groups and the job's published values (the asking agent's Exchange),
//     and answers ready. A new agent that fails fails the spawn, not the job.
//  3. Commit: the roster grows, every other agent of the job gets the grown roster and
//     the group (fSpawn) and starts the ranks placed on it; a new agent gets fStart.
//  4. Each new rank's first fence is its group's (fSpawnSync). Once the whole group
//     has fenced, every agent gets the group's puts (fSpawnDone, pmi.Exchange.Publish),
//     then the asking agent the answer (fSpawnAns). Frames on one connection keep their
//     order, so the asking rank reads the new ranks' cards from its own agent.
//
// A spawned rank that ends before its group's fence fails the spawn: the other ranks
// of its group get the error from their fence, the asking rank from its request.

type spawnReqMsg struct {
	Rank, N int // the asking rank and how many new ranks it asks for
	// Store is the job's published values at the asking agent, for agents new to the job.
	Store map[int]map[string][]byte `json:",omitempty"`
	// Rounds is the fences the asking agent completed: an agent alone in its job counts
	// them without the submitter, and agents new to the job start from the count.
	Rounds int `json:",omitempty"`
}

type spawnMsg struct {
	Group  pmi.SpawnGroup
	Roster Roster   // the grown roster
	Addrs  []string `json:",omitempty"` // the control address of each of its hosts
}

type spawnDoneMsg struct {
	Group pmi.SpawnGroup
	Puts  map[int]map[string][]byte
	Err   string // the group failed: why
}

type spawnReplyMsg struct {
	Rank, First, N int
	Err            string // the spawn failed: why, in words for the rank's user
}

// growth is the submitter's part of the job's spawns, owned by its event loop.
type growth struct {
	node    *Agent          // the submitter's member (a local run's agent): its member list shows agents that joined since
	place   Placement       // --oversubscribe and the rest, as for the start
	slots   map[string]int  // the slots of the hosts known at the start (-H, or what each agent offers)
	atStart map[string]bool // the agents that were members at the start
	join    string          // --join's address ("" in a local run), for the error's advice
	groups  []pmi.SpawnGroup
	cur     *spawnOp
	queue   []spawnAsk
	dialed  chan dialResult
}

// newGrowth readies the spawns of a job of o started on hosts through node.
func newGrowth(node *Agent, o *Options, hosts []HostSlots) growth {
	g := growth{node: node, place: o.Placement(), join: o.Join, slots: map[string]int{}, atStart: map[string]bool{},
		dialed: make(chan dialResult)}
	for _, h := range hosts {
		g.slots[h.Name], g.atStart[h.Name] = h.Slots, true
	}
	for n := range node.peers {
		g.atStart[n] = true
	}
	return g
}

// spawnAsk is a rank's spawn request, from the agent of link.
type spawnAsk struct {
	link int
	m    *spawnReqMsg
}

// spawnOp is the spawn under way.
type spawnOp struct {
	spawnAsk
	group     pmi.SpawnGroup
	roster    Roster   // the grown roster, the job's once committed
	addrs     []string // the control address of each of its hosts
	fresh     []*agentLink
	ready     int       // fresh agents that answered ready
	since     time.Time // when the fresh agents were dialed (readyTimeout bounds their setup)
	committed bool
	round     map[int]map[string][]byte // the group's fences
}

type dialResult struct {
	l   *agentLink
	cc  *ctlConn
	err error
}

// slotHost is an agent that may take new ranks.
type slotHost struct {
	name, addr string
	free       int
	fresh      bool // it joined the cluster after the job began
}

// spawnRequest takes a rank's spawn request: it starts now, or after the spawns before it.
func (s *submitter) spawnRequest(l *agentLink, m *spawnReqMsg) {
	ask := spawnAsk{link: l.idx, m: m}
	if s.grow.cur != nil {
		s.grow.queue = append(s.grow.queue, ask)
		return
	}
	s.startSpawn(ask)
}

// startSpawn places ask's ranks and dials the agents new to the job, or commits at once.
func (s *submitter) startSpawn(ask spawnAsk) {
	switch {
	case s.fail != nil:
		s.replySpawn(ask, pmi.SpawnGroup{}, "the job is being aborted")
		return
	case s.grow.node == nil:
		s.replySpawn(ask, pmi.SpawnGroup{}, "this golaunch does not grow jobs")
		return
	}
	hosts := s.spawnHosts()
	seq, err := planSpawn(hosts, ask.m.N, s.grow.place.Oversubscribe, s.grow.join)
	if err != nil {
		s.replySpawn(ask, pmi.SpawnGroup{}, err.Error())
		s.nextSpawn()
		return
	}
	op := &spawnOp{spawnAsk: ask, round: map[int]map[string][]byte{}}
	op.group = pmi.SpawnGroup{First: s.roster.Size, Count: ask.m.N, Leader: ask.m.Rank}
	names := make([]string, len(seq))
	for i, h := range seq {
		names[i] = hosts[h].name
	}
	op.roster = s.roster.grown(names)
	op.addrs = slices.Clone(s.addrs)
	s.grow.cur, op.since = op, time.Now()
	for i := len(s.roster.Hosts); i < len(op.roster.Hosts); i++ {
		name := op.roster.Hosts[i]
		addr := ""
		for _, h := range hosts {
			if h.name == name {
				addr = h.addr
			}
		}
		op.addrs = append(op.addrs, addr)
		// Not a link of the job until the commit: its index is its host's in the grown roster.
		l := &agentLink{idx: i, host: name, credit: make(chan struct{}, stdinWindow)}
		op.fresh = append(op.fresh, l)
		go func() {
			cc, err := dialControl(addr, s.key, s.timing())
			select {
			case s.grow.dialed <- dialResult{l, cc, err}:
			case <-s.done:
				if cc != nil {
					cc.close()
				}
			}
		}()
	}
	if len(op.fresh) == 0 {
		s.commitSpawn()
		return
	}
	s.watchHosts(op.fresh)
}

// checkSpawn fails a spawn whose new agents have not all set up the job within
// readyTimeout (the submitter's loop calls it at every liveness check).
func (s *submitter) checkSpawn() {
	op := s.grow.cur
	if op == nil || op.committed || len(op.fresh) == 0 || time.Since(op.since) < s.timing().ready {
		return
	}
	var late []string
	for _, l := range op.fresh {
		late = append(late, l.host)
	}
	s.failSpawn(fmt.Sprintf("the agents %s did not set up the job within %v", strings.Join(late, ", "), s.timing().ready))
}

// agentDialed pushes the job to a new agent, or fails the spawn.
func (s *submitter) agentDialed(d dialResult) {
	op := s.grow.cur
	if d.err != nil || op == nil || indexOf(op.fresh, d.l) < 0 || s.fail != nil {
		if d.cc != nil {
			d.cc.close()
		}
		d.l.lost = true
		if op != nil && indexOf(op.fresh, d.l) >= 0 {
			why := "the job is being aborted"
			if d.err != nil {
				why = fmt.Sprintf("agent %s could not be reached: %v", d.l.host, d.err)
			}
			s.failSpawn(why)
		}
		return
	}
	d.l.cc = d.cc
	go s.read(d.l)
	go d.l.cc.beat(s.done)
	spec := s.spec
	spec.Roster, spec.Node, spec.Addrs, spec.Rounds = op.roster, d.l.idx, op.addrs, max(s.rounds, op.m.Rounds)
	spec.Fanout = 0 // every fresh agent gets the whole spec from here
	spec.Spawns = append(append([]pmi.SpawnGroup(nil), s.grow.groups...), op.group)
	spec.Store, spec.Failed = op.m.Store, s.failed
	if err := d.l.cc.send(fJob, &spec); err != nil {
		s.lose(d.l, "control connection lost: "+err.Error())
		s.failSpawn(fmt.Sprintf("agent %s: send job: %v", d.l.host, err))
	}
}

func indexOf(ls []*agentLink, l *agentLink) int {
	for i, x := range ls {
		if x == l {
			return i
		}
	}
	return -1
}

// freshAnswer takes the frames (fReady or fReject) and the loss of an agent that is no
// link of the job: a new agent of the spawn under way, or one of a spawn that failed,
// which is ignored. It reports whether l is such an agent.
func (s *submitter) freshAnswer(l *agentLink, ev subEvent) bool {
	if l.idx < len(s.links) && s.links[l.idx] == l {
		return false
	}
	op := s.grow.cur
	if op == nil || op.committed || indexOf(op.fresh, l) < 0 {
		if ev.err == nil && !l.lost {
			s.lose(l, "the spawn it was dialed for failed")
		}
		return true
	}
	switch {
	case ev.err != nil:
		s.lose(l, "control connection lost: "+ev.err.Error())
		s.failSpawn(fmt.Sprintf("agent %s: control connection lost while it set up the job: %v", l.host, ev.err))
	case ev.t == fReject:
		s.lose(l, "refused the job")
		s.failSpawn(fmt.Sprintf("agent %s refused the job: %s", l.host, ev.msg.(*rejectMsg).Msg))
	case ev.t == fReady:
		if op.ready++; op.ready == len(op.fresh) {
			s.commitSpawn()
		}
	default:
		s.lose(l, fmt.Sprintf("protocol error: unexpected %v frame during setup", ev.t))
		s.failSpawn(fmt.Sprintf("agent %s broke the control protocol", l.host))
	}
	return true
}

// commitSpawn grows the job: the roster, the rank table, the agents' tables; the new ranks
// start.
func (s *submitter) commitSpawn() {
	op := s.grow.cur
	op.committed = true
	old := len(s.roster.Hosts)
	s.roster, s.addrs = op.roster, op.addrs
	s.size.Store(int64(op.roster.Size))
	s.ranks = append(s.ranks, make([]rankState, op.group.Count)...)
	s.grow.groups = append(s.grow.groups, op.group)
	s.links = append(s.links, op.fresh...)
	s.watchHosts(nil)
	for _, l := range s.links {
		switch {
		case l.lost:
		case l.idx >= old:
			s.sendOrLose(l, fStart, nil)
		default:
			s.sendOrLose(l, fSpawn, spawnMsg{Group: op.group, Roster: op.roster, Addrs: op.addrs})
		}
	}
}

// spawnFence takes a spawned rank's fence with its group; the whole group's completes
// the spawn. The fence of a rank whose spawn failed already is dropped: its agent has
// the group's failure.
func (s *submitter) spawnFence(l *agentLink, m *fenceMsg) {
	if _, ok := s.localRank(l, m.Rank); !ok {
		s.lose(l, fmt.Sprintf("protocol error: rank %d, which does not run there, fenced with a spawned group", m.Rank))
		return
	}
	op := s.grow.cur
	g := op.groupOrZero()
	if op == nil || !op.committed || m.Rank < g.First || m.Rank >= g.First+g.Count {
		return
	}
	if m.Puts == nil {
		m.Puts = map[string][]byte{}
	}
	op.round[m.Rank] = m.Puts
	if len(op.round) < g.Count {
		return
	}
	s.broadcast(fSpawnDone, spawnDoneMsg{Group: g, Puts: op.round})
	s.replySpawn(op.spawnAsk, g, "")
	s.grow.cur = nil
	s.nextSpawn()
}

// groupOrZero is the spawn's group, or none when no spawn is under way.
func (op *spawnOp) groupOrZero() pmi.SpawnGroup {
	if op == nil {
		return pmi.SpawnGroup{}
	}
	return op.group
}

// spawnedEnded fails the spawn under way if rank is one of its ranks that had not fenced;
// what says how it ended ("rank 4 (host h1, pid 1234) exited with code 1").
func (s *submitter) spawnedEnded(rank int, what string) {
	op := s.grow.cur
	if op == nil || !op.committed || rank < op.group.First || rank >= op.group.First+op.group.Count {
		return
	}
	if _, fenced := op.round[rank]; !fenced {
		s.failSpawn("spawned " + what + " before it finished Init")
	}
}

// failSpawn ends the spawn under way with why: the asking rank gets it, and, once the
// ranks had started, so do their group's fences.
func (s *submitter) failSpawn(why string) {
	op := s.grow.cur
	if op == nil {
		return
	}
	for _, l := range op.fresh {
		if !op.committed && !l.lost {
			s.lose(l, "the spawn failed")
		}
	}
	if op.committed {
		s.broadcast(fSpawnDone, spawnDoneMsg{Group: op.group, Err: why})
	}
	s.replySpawn(op.spawnAsk, pmi.SpawnGroup{}, why)
	s.grow.cur = nil
	s.nextSpawn()
}

// nextSpawn starts the next spawn asked for, if any.
func (s *submitter) nextSpawn() {
	for s.grow.cur == nil && len(s.grow.queue) > 0 {
		ask := s.grow.queue[0]
		s.grow.queue = s.grow.queue[1:]
		s.startSpawn(ask)
	}
}

// replySpawn answers ask with g, or with why it failed.
func (s *submitter) replySpawn(ask spawnAsk, g pmi.SpawnGroup, why string) {
	if l := s.links[ask.link]; !l.lost {
		s.sendOrLose(l, fSpawnAns, spawnReplyMsg{Rank: ask.m.Rank, First: g.First, N: g.Count, Err: why})
	}
}

// sendOrLose sends a frame to l, which is lost if that fails.
func (s *submitter) sendOrLose(l *agentLink, t frameType, v any) {
	if err := l.cc.send(t, v); err != nil {
		s.lose(l, "control connection lost: "+err.Error())
	}
}

// watchHosts watches the departures of the job's hosts and of the agents fresh, which
// join it, from now on.
func (s *submitter) watchHosts(fresh []*agentLink) {
	if s.unwatch != nil {
		s.unwatch()
	}
	names := append([]string(nil), s.roster.Hosts...)
	for _, l := range fresh {
		names = append(names, l.host)
	}
	s.leaves, s.unwatch = s.grow.node.cl.watchLeaves(names...)
}

// spawnHosts lists the agents that may take new ranks, in the order they are filled:
// those that joined the cluster after the job began (by name), the job's hosts (in
// roster order), then the other agents (by name). A host's free slots are its slots less
// its ranks of this job that have not ended.
func (s *submitter) spawnHosts() []slotHost {
	live := map[string]int{}
	for rank, st := range s.ranks {
		if !st.done {
			live[s.roster.Hosts[s.roster.RankHost[rank]]]++
		}
	}
	node := s.grow.node
	if s.grow.join == "" { // a local run: its one agent
		name := s.roster.Hosts[0]
		return []slotHost{{name: name, addr: node.controlAddr(), free: s.grow.slots[name] - live[name]}}
	}
	agents, _ := liveAgents(node, log.New(io.Discard, "", 0))
	for _, l := range s.links {
		if l.lost {
			delete(agents, l.host) // a job's host whose agent was lost, or is another process now
		}
	}
	var fresh, job, other []slotHost
	for name, m := range agents {
		slots, known := s.grow.slots[name]
		if !known {
			slots = m.Meta.Slots
		}
		h := slotHost{name: name, addr: m.Meta.Control, free: slots - live[name], fresh: !s.grow.atStart[name]}
		switch {
		case h.fresh:
			fresh = append(fresh, h)
		case s.hostIndex(name) >= 0:
			job = append(job, h)
		default:
			other = append(other, h)
		}
	}
	byName := func(hs []slotHost) { sort.Slice(hs, func(i, j int) bool { return hs[i].name < hs[j].name }) }
	byName(fresh)
	byName(other)
	sort.Slice(job, func(i, j int) bool { return s.hostIndex(job[i].name) < s.hostIndex(job[j].name) })
	return append(append(fresh, job...), other...)
}

// planSpawn places n new ranks on hosts, in their order, each up to its free slots, and
// with over (--oversubscribe) the rest one per host in turn. It returns the index into
// hosts of each new rank, or the error that tells the user what to do (join: the
// cluster's address, "" in a local run).
func planSpawn(hosts []slotHost, n int, over bool, join string) ([]int, error) {
	seq := make([]int, 0, n)
	free := 0
	for i, h := range hosts {
		free += max(h.free, 0)
		for k := 0; k < h.free && len(seq) < n; k++ {
			seq = append(seq, i)
		}
	}
	for over && len(hosts) > 0 && len(seq) < n {
		seq = append(seq, len(seq)%len(hosts))
	}
	if len(seq) == n {
		return seq, nil
	}
	advice := "start an agent with `golaunch agent --join " + join + " ...` or pass --oversubscribe"
	what := fmt.Sprintf("%d agents, all full", len(hosts))
	switch {
	case join == "":
		advice = "give the job more slots (-H localhost:N with N above the job's ranks) or pass --oversubscribe"
		what = "this host's slots are all taken"
	case len(hosts) == 1:
		what = "1 agent, full"
	}
	if free > 0 {
		what = fmt.Sprintf("only %d free on %s", free, plural(len(hosts), "agent"))
	}
	return nil, fmt.Errorf("no free slots for %s: %s; %s", plural(n, "rank"), what, advice)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// grown returns r with one more rank on each of hosts, in order; a host r does not have
// is added after its hosts.
func (r Roster) grown(hosts []string) Roster {
	g := Roster{Size: r.Size, Hosts: append([]string(nil), r.Hosts...),
		RankHost: append([]int(nil), r.RankHost...), LocalRank: append([]int(nil), r.LocalRank...),
		LocalSize: append([]int(nil), r.LocalSize...)}
	for _, name := range hosts {
		h := -1
		for i, x := range g.Hosts {
			if x == name {
				h = i
			}
		}
		if h < 0 {
			h = len(g.Hosts)
			g.Hosts = append(g.Hosts, name)
			g.LocalSize = append(g.LocalSize, 0)
		}
		g.RankHost = append(g.RankHost, h)
		g.LocalRank = append(g.LocalRank, g.LocalSize[h])
		g.LocalSize[h]++
		g.Size++
	}
	return g
}
