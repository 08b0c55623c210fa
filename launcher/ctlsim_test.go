package launcher

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/pmi"
)

// The control-plane simulation: one job of agents × perAgent ranks, started, fenced once
// and aborted, all in this process. What runs is the real code wherever it can run here,
// and only the OS processes are modelled:
//
//   - real: the submitter (submitter.run: connect, setup, start, its event loop, the
//     fence merge, failWith's abort broadcast, closeLinks), over loopback TCP to one
//     listener per agent; the control handshake and sealed frames (control.go); each
//     agent's job frame decoding and checks (decodeBody, jobSpec.check), its PMI server
//     (pmi.Server, pmiHandler, pmi.Exchange) and its frame loop (agentJob.serve: fence
//     merges, the abort); the heartbeats (ctlConn.beat); each rank's PMI client
//     (pmi.DialConn, Put, Fence, Get) on a net.Pipe, where a real rank has a socketpair.
//   - modelled: an agent's setup and spawn (agentJob.prepare and startRanks make a job
//     directory and fork processes): the simulated agent builds the same agentJob without
//     them and starts one goroutine per rank instead of a process. Its ranks start once
//     every agent has its start frame: on a cluster they run on their own host's
//     processors, and do not hold up the submitter's start frames to the other hosts,
//     as they would on this process's. For the same reason a rank reports its end to
//     the submitter once every rank holds the abort event. A rank's end, which
//     the real agent learns by reaping it (waitRank), is reported by the rank goroutine
//     itself. The job's abort is triggered by one rank exiting with code 1; every other
//     rank ends on the PMI event the abort brings, as if killed by its agent's SIGTERM.
//
// All agents share this process's processors, so the times add up the work that a real
// cluster does in parallel on its hosts: they bound the real times from above.

// simCardKey and simCardSize are a rank's business card as the runtime publishes it:
// runtime's card is 67 fixed bytes, the host name and the listener's host:port.
const (
	simCardKey  = "gorma/card"
	simCardSize = 92
)

// simCard is rank's card: distinct per rank, so a check can tell whose it got.
func simCard(rank int) []byte {
	b := make([]byte, simCardSize)
	copy(b, "GRMC")
	binary.LittleEndian.PutUint32(b[4:], uint32(rank))
	for i := 8; i < len(b); i++ {
		b[i] = byte(rank*31 + i)
	}
	return b
}

// ctlResult is what one simulated job measured.
type ctlResult struct {
	Agents, Ranks int

	Start time.Duration // submitter's start to the last agent's start frame (job pushed, ready, started)
	Init  time.Duration // submitter's start to the last rank's PMI init
	Fence time.Duration // every rank put its card and was let go, to the last rank out of the fence
	Abort time.Duration // the failing rank's exit report sent, to the last rank holding the abort event
	End   time.Duration // the failing rank's exit report sent (--ft: the survivors' exits), to the submitter's return

	// A job under --ft whose victim agent is lost as the fence begins: from the loss to
	// the last survivor rank holding a proc-failed event for a rank of the victim
	// (Notice), and to the last survivor out of the fence (Fence, then).
	Notice time.Duration

	Code    int    // the submitter's exit code
	Summary string // its summary line

	// Frames and bytes by direction, summed over the agents; pings are counted apart.
	ToAgents, FromAgents           [fTypeEnd]int64
	ToAgentsB, FromAgentsB         [fTypeEnd]int64 // bytes of those frames
	BytesToAgents, BytesFromAgents int64
	// Per agent: the largest message count with the submitter (both directions, pings
	// excluded), and the largest byte count, fetch links included.
	MaxAgentMsgs, MaxAgentBytes int64
	// Fetch frames and bytes between agents (fetch.go), each counted at both ends.
	PeerMsgs, PeerBytes int64
	// Links on which an agent's parent in the tree passed fence payloads (treefence.go).
	TreeFenceLinks int64
	// The node (the submitter or an agent) that sent and received the most bytes, and
	// those bytes: the bound on any one node's traffic.
	Busiest  string
	BusiestB int64
	// Messages per agent in each direction, by agent (pings excluded).
	AgentIn, AgentOut []int64
}

