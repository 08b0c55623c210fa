package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorma-hpc/gorma/internal/accept"
	"github.com/gorma-hpc/gorma/pmi"
)

// jobSetupTimeout bounds the wait for a submitter's job frame and its start frame.
const jobSetupTimeout = 30 * time.Second

// agentConfig describes an agent: a cluster member that runs ranks (Slots > 0, with a
// control listener) or a submitter's member (Slots 0, no listener).
type agentConfig struct {
	Name        string
	Bind        string // gossip host:port
	Advertise   string // gossip IP to advertise ("" for the default)
	ControlPort int    // control listener port on the bind IP (0 picks one); ignored when Slots is 0
	Slots       int
	Key         []byte      // cluster key
	Log         *log.Logger // agent events; nil discards
	GossipLog   io.Writer   // memberlist's log; nil discards
	Debug       bool        // memberlist [DEBUG] lines too
}

// Agent is one host's member of the cluster: it accepts jobs from submitters over
// authenticated control connections and runs its part of each (agentJob). Its methods
// are safe for concurrent use. Goroutines: the accept loop (ends when close closes the
// listener) and one per control connection (ends with its job; close aborts every job).
type Agent struct {
	name       string
	cfg        agentConfig
	cl         *cluster
	ln         net.Listener // nil for a submitter's member
	stopAccept context.CancelFunc
	ckey       []byte
	log        *log.Logger
	strangers  *rateLog // refused and dropped control connections, failed accepts
	wg         sync.WaitGroup

	rejected atomic.Int64      // control connections refused by the handshake
	shed     atomic.Int64      // control connections shed: maxHandshakes pending (handshakes.go)
	peers    map[string]member // a submitter's member: the agents it learned of at join
	heldDead []string          // a submitter's member: agents the seed held as dead, when the job lacks agents

	specs treeSpecs // job specs coming down job trees (treespec.go)

	mu      sync.Mutex
	jobs    map[*agentJob]struct{}
	conns   map[net.Conn]struct{}   // connections in their handshake
	pending *pendingTable[net.Conn] // the same, proven or not, for shedding
	nonces  nonceCache              // the hellos' nonces, against replays
	closed  bool
}

// startAgent creates the control listener (when Slots > 0) and the cluster member, and
// starts accepting jobs.
func startAgent(cfg agentConfig) (*Agent, error) {
	a := &Agent{name: cfg.Name, cfg: cfg, ckey: controlKey(cfg.Key), log: cfg.Log,
		jobs: make(map[*agentJob]struct{}), conns: make(map[net.Conn]struct{}),
		pending: newPendingTable[net.Conn](maxHandshakes)}
	if a.log == nil {
		a.log = log.New(io.Discard, "", 0)
	}
	a.strangers = newRateLog(summaryEvery, func(line string) { a.log.Print(line) })
	host, _, err := net.SplitHostPort(cfg.Bind)
	if err != nil {
		return nil, fmt.Errorf("bind address %q: %w", cfg.Bind, err)
	}
	meta := NodeMeta{Version: controlVersion, Slots: cfg.Slots}
	if cfg.Slots > 0 {
		a.ln, err = net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(cfg.ControlPort)))
		if err != nil {
			return nil, fmt.Errorf("control listener: %w", err)
		}
		ctlHost := cfg.Advertise
		if ctlHost == "" {
			ctlHost = host
		}
		port := a.ln.Addr().(*net.TCPAddr).Port
		meta.Control = net.JoinHostPort(ctlHost, strconv.Itoa(port))
		if ip := net.ParseIP(ctlHost); ip != nil && ip.IsUnspecified() {
			meta.Control = "" // known once memberlist picked its advertise IP (below)
		}
		defer func() {
			if a.cl == nil {
				a.ln.Close()
			}
		}()
	}
	cl, err := newCluster(clusterConfig{Name: cfg.Name, Bind: cfg.Bind, Advertise: cfg.Advertise,
		Key: cfg.Key, Meta: meta, Log: cfg.GossipLog, Debug: cfg.Debug})
	if err != nil {
		return nil, err
	}
	if cfg.Slots > 0 && meta.Control == "" {
		meta.Control = net.JoinHostPort(cl.advertiseIP(), strconv.Itoa(a.ln.Addr().(*net.TCPAddr).Port))
		cl.setMeta(meta)
		if err := cl.ml.UpdateNode(time.Second); err != nil {
			cl.close()
			return nil, fmt.Errorf("advertise control address: %w", err)
		}
	}
	a.cl = cl
	if a.ln != nil {
		sweepStaleDirs(os.TempDir(), a.log)
		var ctx context.Context
		ctx, a.stopAccept = context.WithCancel(context.Background())
		a.wg.Add(1)
		go a.accept(ctx)
	}
	return a, nil
}

