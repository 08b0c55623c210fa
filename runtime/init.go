package runtime

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/runtime/internal/subcore"
	"github.com/gorma-hpc/gorma/runtime/internal/testhook"
	"github.com/gorma-hpc/gorma/transport/verbs"
	"github.com/gorma-hpc/gorma/transport/verbs/idlewatch"
)

// Environment variables read by Init.
const (
	EnvProgress   = "GORMA_PROGRESS"    // spin, hybrid (default) or block
	EnvEagerLimit = "GORMA_EAGER_LIMIT" // bytes; suffixes K and M (powers of 1024)
	EnvSpin       = "GORMA_SPIN"        // hybrid mode's spin budget, a Go duration (default: the waiting rule, hostfit.go)
	EnvProcs      = "GORMA_PROCS"       // auto (default), go or a count: the rank's GOMAXPROCS (hostfit.go)
	EnvFT         = pmi.EnvFT           // 1: fault-tolerant mode (ulfm.go): a failure fails calls, not the job
	// EnvTCPCongestion is the tcp transport's congestion control: cubic (the default),
	// system for the kernel's default, or another that the kernel allows.
	EnvTCPCongestion = "GORMA_TCP_CONGESTION"
)

// Default eager limits: the largest message sent by copy; larger ones use rendezvous.
const (
	DefaultEagerSHM = 16 << 10
	DefaultEagerTCP = 64 << 10
	maxEagerLimit   = 16 << 20
)

// config is what Init reads from the environment.
type config struct {
	progress verbs.WaitMode // GORMA_PROGRESS
	spin     time.Duration  // the tcp provider's spin: GORMA_SPIN, else verbs.DefaultSpin
	spinSet  time.Duration  // GORMA_SPIN, 0 when unset
	procs    procsPolicy    // GORMA_PROCS
	// procsFit is the GOMAXPROCS that GORMA_PROCS=auto set (hostfit.go), 0 if it left Go's.
	procsFit int
	waiting  *subcore.Waiting // the engine's waiting rule, which crossHost updates
	// maxProcsSet is true when the GOMAXPROCS variable is set, or the program set
	// GOMAXPROCS before Init (GORMA_PROCS=auto leaves it).
	maxProcsSet bool
	debug       bool // GORMA_DEBUG set: Init prints the host fit (hostfit.go)
	fold        bool // GORMA_FOLD: fold away from other work (fold.go)
	eagerSHM    int
	eagerTCP    int
	tcpCC       string // GORMA_TCP_CONGESTION, "" for the provider's default
	ft          bool   // GORMA_FT=1 (ft.go)
	transport   string // from the launch contract
	tcpAddr     string
	profDir     string // GORMA_PROFILE (observe.go)
	traceFile   string // GORMA_TRACE
	summary     bool   // GORMA_SUMMARY=1
	traceEvents int    // GORMA_TRACE_EVENTS
	// traceRing is the flight recorder's ring file golaunch passed (pmi.EnvTraceRing),
	// until Init maps it; nil if none.
	traceRing *os.File
	// idleWatch is the rank's idle-role watch from the launch contract, until the tcp
	// device takes it (openDevice); nil if none or taken.
	idleWatch *idlewatch.Files
}

// inheritIdleWatch wraps the inherited descriptors of an idle-role watch, close-on-exec so
// that the rank's own children do not inherit them.
func inheritIdleWatch(fds [2]int) *idlewatch.Files {
	for _, fd := range fds {
		syscall.CloseOnExec(fd)
	}
	return &idlewatch.Files{
		Page: os.NewFile(uintptr(fds[0]), "idle-watch-page"),
		Bell: os.NewFile(uintptr(fds[1]), "idle-watch-bell"),
	}
}

// closeIdleWatch closes a watch that no device took.
func closeIdleWatch(w *idlewatch.Files) {
	if w != nil {
		w.Page.Close()
		w.Bell.Close()
	}
}