// ctlSim is one simulated job. Its fields are set before the agents and ranks start,
// except those under mu.
type ctlSim struct {
	ctx      context.Context
	ckey     []byte
	perAgent int
	fullGet  bool // every rank reads every card after the fence (else three per rank)
	gather   bool // the ranks' fence gathers (simOpts)
	size     int
	trigger  int // the rank whose exit aborts the job
	victim   int // --ft: the agent lost as the fence begins; -1: none
	fanout   int // the agent tree's (treespec.go)

	fenceGate chan struct{} // closed: ranks may fence
	abortGate chan struct{} // closed: the trigger rank exits

	inited, fenced, aborted sync.WaitGroup // one count per rank each
	agentsDone              sync.WaitGroup // one count per agent
	started                 sync.WaitGroup // one count per agent, done at its start frame
	peers                   sync.WaitGroup // one count per fetch link served

	mu       sync.Mutex
	err      error
	lastInit time.Time
	lastFin  time.Time // last return from the fence
	lastAbrt time.Time // last abort event at a rank
	lastStrt time.Time // last start frame at an agent
	lastKnow time.Time // last survivor rank to hold a proc-failed event for the victim's
	conns    []net.Conn
	agents   []*simAgent
}

// agentAt returns the agent at tree position p, or nil for the submitter's.
func (sim *ctlSim) agentAt(p int) *simAgent {
	if p < 1 || p > len(sim.agents) {
		return nil
	}
	return sim.agents[treeHost(p)]
}

func (sim *ctlSim) fail(err error) {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	if sim.err == nil {
		sim.err = err
	}
}

func (sim *ctlSim) failed() error {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	return sim.err
}

// mark moves *t to now if now is later.
func (sim *ctlSim) mark(t *time.Time) {
	now := time.Now()
	sim.mu.Lock()
	if now.After(*t) {
		*t = now
	}
	sim.mu.Unlock()
}

// at reads a time that mark moves. Ranks may still mark lastKnow after the fence.
func (sim *ctlSim) at(t *time.Time) time.Time {
	sim.mu.Lock()
	defer sim.mu.Unlock()
	return *t
}

// simAgent is one simulated agent: a control listener and the real job code behind it.
type simAgent struct {
	sim  *ctlSim
	idx  int
	name string
	ln   net.Listener
	tap  *tapConn // set once the submitter connected
	a    *Agent   // what agentJob needs of an agent: its name, log and cluster key

	conn      net.Conn       // the submitter's connection (under sim.mu)
	job       chan *agentJob // the job, once set up
	peerBytes atomic.Int64   // bytes of fetch links it asked or answered on (fetch.go)
	peerMsgs  atomic.Int64   // fetch frames it sent or received
	treeLinks atomic.Int64   // links on which its parent passed fence payloads
}

// simOpts are a simulated job's variations.
type simOpts struct {
	fullGet bool // every rank reads every card after the fence (else three per rank)
	gather  bool // the ranks fence as PMI-1 ranks: the fence takes every put to every host
	victim  int  // --ft: the agent lost as the fence begins; -1: none
}

// runCtlSim runs one job of agents × perAgent ranks and returns its measurements.
func runCtlSim(ctx context.Context, agents, perAgent int, fullGet bool) (*ctlResult, error) {
	return runCtlSimOpts(ctx, agents, perAgent, simOpts{fullGet: fullGet, victim: -1})
}

// runCtlSimWith runs the job; with victim ≥ 0 it runs under --ft and loses that agent
// as the fence begins (its control connection and listener close, its ranks never
// fence), and the survivors end by exiting 0 after the fence instead of an abort.
func runCtlSimWith(ctx context.Context, agents, perAgent int, fullGet bool, victim int) (*ctlResult, error) {
	return runCtlSimOpts(ctx, agents, perAgent, simOpts{fullGet: fullGet, victim: victim})
}