// sweepStaleDirs removes the job directories that agents killed by SIGKILL left behind:
// golaunch-* directories of this user, older than a minute, whose PMI socket nobody
// listens on any more. (A live agent's socket accepts the probe connection, which it
// then sees close before init.)
func sweepStaleDirs(tmp string, lg *log.Logger) {
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "golaunch-") {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		st, err := os.Stat(dir)
		if err != nil {
			continue // removed meanwhile (another golaunch's job ended)
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if !ok || int(sys.Uid) != os.Getuid() || time.Since(st.ModTime()) < time.Minute {
			continue
		}
		sock := filepath.Join(dir, "agent.sock")
		if _, err := os.Lstat(sock); err != nil {
			continue
		}
		c, err := net.DialTimeout("unix", sock, time.Second)
		if err == nil {
			c.Close()
			continue // a live job
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			lg.Printf("removing %s, left by a killed agent", dir)
			os.RemoveAll(dir)
		}
	}
}

// controlAddr is the advertised control address ("" for a submitter's member).
func (a *Agent) controlAddr() string {
	m, _ := DecodeMeta(a.cl.currentMeta())
	return m.Control
}

// accept serves the control listener until close (internal/accept): an Accept error
// (out of descriptors, say) is retried after a back-off. Each connection goes to admit,
// which bounds the pending handshakes (handshakes.go). Strangers' connections and failed
// accepts are logged as rate-limited summaries.
func (a *Agent) accept(ctx context.Context) {
	defer a.wg.Done()
	cfg := accept.Config{
		Retry: func(err error, backoff time.Duration) {
			a.strangers.note(logAcceptFailed, fmt.Sprintf("%v; retrying in %v", err, backoff))
		},
	}
	accept.Serve(ctx, a.ln, cfg, func(c net.Conn, release func()) {
		release() // admit bounds the pending handshakes itself
		a.admit(c)
	})
}

// close aborts every job, stops accepting, and leaves the cluster.
func (a *Agent) close() {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.closed = true
	if a.ln != nil {
		a.stopAccept()
		a.ln.Close()
	}
	for c := range a.conns {
		c.Close()
	}
	jobs := make([]*agentJob, 0, len(a.jobs))
	for j := range a.jobs {
		jobs = append(jobs, j)
	}
	a.mu.Unlock()
	for _, j := range jobs {
		j.conn.close() // the job's reader sees it and aborts its ranks
	}
	a.wg.Wait()
	a.strangers.flush()
	a.cl.close()
}

// diagFallback logs once per process that the PMIx servers scan /proc/net/tcp for want
// of sock_diag (pmi.PMIxServer.Fallback): every job's server would say the same.
var diagFallback sync.Once