func readConfig(getenv func(string) string) (config, error) {
	cfg := config{spin: verbs.DefaultSpin, eagerSHM: DefaultEagerSHM, eagerTCP: DefaultEagerTCP}
	switch v := getenv(EnvProgress); v {
	case "", "hybrid":
		cfg.progress = verbs.WaitHybrid
	case "spin":
		cfg.progress = verbs.WaitSpin
	case "block":
		cfg.progress = verbs.WaitBlock
	default:
		return cfg, fmt.Errorf("%w: %s=%q: want spin, hybrid or block", ErrConfig, EnvProgress, v)
	}
	switch v := getenv(envFold); v {
	case "", "on":
		cfg.fold = true
	case "off":
	default:
		return cfg, fmt.Errorf("%w: %s=%q: want on or off", ErrConfig, envFold, v)
	}
	if v := getenv(EnvSpin); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > time.Second {
			return cfg, fmt.Errorf("%w: %s=%q: want a duration from 1us to 1s, such as 50us or 2ms", ErrConfig, EnvSpin, v)
		}
		cfg.spin, cfg.spinSet = d, d
	}
	var err error
	if cfg.procs, err = parseProcs(getenv(EnvProcs)); err != nil {
		return cfg, err
	}
	cfg.maxProcsSet = getenv("GOMAXPROCS") != "" || goruntime.GOMAXPROCS(0) != startProcs
	cfg.debug = getenv(envDebug) != "" && getenv(envDebug) != "0"
	if v := getenv(EnvEagerLimit); v != "" {
		n, err := parseSize(v)
		if err != nil || n > maxEagerLimit {
			return cfg, fmt.Errorf("%w: %s=%q: want a byte count from 0 to %d, such as 8192, 16K or 1M", ErrConfig, EnvEagerLimit, v, maxEagerLimit)
		}
		cfg.eagerSHM, cfg.eagerTCP = n, n
	}
	switch v := getenv(EnvFT); v {
	case "", "0":
	case "1":
		cfg.ft = true
		if min(cfg.eagerSHM, cfg.eagerTCP) < ftMinEager {
			return cfg, fmt.Errorf("%w: %s=1 needs %s of at least %d bytes (the fault-tolerant protocols' messages travel eagerly)",
				ErrConfig, EnvFT, EnvEagerLimit, ftMinEager)
		}
	default:
		return cfg, fmt.Errorf("%w: %s=%q: want 1 (fault-tolerant mode) or 0", ErrConfig, EnvFT, v)
	}
	if err := readObserve(&cfg, getenv); err != nil {
		return cfg, err
	}
	if v := getenv(EnvTCPCongestion); v != "" {
		if !validCongestion(v) {
			return cfg, fmt.Errorf("%w: %s=%q: want the name of a TCP congestion control such as cubic or reno (see /proc/sys/net/ipv4/tcp_allowed_congestion_control), or system for the kernel's default", ErrConfig, EnvTCPCongestion, v)
		}
		cfg.tcpCC = v
	}
	return cfg, nil
}

// validCongestion reports whether v can name a TCP congestion control: 1 to 15 lower-case
// letters, digits, '_' or '-' (the kernel's names fit in 16 bytes with their NUL).
func validCongestion(v string) bool {
	if len(v) == 0 || len(v) > 15 {
		return false
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func parseSize(s string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "K"), strings.HasSuffix(s, "k"):
		mult, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "m"):
		mult, s = 1<<20, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > maxEagerLimit/mult {
		return 0, errors.New("bad size")
	}
	return n * mult, nil
}

// options are initWith's knobs (tests set them through testhook).
type options struct {
	getenv   func(string) string
	hostSalt string
	exit     func(int)
}

func init() {
	testhook.Init = func(ctx context.Context, o testhook.Options) (any, error) {
		return initWith(ctx, options{getenv: o.Getenv, hostSalt: o.HostSalt, exit: o.Exit})
	}
	testhook.ArenaUse = func(w any) (inUse, liveMRs int64) {
		for _, d := range w.(*World).e.links.devs {
			st := d.dev.Stats()
			inUse += st.InUse
			liveMRs += st.LiveMRs
		}
		return inUse, liveMRs
	}
}

// Init joins the job this process was launched into and returns its World. It finds the
// job's process manager in this order:
//
//  1. golaunch's launch contract (GOLAUNCH_*): its local agent;
//  2. a PMI-1, PMI-2 or PMIx server (Slurm, Hydra, Flux, mpirun): pmi.Detect;
//  3. neither: a world of one rank.
//
// Peers use shm on this host and tcp otherwise, connecting on first contact. A bad GORMA_*
// value is an ErrConfig error. If Init fails after reaching a process manager, the job is
// aborted.
func Init(ctx context.Context) (*World, error) {
	return initWith(ctx, options{getenv: os.Getenv})
}