// runCtlSimOpts runs the job as o says.
func runCtlSimOpts(ctx context.Context, agents, perAgent int, o simOpts) (*ctlResult, error) {
	fullGet, victim := o.fullGet, o.victim
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("cluster key: %w", err)
	}
	sim := &ctlSim{ctx: ctx, ckey: controlKey(key), perAgent: perAgent, fullGet: fullGet,
		size: agents * perAgent, trigger: agents*perAgent - 1, victim: victim, fanout: defaultFanout, gather: o.gather,
		fenceGate: make(chan struct{}), abortGate: make(chan struct{})}
	sas := make([]*simAgent, agents)
	hosts := make([]HostSlots, agents)
	addrs := make([]string, agents)
	defer func() {
		for _, sa := range sas {
			if sa != nil {
				sa.ln.Close()
			}
		}
	}()
	for i := range sas {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("control listener of simulated agent %d: %w", i, err)
		}
		name := fmt.Sprintf("a%04d", i)
		sas[i] = &simAgent{sim: sim, idx: i, name: name, ln: ln, job: make(chan *agentJob, 1),
			a: &Agent{name: name, log: log.New(io.Discard, "", 0), ckey: sim.ckey}}
		hosts[i], addrs[i] = HostSlots{Name: name, Slots: perAgent}, ln.Addr().String()
	}
	roster, err := PlanRanks(hosts, sim.size)
	if err != nil {
		return nil, err
	}
	id, secret, err := newJobID()
	if err != nil {
		return nil, err
	}
	sim.inited.Add(sim.size)
	sim.fenced.Add(sim.size)
	sim.aborted.Add(sim.size)
	sim.agentsDone.Add(agents)
	sim.started.Add(agents)
	sim.agents = sas
	for _, sa := range sas {
		go sa.serve()
	}
	stderr := &lockedBuffer{}
	s := &submitter{
		spec: jobSpec{ID: id, Submitter: "submitter", Program: "/simulated/rank", Secret: secret,
			Roster: roster, Transport: "auto", BindTo: BindNone, Grace: time.Second, FT: victim >= 0,
			Fanout: sim.fanout},
		roster: roster, addrs: addrs, key: sim.ckey, stderr: stderr, grace: time.Second,
		tm:  defaultTiming.scaled(testbudget.Scale),
		out: newOutputSink(io.Discard, io.Discard, false, true, ""),
	}
	start := time.Now()
	code := make(chan int, 1)
	go func() { code <- s.run() }()

	res := &ctlResult{Agents: agents, Ranks: sim.size}
	abortAll := func(err error) (*ctlResult, error) {
		sim.fail(err)
		sim.mu.Lock()
		for _, c := range sim.conns {
			c.Close() // the submitter loses every agent and returns
		}
		sim.mu.Unlock()
		<-code
		return nil, sim.failed()
	}
	if err := sim.wait(&sim.inited, "every rank's PMI init and put"); err != nil {
		return abortAll(err)
	}
	res.Start, res.Init = sim.at(&sim.lastStrt).Sub(start), sim.at(&sim.lastInit).Sub(start)
	fenceAt := time.Now()
	close(sim.fenceGate)
	if victim >= 0 {
		sas[victim].lose()
	}
	if err := sim.wait(&sim.fenced, "the fence"); err != nil {
		return abortAll(err)
	}
	res.Fence = sim.at(&sim.lastFin).Sub(fenceAt)
	if victim >= 0 {
		res.Notice = sim.at(&sim.lastKnow).Sub(fenceAt)
	}
	abortAt := time.Now()
	close(sim.abortGate)
	if err := sim.wait(&sim.aborted, "the abort event at every rank"); err != nil {
		return abortAll(err)
	}
	if victim < 0 {
		res.Abort = sim.at(&sim.lastAbrt).Sub(abortAt)
	}
	select {
	case res.Code = <-code:
	case <-ctx.Done():
		return abortAll(fmt.Errorf("the submitter did not return after the abort: %w", ctx.Err()))
	}
	res.End = time.Since(abortAt)
	res.Summary = stderr.String()
	if err := sim.wait(&sim.agentsDone, "the agents' end"); err != nil {
		return nil, err
	}
	if err := sim.wait(&sim.peers, "the fetch links' end"); err != nil {
		return nil, err
	}
	res.count(sas)
	return res, sim.failed()
}

// wait waits for wg, or fails naming what it waited for.
func (sim *ctlSim) wait(wg *sync.WaitGroup, what string) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return sim.failed()
	case <-sim.ctx.Done():
		if err := sim.failed(); err != nil {
			return err
		}
		return fmt.Errorf("simulated job: waiting for %s: %w", what, sim.ctx.Err())
	}
}