// agentJob is an agent's part of one job: its local ranks, their PMI server and exchange.
// The control connection's reader goroutine (runJob) owns the job's lifecycle; the rank
// waiters, output pumps and PMI handlers report through send; mu guards the fields below.
type agentJob struct {
	a     *Agent
	spec  jobSpec
	conn  *ctlConn
	path  string   // resolved program
	paths []string // MPMD: the resolved program of each of spec.Apps with ranks here ("" for the others)
	dir   string   // 0700 directory of the PMI socket
	sock  string
	x     *pmi.Exchange
	srv   *pmi.Server
	pmix  *pmi.PMIxServer // the same job's PMIx server, for Open MPI programs (pmixenv.go)
	sp    *spawner
	local []int // this host's ranks, in order; spawns append to it (under mu)
	cpus  []int // the processors this agent may use, which its ranks are bound within (bind.go)

	mu         sync.Mutex
	procs      map[int]*rankProc
	reaped     int // ranks of procs whose exit waitRank has taken
	connected  map[int]bool
	finalized  map[int]bool
	failed     map[int]bool   // ranks the submitter reported failed (--ft: fProcFailed)
	obsLost    map[int]string // what ranks could not write of their observation (keyObserveLost)
	aborting   bool
	sent       map[int]bool // signals this agent sent to its ranks' groups
	abortCause string
	killTimer  *time.Timer
	waiters    sync.WaitGroup // one per started rank
	stdinQ     chan []byte    // rank 0's stdin data, written by stdinWriter
	grow       agentGrowth    // the roster as spawns grew it, their groups and requests (growagent.go)
	fetch      fetcher        // links to the agents that hold other hosts' puts (fetch.go)
	round      localRound     // the multi-host fence round of the ranks here (fencewire.go); under mu
	tree       treeFence      // gathering rounds' payloads down the job's tree (treefence.go)
}

func (j *agentJob) host() string { return j.spec.Roster.Hosts[j.spec.Node] }

// send writes a frame to the submitter; errors mean it is gone (the reader notices).
func (j *agentJob) send(t frameType, v any) error { return j.conn.send(t, v) }

// runJob serves one submitter's job on cc until the job is over, then cleans up.
func (a *Agent) runJob(cc *ctlConn) {
	defer cc.close()
	cc.c.SetReadDeadline(time.Now().Add(jobSetupTimeout))
	t, p, err := cc.recv()
	if err == nil && t == fFetch {
		a.serveFetchLink(cc, p) // another agent of a job asks for this one's puts
		return
	}
	if err == nil && t == fTreeFence {
		a.serveTreeLink(cc, p) // the agent's parent in a job's tree passes its fences' payloads
		return
	}
	if err == nil && t == fTreeSpec {
		if err := a.treeSpecArrived(p); err != nil { // the agent's parent in a job's tree
			a.log.Printf("job spec from %s: %v", cc.c.RemoteAddr(), err)
		}
		return
	}
	if err != nil || (t != fJob && t != fJobTree) {
		a.log.Printf("control connection from %s: no job (%v %v)", cc.c.RemoteAddr(), t, err)
		return
	}
	spec, raw, err := a.jobOf(t, p)
	if err != nil {
		cc.send(fReject, rejectMsg{Msg: err.Error()})
		return
	}
	// From now on the submitter's departure ends the job, during its setup too (a cut link
	// leaves the TCP connection open for minutes, and the start frame may never come).
	// So does this host's isolation from every other host of the job: a host cut off
	// right after the start may never have learned of the submitter through gossip.
	var others []string
	for _, h := range spec.Roster.Hosts {
		if h != a.name {
			others = append(others, h)
		}
	}
	leaves, unwatch := a.cl.watchLeaves(append([]string{spec.Submitter}, others...)...)
	defer unwatch()
	go a.watchSubmitter(cc, spec.ID, spec.Submitter, len(others), leaves)
	beating := make(chan struct{})
	defer close(beating)
	go cc.beat(beating)
	passed := make(chan error, 1)
	go func() { passed <- a.passSpec(spec, raw, peerTiming()) }()
	j, err := a.prepare(cc, spec)
	if perr := <-passed; err == nil && perr != nil {
		j.cleanup()
		err = perr
	}
	if err != nil {
		var ue *UsageError
		cc.send(fReject, rejectMsg{Usage: errors.As(err, &ue), Msg: err.Error()})
		return
	}
	defer j.cleanup()
	a.log.Printf("job %s: %d of %d ranks here, program %s", spec.ID, len(j.local), spec.Roster.Size, j.path)
	if cc.send(fReady, nil) != nil {
		return
	}
	t, _, err = cc.recv()
	if err != nil || t != fStart {
		return // the submitter cancelled (another agent refused) or vanished
	}
	cc.c.SetReadDeadline(time.Time{})
	j.startRanks(j.local)
	j.serve()
}