func initWith(ctx context.Context, o options) (*World, error) {
	if o.exit == nil {
		o.exit = osExit
	}
	cfg, err := readConfig(o.getenv)
	if err != nil {
		return nil, fmt.Errorf("runtime: init: %w", err)
	}
	c, err := pmi.ReadContract(o.getenv)
	switch {
	case err == nil:
		return aligned(ctx)(initAgent(ctx, cfg, c, o))
	case !errors.Is(err, pmi.ErrNoContract):
		return nil, fmt.Errorf("runtime: init: %w", err)
	case pmi.Detect(o.getenv):
		return aligned(ctx)(initForeign(ctx, cfg, o))
	}
	noteSingleton(o.getenv, os.Stderr) // singleton.go
	return worldOfOne(cfg, o), nil
}

// dialAgent connects rank c.Rank to its agent: over the rank's own PMI_FD, the end of a
// socketpair that golaunch's agent gives every rank it starts and serves with the same
// server as its socket, or, without PMI_FD, over the agent's socket. Taking PMI_FD also
// keeps the descriptor from leaking into programs the rank starts.
func dialAgent(ctx context.Context, c pmi.Contract, getenv func(string) string) (*pmi.Client, error) {
	v := getenv(pmi.EnvPMIFD)
	if v == "" {
		return pmi.Dial(ctx, c.AgentSock, c.Rank, c.JobID)
	}
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%w: %s=%q: want the descriptor golaunch passed (an integer >= 3)", ErrConfig, pmi.EnvPMIFD, v)
	}
	f := os.NewFile(uintptr(fd), pmi.EnvPMIFD)
	conn, err := net.FileConn(f)
	f.Close() // FileConn holds its own duplicate
	if err != nil {
		return nil, fmt.Errorf("%w: %s=%d is not the agent's socket: %w", ErrConfig, pmi.EnvPMIFD, fd, err)
	}
	return pmi.DialConn(ctx, conn, c.Rank, c.JobID)
}

// initAgent joins a job that golaunch started, through the agent named by contract c.
func initAgent(ctx context.Context, cfg config, c pmi.Contract, o options) (*World, error) {
	cfg.transport, cfg.tcpAddr = c.Transport, c.TCPAddr
	if c.IdleWatch != [2]int{} {
		cfg.idleWatch = inheritIdleWatch(c.IdleWatch)
	}
	client, err := dialAgent(ctx, c, o.getenv)
	if err != nil {
		closeIdleWatch(cfg.idleWatch)
		return nil, fmt.Errorf("runtime: init rank %d: %w", c.Rank, err)
	}
	if size := client.Info().Size; size < c.Size { // more: the job grew since this rank started (spawn.go)
		closeIdleWatch(cfg.idleWatch)
		client.Close()
		return nil, fmt.Errorf("runtime: init rank %d: the agent says the job has %d ranks, %s says %d", c.Rank, size, pmi.EnvSize, c.Size)
	}
	e := newEngine(cfg, c.Rank, c.Size, c.Host, o.exit)
	e.localRank, e.localSize = c.LocalRank, c.LocalSize
	e.spawn.group = c.Spawn
	if c.HostCPUs > 0 {
		e.ncpu = c.HostCPUs // fitHost's cap where the ranks are not siblings
	}
	j := join{e}
	j.fitHost()
	e.pm, e.links.pm, e.links.cm.secret = client, client, client.Info().Secret
	err = j.connect(ctx, identityWith(o.hostSalt), client.Info())
	closeIdleWatch(e.cfg.idleWatch) // not taken: no tcp device
	e.cfg.idleWatch = nil
	if err != nil {
		e.shutdown()
		client.Close()
		if errors.Is(err, pmi.ErrAborted) {
			return nil, withOp("init", agentErr(err)) // names the rank golaunch blames
		}
		return nil, fmt.Errorf("runtime: init rank %d: %w", c.Rank, err)
	}
	e.start()
	if c.Spawn.Count == 0 {
		return e.rootWorld(), nil
	}
	w := e.spawn.groupWorld(c.Spawn) // spawn.go
	if err := e.spawn.joinParent(ctx, w, c.Spawn); err != nil {
		e.shutdown()
		client.Close()
		e.bg.Wait()
		return nil, fmt.Errorf("runtime: init rank %d: %w", c.Rank, err)
	}
	return w, nil
}