// count sums the taps of every agent.
func (r *ctlResult) count(sas []*simAgent) {
	for _, sa := range sas {
		in, out := sa.tap.in, sa.tap.out
		for t := range r.ToAgents {
			r.ToAgents[t] += in.frames[t].Load()
			r.FromAgents[t] += out.frames[t].Load()
			r.ToAgentsB[t] += in.frameBytes[t].Load()
			r.FromAgentsB[t] += out.frameBytes[t].Load()
		}
		r.BytesToAgents += in.bytes.Load()
		r.BytesFromAgents += out.bytes.Load()
		r.AgentIn = append(r.AgentIn, in.messages())
		r.AgentOut = append(r.AgentOut, out.messages())
		r.MaxAgentMsgs = max(r.MaxAgentMsgs, in.messages()+out.messages())
		r.PeerMsgs += sa.peerMsgs.Load()
		r.PeerBytes += sa.peerBytes.Load()
		r.TreeFenceLinks += sa.treeLinks.Load()
		if b := in.bytes.Load() + out.bytes.Load() + sa.peerBytes.Load(); b > r.MaxAgentBytes {
			r.MaxAgentBytes = b
			if b > r.BusiestB {
				r.Busiest, r.BusiestB = "agent "+sa.name, b
			}
		}
	}
	if b := r.BytesToAgents + r.BytesFromAgents; b >= r.BusiestB {
		r.Busiest, r.BusiestB = "the submitter", b
	}
}

// serve accepts the submitter's connection and runs the agent's part of the job as
// Agent.runJob does, with the spawn modelled.
func (sa *simAgent) serve() {
	sim := sa.sim
	defer sim.agentsDone.Done()
	c, err := sa.ln.Accept()
	if err != nil {
		sim.fail(fmt.Errorf("agent %s: accept: %w", sa.name, err))
		return
	}
	sim.mu.Lock()
	sim.conns = append(sim.conns, c)
	sa.conn = c
	sim.mu.Unlock()
	go sa.acceptPeers()
	sa.tap = newTapConn(c)
	c.SetDeadline(time.Now().Add(testbudget.Scale(handshakeTimeout)))
	cc, err := serverHandshake(sa.tap, sim.ckey)
	if err != nil {
		sim.fail(fmt.Errorf("agent %s: %w", sa.name, err))
		c.Close()
		return
	}
	c.SetDeadline(time.Time{})
	defer cc.close()
	beating := make(chan struct{})
	defer close(beating)
	go cc.beat(beating)
	j, err := sa.setup(cc)
	if err != nil {
		sim.fail(err)
		return
	}
	sa.job <- j
	defer j.closeFetch()
	defer j.closeTree()
	defer func() {
		j.mu.Lock()
		if j.killTimer != nil {
			j.killTimer.Stop()
		}
		j.mu.Unlock()
		j.srv.Close()
	}()
	if t, _, err := cc.recv(); err != nil || t != fStart {
		sim.fail(fmt.Errorf("agent %s: waiting for the start frame: got %v, %v", sa.name, t, err))
		return
	}
	sim.mark(&sim.lastStrt)
	sim.started.Done()
	if err := sim.wait(&sim.started, "every agent's start frame"); err != nil {
		return
	}
	for _, rank := range j.local {
		srvEnd, rankEnd := net.Pipe()
		j.srv.ServeConn(srvEnd, rank)
		if err := j.send(fStarted, startedMsg{Rank: rank, Pid: simPid(rank)}); err != nil {
			sim.fail(fmt.Errorf("agent %s: report rank %d started: %w", sa.name, rank, err))
		}
		go sa.rank(j, rank, rankEnd)
	}
	j.serve() // the real frame loop, until the submitter's done frame
}

// lose models the agent's host dying: its control connection and its listener close.
func (sa *simAgent) lose() {
	sa.sim.mu.Lock()
	c := sa.conn
	sa.sim.mu.Unlock()
	c.Close()
	sa.ln.Close()
}

// victimRank reports whether rank runs on the agent the job loses.
func (sim *ctlSim) victimRank(rank int) bool {
	return sim.victim >= 0 && rank/sim.perAgent == sim.victim
}