// prepare checks a pushed job and sets up its directory, PMI server and exchange.
func (a *Agent) prepare(cc *ctlConn, spec *jobSpec) (*agentJob, error) {
	if err := spec.check(); err != nil {
		return nil, fmt.Errorf("agent %s: bad job: %w", a.name, err)
	}
	if h := spec.Roster.Hosts[spec.Node]; h != a.name {
		return nil, fmt.Errorf("agent %s: job for host %q pushed here", a.name, h)
	}
	j := &agentJob{a: a, spec: *spec, conn: cc, local: spec.Roster.RanksOn(spec.Node),
		procs: make(map[int]*rankProc), connected: make(map[int]bool), finalized: make(map[int]bool),
		failed: make(map[int]bool),
		stdinQ: make(chan []byte, stdinWindow+1)}
	if err := j.resolvePrograms(); err != nil {
		return nil, err
	}
	if err := j.checkObserve(); err != nil {
		return nil, err
	}
	var err error
	j.dir, err = os.MkdirTemp("", "golaunch-"+spec.ID+"-")
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", a.name, err)
	}
	j.sock = filepath.Join(j.dir, "agent.sock")
	j.x = pmi.NewExchange(spec.Roster.Size)
	if spec.Rounds > 0 {
		j.x.Complete(spec.Rounds, nil) // a late agent: the job's fences so far
	}
	j.initGrowth()
	if j.srv, err = pmi.Listen(j.sock, (*pmiHandler)(j)); err != nil {
		os.RemoveAll(j.dir)
		return nil, fmt.Errorf("agent %s: %w", a.name, err)
	}
	if j.pmix, err = pmi.ListenPMIx((*pmiHandler)(j), j.pmixJob()); err != nil {
		j.srv.Close()
		os.RemoveAll(j.dir)
		return nil, fmt.Errorf("agent %s: %w", a.name, err)
	}
	if why := j.pmix.Fallback(); why != "" {
		diagFallback.Do(func() { a.log.Printf("PMIx server: %s", why) })
	}
	j.failedBefore()
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		j.srv.Close()
		j.pmix.Close()
		os.RemoveAll(j.dir)
		return nil, fmt.Errorf("agent %s is shutting down", a.name)
	}
	a.jobs[j] = struct{}{}
	a.mu.Unlock()
	// Ranks use tcp only with --transport tcp or across hosts: only then do they get
	// idle-role watches (a one-host auto job runs on shm, and its watcher would only tick).
	tcpMaybe := j.spec.Transport == "tcp" || j.spec.Transport != "shm" && len(j.spec.Roster.Hosts) > 1
	j.sp = newSpawner(tcpMaybe)
	j.cpus = agentCPUs()
	return j, nil
}

// resolvePrograms finds the job's programs here: the one program, or each MPMD program
// that has ranks on this host. One that is not there is the user's mistake.
func (j *agentJob) resolvePrograms() error {
	resolve := func(prog string) (string, error) {
		p, err := resolveProgram(prog)
		if err != nil {
			return "", &UsageError{Msg: fmt.Sprintf("agent %s: %v", j.a.name, err)}
		}
		return p, nil
	}
	if j.spec.Apps == nil {
		var err error
		j.path, err = resolve(j.spec.Program)
		return err
	}
	j.paths = make([]string, len(j.spec.Apps))
	for _, rank := range j.local {
		i := j.spec.appOf(rank)
		if j.paths[i] != "" {
			continue
		}
		p, err := resolve(j.spec.Apps[i].Program)
		if err != nil {
			return err
		}
		j.paths[i] = p
		if j.path == "" {
			j.path = p
		}
	}
	return nil
}