// rootWorld returns Init's World of e, which Finalize runs the attribute delete
// functions of.
func (c *comms) rootWorld() *World {
	e := c.e
	e.all = wholeGroup(e)
	e.root = &World{e: e, k: whole{}, g: e.all, own: e.all}
	e.ft.register(e.root, e.all.ranks)
	return e.root
}

func newEngine(cfg config, rank, size int, host string, exit func(int)) *engine {
	e := &engine{rank: rank, size: size, host: host, localSize: 1, cfg: cfg, exit: exit, ncpu: goruntime.NumCPU()}
	e.counted.Store(true)
	subcore.AddProcessRank(1)
	e.comms.e, e.lifecycle.e, e.failures.e, e.spawn.e = e, e, e, e
	e.rma.e, e.rndv.e, e.watch.e = e, e, e
	e.ft.e, e.ft.on = e, cfg.ft
	e.ctxs = newCtxAlloc()
	e.poll.init(cfg.progress)
	join{e}.setWaiting(waitRule(cfg.progress, cfg.spinSet, false, goruntime.GOMAXPROCS(0)))
	e.stop, e.halt = context.WithCancel(context.Background())
	e.links.init(&e.mu, &e.cfg, e.stop, rank, size, host, hooksOf(e))
	e.rma.remotes = map[*remote]struct{}{}
	e.obs.init(&e.cfg, rank, size)
	return e
}

// hooksOf is how the engine answers its links (links.go).
func hooksOf(e *engine) linkHooks {
	return linkHooks{
		failed: e.peerFailedLocked,
		ready: func(p *peer) {
			e.poll.addPeer(p)
			e.pumpLocked(p)
			e.poll.kickLocked()
		},
		refusal: func() (error, bool) { return e.checkLocked(), e.aborted != nil },
		devices: e.spawn.devicesOpenedLocked,
	}
}

func worldOfOne(cfg config, o options) *World {
	host, _ := os.Hostname()
	e := newEngine(cfg, 0, 1, host, o.exit)
	return e.rootWorld()
}

func identityWith(salt string) hostIdentity {
	id := localIdentity()
	if salt != "" {
		h := fnv.New64a()
		h.Write([]byte(salt))
		id.netNS ^= h.Sum64()
	}
	return id
}

// start launches the engine's goroutines: the agent event watcher (golaunch's agent
// only) and, with two devices, one relay per completion queue; and lets the connection
// listener answer.
func (l *lifecycle) start() {
	e := l.e
	if e.links.cm.ln != nil {
		e.links.cm.openCM()
	}
	if es, ok := e.pm.(eventSource); ok {
		e.mu.Lock()
		e.watched = true
		e.mu.Unlock()
		e.bg.Add(1)
		go e.watchEvents(es.Events())
	}
	if len(e.links.devs) > 1 {
		for _, d := range e.links.devs {
			rl := &relay{cq: d.cq, polled: make(chan struct{}, 1)}
			e.poll.relays = append(e.poll.relays, rl)
			e.bg.Add(1)
			go func() {
				defer e.bg.Done()
				e.poll.runRelay(rl, e.stop)
			}()
		}
	}
}

// shutdown stops the engine's goroutines and closes its devices.
func (l *lifecycle) shutdown() {
	e := l.e
	e.halt()
	e.links.cm.closeCM() // no set-up is under way once it returns
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.poll.active {
		e.poll.unwatch() // the last context the poller watched
	}
	e.links.closeListenersLocked()
	e.rma.closeRemotesLocked() // mappings of peers' arenas go before the devices
	e.closeDevicesLocked()
}

// closeDevicesLocked closes the devices once no poller spins any more: the spin reads the
// fast boxes, which are arena memory, without mu.
func (e *engine) closeDevicesLocked() {
	if e.counted.CompareAndSwap(true, false) {
		subcore.AddProcessRank(-1)
	}
	for _, p := range e.poll.boxList() {
		p.fin.off.Store(true)
	}
	for e.poll.active {
		e.poll.kick()
		e.mu.Unlock()
		time.Sleep(10 * time.Microsecond)
		e.mu.Lock()
	}
	e.links.closeFastboxesLocked()
	for _, d := range e.links.devs {
		d.close()
	}
}