// acceptPeers answers the fetch links of other agents (fetch.go), as the real agent's
// accept loop and runJob do, until the listener closes. Each link's bytes count for both
// ends.
func (sa *simAgent) acceptPeers() {
	for {
		c, err := sa.ln.Accept()
		if err != nil {
			return
		}
		sa.sim.peers.Add(1)
		go func() {
			defer sa.sim.peers.Done()
			defer c.Close()
			tap := newTapConn(c)
			c.SetDeadline(time.Now().Add(testbudget.Scale(handshakeTimeout)))
			cc, err := serverHandshake(tap, sa.sim.ckey)
			if err != nil {
				sa.sim.fail(fmt.Errorf("agent %s: fetch link: %w", sa.name, err))
				return
			}
			c.SetDeadline(time.Time{})
			t, p, err := cc.recv()
			if err == nil && t == fTreeSpec {
				if err := sa.a.treeSpecArrived(p); err != nil {
					sa.sim.fail(fmt.Errorf("agent %s: tree link: %w", sa.name, err))
				}
				from := newTree(len(sa.sim.agents), sa.sim.fanout).parent(treePos(sa.idx))
				countLink(tap, sa, sa.sim.agentAt(from))
				return
			}
			if err == nil && t == fTreeFence {
				v, err := decodeBody(t, p)
				if err != nil {
					sa.sim.fail(fmt.Errorf("agent %s: tree link: %w", sa.name, err))
					return
				}
				j := <-sa.job
				sa.job <- j
				sa.treeLinks.Add(1)
				j.serveTreeFences(cc, v.(*treeFenceMsg))
				from := newTree(len(sa.sim.agents), sa.sim.fanout).parent(treePos(sa.idx))
				countLink(tap, sa, sa.sim.agentAt(from))
				return
			}
			if err != nil || t != fFetch {
				sa.sim.fail(fmt.Errorf("agent %s: fetch link: first frame %v, %v", sa.name, t, err))
				return
			}
			v, err := decodeBody(t, p)
			if err != nil {
				sa.sim.fail(fmt.Errorf("agent %s: fetch link: %w", sa.name, err))
				return
			}
			m := v.(*fetchMsg)
			j := <-sa.job
			sa.job <- j
			j.serveFetches(cc, m)
			countLink(tap, sa, sa.sim.agents[m.From])
		}()
	}
}

// countLink counts a link's bytes and frames for both its ends (a nil end is the
// submitter, counted apart).
func countLink(tap *tapConn, ends ...*simAgent) {
	b := tap.in.bytes.Load() + tap.out.bytes.Load()
	n := tap.in.messages() + tap.out.messages()
	for _, x := range ends {
		if x != nil {
			x.peerBytes.Add(b)
			x.peerMsgs.Add(n)
		}
	}
}

// setup receives and checks the job (as runJob and prepare do) and answers ready.
func (sa *simAgent) setup(cc *ctlConn) (*agentJob, error) {
	t, p, err := cc.recv()
	if err != nil || (t != fJob && t != fJobTree) {
		return nil, fmt.Errorf("agent %s: waiting for the job frame: got %v, %v", sa.name, t, err)
	}
	spec, raw, err := sa.a.jobOf(t, p)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", sa.name, err)
	}
	if err := sa.a.passSpec(spec, raw, defaultTiming.scaled(testbudget.Scale)); err != nil {
		return nil, err
	}
	if err := spec.check(); err != nil {
		return nil, fmt.Errorf("agent %s: bad job: %w", sa.name, err)
	}
	if h := spec.Roster.Hosts[spec.Node]; h != sa.name {
		return nil, fmt.Errorf("agent %s: job for host %q pushed here", sa.name, h)
	}
	j := &agentJob{a: sa.a, spec: *spec, conn: cc, path: spec.Program, local: spec.Roster.RanksOn(spec.Node),
		procs: make(map[int]*rankProc), connected: make(map[int]bool), finalized: make(map[int]bool),
		failed: make(map[int]bool), stdinQ: make(chan []byte, stdinWindow+1)}
	j.x = pmi.NewExchange(spec.Roster.Size)
	j.initGrowth()
	j.srv = pmi.NewServer((*pmiHandler)(j))
	if err := cc.send(fReady, nil); err != nil {
		return nil, fmt.Errorf("agent %s: send ready: %w", sa.name, err)
	}

	return j, nil
}

func simPid(rank int) int { return 100000 + rank }