// command returns the program, arguments and -x variables of rank. A spawned rank of an
// MPMD job runs the first program (appOf), resolved here on its first use.
func (j *agentJob) command(rank int) (path string, args, env []string, err error) {
	if j.spec.Apps == nil {
		return j.path, j.spec.Args, j.spec.Env, nil
	}
	i := j.spec.appOf(rank)
	app := j.spec.Apps[i]
	if j.paths[i] == "" {
		if j.paths[i], err = resolveProgram(app.Program); err != nil {
			return "", nil, nil, fmt.Errorf("agent %s: %v", j.a.name, err)
		}
	}
	return j.paths[i], app.Args, append(append([]string(nil), j.spec.Env...), app.Env...), nil
}

// startRanks spawns ranks, this host's ranks of the job. A rank that cannot start is
// reported as ended with an error, and so is every later one, which is not tried; the
// submitter aborts the job. Under --ft each later rank is tried all the same: the job
// goes on without those that cannot start.
func (j *agentJob) startRanks(ranks []int) {
	dir := j.spec.Dir
	if st, err := os.Stat(dir); dir == "" || err != nil || !st.IsDir() {
		dir = "" // the agent's own working directory
	}
	base := os.Environ()
	roster, _ := j.rosterNow()
	var failed error
	for _, rank := range ranks {
		if failed != nil {
			j.send(fExit, exitMsg{Rank: rank, Code: -1, Err: "not started: " + failed.Error()})
			continue
		}
		c := pmi.Contract{JobID: j.spec.ID, Rank: rank, Size: roster.Size,
			LocalRank: roster.LocalRank[rank], LocalSize: roster.LocalSize[j.spec.Node],
			NodeRank: j.spec.Node, NumNodes: len(roster.Hosts), Host: j.host(),
			AgentSock: j.sock, Transport: j.spec.Transport, TCPAddr: j.a.cl.advertiseIP(), HostCPUs: len(j.cpus)}
		c.Spawn, _ = j.groupOf(rank)
		j.mu.Lock()
		aborting := j.aborting
		j.mu.Unlock()
		if aborting {
			failed = errors.New("job aborted during startup")
			j.send(fExit, exitMsg{Rank: rank, Code: -1, Err: "not started: job aborted"})
			continue
		}
		r := rank
		path, args, extra, err := j.command(rank)
		if j.spec.FT {
			extra = append(slices.Clip(extra), pmi.EnvFT+"=1") // after -x: --ft wins
		}
		env := rankEnv(base, extra, c)
		cpus, env := bindRank(j.spec.BindTo, j.cpus, c.LocalRank, c.LocalSize, append(env, j.pmixEnv(c, env)...))
		var conn net.Conn
		var pmiEnd *os.File
		if err == nil {
			conn, pmiEnd, err = pmiSocketpair()
		}
		var p *rankProc
		ring, tfile := j.ringFor(rank, env, dir)
		if err == nil {
			j.srv.ServeConn(conn, rank) // ends when the rank's end is closed (by spawnRank, or at its exit)
			p, err = spawnRank(j.sp, path, args, env, dir, rank,
				c.LocalRank, cpus, pmiEnd, ring, func(stream int, data []byte) { j.send(fOutput, encodeOutput(r, stream, data)) })
		}
		if err != nil && ring != nil {
			ring.Close()
		} else if err == nil {
			p.ring, p.traceFile = ring, tfile
		}
		if err != nil {
			if !j.spec.FT {
				failed = err
			}
			j.send(fExit, exitMsg{Rank: rank, Code: -1, Err: err.Error()})
			continue
		}
		j.mu.Lock()
		j.procs[rank] = p
		j.waiters.Add(1)
		j.mu.Unlock()
		j.send(fStarted, startedMsg{Rank: rank, Pid: p.pid, CPUs: cpus, HostCPUs: len(j.cpus)})
		if p.stdin != nil {
			go j.stdinWriter(p.stdin)
		}
		go j.waitRank(p)
	}
}

// over tells whether every rank of this host has been reaped (or never started): the
// job has nothing left to run here. Called after startRanks.
func (j *agentJob) over() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.reaped == len(j.procs)
}

// waitRank reaps p and reports its end.
func (j *agentJob) waitRank(p *rankProc) {
	defer j.waiters.Done()
	code, sig := p.wait()
	j.mu.Lock()
	j.reaped++
	m := exitMsg{Rank: p.rank, Pid: p.pid, Code: code, Signal: sig,
		Finalized: j.finalized[p.rank], Connected: j.connected[p.rank], OwnSignal: sig != 0 && j.sent[sig],
		Early: !j.aborting, ObsLost: j.obsLost[p.rank]}
	j.mu.Unlock()
	if code == 2 || sig == int(syscall.SIGABRT) {
		m.Panic = p.panics.first() // the Go runtime's exit after a panic, or its crash with GOTRACEBACK=crash
	}
	m.PeerFailed = p.panics.sawPeerFailure()
	if m.TraceRing = j.saveRingOf(p, m.Finalized); m.TraceRing != "" {
		m.Trace = p.traceFile
	}
	j.send(fExit, m)
	close(p.ended)
}

// serve handles the submitter's frames until the job is over or the submitter is gone.
func (j *agentJob) serve() {
	for {
		t, p, err := j.conn.recv()
		if err != nil {
			if j.over() {
				// Every rank here has ended: the connection closed with the job (a local
				// golaunch closes its own agent as the job ends). Nothing is left to abort.
				return
			}
			j.abort(pmi.Event{Kind: pmi.Aborted, Rank: -1, Host: j.host(), Code: 1,
				Cause: "lost the submitter: " + err.Error()}, j.spec.Grace)
			return
		}
		if t == fDone {
			return
		}
		if err := j.handle(t, p); err != nil {
			j.a.log.Printf("job %s: %v", j.spec.ID, err)
			j.abort(pmi.Event{Kind: pmi.Aborted, Rank: -1, Host: j.host(), Code: 1,
				Cause: "control protocol error: " + err.Error()}, j.spec.Grace)
			return
		}
	}
}

func (j *agentJob) handle(t frameType, p []byte) error {
	switch t {
	case fStdin:
		j.stdinQ <- p // never blocks: the submitter keeps at most stdinWindow frames in flight
		return nil
	case fStdinEOF:
		j.stdinQ <- nil
		return nil
	}
	v, err := decodeBody(t, p)
	if err != nil {
		return err
	}
	switch m := v.(type) {
	case *fenceDone:
		return j.fenceDone(p, m, fromSubmitter)
	case *fenceRoundMsg:
		if t != fFenceRef {
			return fmt.Errorf("unexpected %v frame from the submitter", t)
		}
		j.fenceRef(m.Round)
	case *spawnMsg:
		here, err := j.grew(m.Group, m.Roster, m.Addrs)
		if err != nil {
			return err
		}
		j.startRanks(here)
	case *spawnDoneMsg:
		j.groupDone(m)
	case *spawnReplyMsg:
		j.answerSpawn(m)
	case *abortMsg:
		j.abort(pmi.Event{Kind: pmi.EventKind(m.Kind), Rank: m.Rank, Host: m.Host, Code: m.Code, Cause: m.Cause}, j.spec.Grace)
	case *procFailedMsg:
		return j.procFailed(m)
	case *hostFailedMsg:
		if len(m.Pids) != len(m.Ranks) {
			return fmt.Errorf("host-failed frame for %d ranks with %d pids", len(m.Ranks), len(m.Pids))
		}
		j.treeHostLost(m.Host)
		for i, rank := range m.Ranks {
			err := j.procFailed(&procFailedMsg{Rank: rank, Host: m.Host, Code: m.Code,
				Cause: rankLabel(rank, m.Host, m.Pids[i]) + " lost: " + m.Why})
			if err != nil {
				return err
			}
		}
	case *signalMsg:
		j.signalAll(syscall.Signal(m.Signal))
	case *reportReqMsg:
		j.srv.Notify(-1, pmi.Event{Kind: pmi.ReportAsked, Rank: -1, Stacks: m.Stacks})
		j.reportStalled()
		j.reportForeign()
	default:
		return fmt.Errorf("unexpected %v frame from the submitter", t)
	}
	return nil
}