// rank models one rank process: the runtime's start-up over PMI (init, put its card,
// fence, read cards), then its end: the trigger rank exits with code 1, the others end on
// the abort event as if killed by their agent's SIGTERM.
func (sa *simAgent) rank(j *agentJob, rank int, conn net.Conn) {
	sim := sa.sim
	left := []*sync.WaitGroup{&sim.inited, &sim.fenced, &sim.aborted}
	defer func() {
		for _, wg := range left {
			wg.Done()
		}
	}()
	next := func() { left[0].Done(); left = left[1:] }
	fail := func(err error) { sim.fail(fmt.Errorf("rank %d (agent %s): %w", rank, sa.name, err)) }
	c, err := pmi.DialConn(sim.ctx, conn, rank, j.spec.ID)
	if err != nil {
		fail(err)
		return
	}
	defer c.Close()
	if !sim.gather {
		if err := c.Put(sim.ctx, simCardKey, simCard(rank)); err != nil {
			fail(err)
			return
		}
	}
	sim.mark(&sim.lastInit)
	next()
	select {
	case <-sim.fenceGate:
	case <-sim.ctx.Done():
		return
	}
	if sim.victimRank(rank) {
		return // its host is lost: it never fences, and nothing reports its end
	}
	if sim.victim >= 0 {
		go sa.watchFailures(c)
	}
	get := func(r int) ([]byte, error) { return c.Get(sim.ctx, r, simCardKey) }
	if sim.gather {
		// A PMI-1 rank's put and fence, as the PMI server hands them to the agent.
		h := (*pmiHandler)(j)
		err = h.Fence(sim.ctx, rank, map[string][]byte{simCardKey: simCard(rank)})
		get = func(r int) ([]byte, error) { return h.Get(sim.ctx, r, simCardKey) }
	} else {
		err = c.Fence(sim.ctx)
	}
	if err != nil {
		fail(err)
		return
	}
	sim.mark(&sim.lastFin)
	if err := sa.readCards(rank, get); err != nil {
		fail(err)
		return
	}
	next()
	if sim.victim >= 0 {
		if err := c.Finalize(sim.ctx); err != nil {
			fail(err)
			return
		}
		sa.exit(j, rank, exitMsg{Code: 0})
		return
	}
	if rank == sim.trigger {
		select {
		case <-sim.abortGate:
		case <-sim.ctx.Done():
			return
		}
		sa.exit(j, rank, exitMsg{Code: 1})
		return
	}
	select {
	case ev, ok := <-c.Events():
		if !ok {
			fail(errors.New("PMI connection closed before the abort event"))
			return
		}
		if ev.Rank != sim.trigger {
			fail(fmt.Errorf("abort event names rank %d, not %d", ev.Rank, sim.trigger))
		}
	case <-sim.ctx.Done():
		return
	}
	sim.mark(&sim.lastAbrt)
	next()
	if sim.wait(&sim.aborted, "the abort event at every rank") != nil {
		return
	}
	sa.exit(j, rank, exitMsg{Code: -1, Signal: int(syscall.SIGTERM), OwnSignal: true})
}

// watchFailures marks when this rank first holds a proc-failed event for a rank of the
// victim. It takes every event until the connection closes, as the runtime does: an
// event the rank leaves unread would hold up its agent.
func (sa *simAgent) watchFailures(c *pmi.Client) {
	known := false
	for ev := range c.Events() {
		if !known && ev.Kind == pmi.ProcFailed && sa.sim.victimRank(ev.Rank) {
			known = true
			sa.sim.mark(&sa.sim.lastKnow)
		}
	}
}

// readCards checks what the fence published: every card (fullGet), or rank 0's, the next
// rank's and the one half the job away (on another agent), with get. A lost agent's
// ranks' cards are not read.
func (sa *simAgent) readCards(rank int, get func(rank int) ([]byte, error)) error {
	n := sa.sim.size
	peers := []int{0, (rank + 1) % n, (rank + n/2) % n}
	if sa.sim.fullGet {
		peers = peers[:0]
		for r := range n {
			peers = append(peers, r)
		}
	}
	for _, r := range peers {
		if sa.sim.victimRank(r) {
			continue
		}
		b, err := get(r)
		if err != nil {
			return err
		}
		if !bytes.Equal(b, simCard(r)) {
			return fmt.Errorf("card of rank %d: got %d bytes that are not its card", r, len(b))
		}
	}
	return nil
}

// exit reports a rank's end to the submitter as waitRank does after reaping it.
func (sa *simAgent) exit(j *agentJob, rank int, m exitMsg) {
	j.mu.Lock()
	m.Rank, m.Pid, m.Finalized, m.Connected, m.Early = rank, simPid(rank), j.finalized[rank], j.connected[rank], !j.aborting
	j.mu.Unlock()
	if err := j.send(fExit, m); err != nil {
		sa.sim.fail(fmt.Errorf("agent %s: report rank %d's exit: %w", sa.name, rank, err))
	}
}