// procFailed takes the submitter's word that rank m.Rank of a fault-tolerant job failed:
// every rank here gets a pmi.ProcFailed event naming it (and so does every rank that
// reaches init later), and fences complete without it. A second word on the same rank
// does nothing.
func (j *agentJob) procFailed(m *procFailedMsg) error {
	if roster, _ := j.rosterNow(); !j.spec.FT || m.Rank < 0 || m.Rank >= roster.Size {
		return fmt.Errorf("proc-failed frame for rank %d of a %d-rank job (--ft %v)", m.Rank, roster.Size, j.spec.FT)
	}
	j.mu.Lock()
	seen := j.failed[m.Rank]
	j.failed[m.Rank] = true
	j.mu.Unlock()
	if seen {
		return nil
	}
	j.a.log.Printf("job %s: %s; the job goes on (--ft)", j.spec.ID, m.Cause)
	j.srv.Announce(pmi.Event{Kind: pmi.ProcFailed, Rank: m.Rank, Host: m.Host, Code: m.Code, Cause: m.Cause})
	j.x.Exclude(m.Rank)
	j.mu.Lock()
	f, err := j.roundReadyLocked() // the rank may be the last one here the round waited for
	j.mu.Unlock()
	return j.sendRound(f, err)
}

// stdinWindow is how many stdin frames a submitter may have in flight to an agent.
const stdinWindow = 4

// stdinWriter copies queued stdin frames to rank 0's stdin, acknowledging each; a nil
// frame (EOF) closes it. A rank that stopped reading only stalls this goroutine.
func (j *agentJob) stdinWriter(w *os.File) {
	broken := false
	for data := range j.stdinQ {
		if data == nil {
			break
		}
		if !broken {
			if _, err := w.Write(data); err != nil {
				broken = true // rank 0 closed its stdin or exited
			}
		}
		if j.send(fStdinAck, nil) != nil {
			break
		}
	}
	w.Close()
}

// cleanup kills whatever is left of the job's process groups, waits for every rank,
// and removes the job's socket and directory.
func (j *agentJob) cleanup() {
	if !j.over() {
		j.abort(pmi.Event{Kind: pmi.Aborted, Rank: -1, Host: j.host(), Code: 1, Cause: "job ended"}, j.spec.Grace)
	}
	j.waiters.Wait()
	j.mu.Lock()
	if j.killTimer != nil {
		j.killTimer.Stop()
	}
	for _, p := range j.procs {
		signalGroup(p.pid, syscall.SIGKILL) // descendants left in a rank's group
	}
	j.mu.Unlock()
	j.sp.stop()
	j.closeFetch()
	j.closeTree()
	j.srv.Close()
	j.pmix.Close()
	os.RemoveAll(j.dir)
	close(j.stdinQ)
	j.a.mu.Lock()
	delete(j.a.jobs, j)
	j.a.mu.Unlock()
	j.a.log.Printf("job %s: done", j.spec.ID)
}
