package pmi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorma-hpc/gorma/internal/accept"
)

// PMIxJob is what a PMIx server tells the ranks of its job.
type PMIxJob struct {
	Nspace   string   // the job's namespace (PMIX_NAMESPACE)
	JobID    string   // the job as Handler.Init knows it
	Hosts    []string // every node's name, by node index
	NodeOf   []int    // every rank's node index
	AppNum   []int    // every rank's program (MPMD); nil: all 0
	Universe int      // ranks the job may grow to; 0: the job's size
	Node     int      // the node this server runs on
	// Topology, if not nil, returns this node's hwloc topology as XML (v2), or "". The
	// server asks once, at the first job-data request, and hands it to the ranks as
	// pmix.hwlocxml2: Open MPI then skips discovering the topology in every rank.
	Topology func() string
}

func (j PMIxJob) check() error {
	if j.Nspace == "" || len(j.NodeOf) == 0 || j.Node < 0 || j.Node >= len(j.Hosts) {
		return fmt.Errorf("pmi: PMIx job %q: %d ranks, node %d of %d hosts", j.Nspace, len(j.NodeOf), j.Node, len(j.Hosts))
	}
	for r, n := range j.NodeOf {
		if n < 0 || n >= len(j.Hosts) {
			return fmt.Errorf("pmi: PMIx job %q: rank %d on node %d of %d", j.Nspace, r, n, len(j.Hosts))
		}
	}
	if j.AppNum != nil && len(j.AppNum) != len(j.NodeOf) {
		return fmt.Errorf("pmi: PMIx job %q: %d appnums for %d ranks", j.Nspace, len(j.AppNum), len(j.NodeOf))
	}
	return nil
}

// The PMIx version whose wire the server speaks, as its ranks' PMIX_VERSION says.
const PMIxServerVersion = "4.2.2"

// Limits of the server's connections.
const (
	pmixConnectTimeout = 10 * time.Second // for a new connection's connect message
	pmixMaxPending     = 256              // connections accepted and not yet past their connect
)

// PMIxServer serves the PMIx wire of OpenPMIx 4.1 and later to the ranks of one job on
// this node, over TCP on the loopback address, in front of the same Handler as the PMI-1
// server (design.md, "The PMIx server"). Each connection has its own goroutine; Close
// stops them all.
type PMIxServer struct {
	h       Handler
	job     PMIxJob
	jobOnce sync.Once
	jobData []byte        // the answer to a job-data request, built at the first
	uid     atomic.Uint32 // the user whose processes may connect
	ln      net.Listener
	peers   *peerTable // the owners of the connections' peer sockets
	stop    context.CancelFunc
	ctx     context.Context
	wg      sync.WaitGroup

	mu      sync.Mutex
	conns   map[*pxConn]struct{}
	calls   map[int]*callLog // the requests of each rank's connection, kept after it ends
	pindex  uint32
	cleanup []pmixCleanup // what ranks registered for removal at Close
	closed  bool
}

// ListenPMIx serves job's ranks on a new loopback TCP port, in front of h. Only
// processes of this process's user may connect.
func ListenPMIx(h Handler, job PMIxJob) (*PMIxServer, error) {
	if err := job.check(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("pmi: PMIx server: listen on the loopback address: %w", err)
	}
	s := &PMIxServer{h: h, job: job, ln: ln, conns: map[*pxConn]struct{}{}, calls: map[int]*callLog{}}
	s.peers = newPeerTable(ln.Addr().(*net.TCPAddr))
	s.uid.Store(uint32(os.Getuid()))
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		accept.Serve(s.ctx, ln, accept.Config{MaxPending: pmixMaxPending}, func(c net.Conn, release func()) {
			s.add(c, release)
		})
	}()
	return s, nil
}

// Fallback says how the server finds the owner of a connection's peer when the kernel
// answers no sock_diag query, and why: by a scan of /proc/net/tcp per connection, whose
// cost grows with the host's sockets. It is "" where the kernel answers them.
func (s *PMIxServer) Fallback() string {
	if s.peers.why == "" {
		return ""
	}
	return s.peers.why + ": each connection's peer is found by a scan of /proc/net/tcp, whose cost grows with the host's sockets"
}

// SetUID makes the server admit the processes of uid instead of this process's user
// (a test that runs its ranks as another user). Call it before any rank connects.
func (s *PMIxServer) SetUID(uid uint32) { s.uid.Store(uid) }

// URI is the server's address as PMIX_SERVER_URI* give it: "nspace.rank;tcp4://addr".
func (s *PMIxServer) URI() string {
	return s.srvNspace() + "." + strconv.Itoa(s.job.Node) + ";tcp4://" + s.ln.Addr().String()
}

func (s *PMIxServer) srvNspace() string { return s.job.Nspace + ".agent" }

// Environ is the environment rank needs to reach the server: every PMIX_SERVER_URI*
// names it (a client of an older PMIx finds it too, and is refused with a message that
// names its version), with the namespace, the rank, the credential module, the buffer
// type, the data store and the node's name as the job data names it. It is nil for a
// rank outside the job.
func (s *PMIxServer) Environ(rank int) []string {
	if rank < 0 || rank >= len(s.job.NodeOf) {
		return nil
	}
	uri := s.URI()
	env := []string{EnvPMIxURI41 + "=" + uri}
	for _, k := range pmixOlderURIs {
		env = append(env, k+"="+uri)
	}
	tmp := os.TempDir()
	return append(env,
		EnvPMIxNamespace+"="+s.job.Nspace,
		EnvPMIxRank+"="+strconv.Itoa(rank),
		"PMIX_ID="+s.job.Nspace+"."+strconv.Itoa(rank),
		EnvPMIxSecurity+"="+pmixSecNative,
		"PMIX_BFROP_BUFFER_TYPE=PMIX_BFROP_BUFFER_NON_DESC",
		"PMIX_GDS_MODULE="+pmixGDS,
		EnvPMIxVersion+"="+PMIxServerVersion,
		"PMIX_HOSTNAME="+s.job.Hosts[s.job.NodeOf[rank]],
		"PMIX_SERVER_NSPACE="+s.srvNspace(),
		"PMIX_SERVER_RANK="+strconv.Itoa(s.job.Node),
		"PMIX_SYSTEM_TMPDIR="+tmp,
		"PMIX_SERVER_TMPDIR="+tmp,
	)
}

// Close stops the server, closes every connection, waits for their goroutines, and
// removes the files and directories the ranks registered for cleanup.
func (s *PMIxServer) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for c := range s.conns {
		c.c.Close()
	}
	s.mu.Unlock()
	s.stop()
	s.wg.Wait()
	s.peers.close()
	s.mu.Lock()
	cls := s.cleanup
	s.mu.Unlock()
	for _, cl := range cls {
		for _, f := range cl.files {
			os.Remove(f)
		}
		for _, d := range cl.dirs {
			if cl.recurse {
				os.RemoveAll(d)
			} else {
				os.Remove(d)
			}
			// Open MPI registers its job's directory in a parent that it made too and
			// removes only in MPI_Finalize: the parent goes as well once it is empty.
			os.Remove(filepath.Dir(d))
		}
	}
	return nil
}

// pxConn is one client's connection.
type pxConn struct {
	c      net.Conn
	wmu    sync.Mutex
	rank   int // -1 until the connect is accepted
	pindex uint32
	blocks []pmixBlock // everything the rank committed (reader goroutine only)
	fences chan pxFence
	gets   sync.WaitGroup // gets in flight, each on its own goroutine
	log    callLog        // its requests, for Calls
}

// pxFence is a fence request queued for the connection's fence goroutine, with the
// rank's data as it stood when the fence arrived. A fence that does not collect leaves
// the data with the rank's server where the Handler can (Barrierer): a rank of another
// host gets it on its first get (direct modex).
type pxFence struct {
	tag     uint32
	data    []byte
	collect bool
	at      time.Time // when it arrived
}

// pmixDataKey is the Handler key under which a rank's committed data travels.
const pmixDataKey = "pmix-data"

// add runs on the accept goroutine: one sock_diag query for the peer's socket, then the
// connection's own goroutine.
func (s *PMIxServer) add(c net.Conn, release func()) {
	// Another user's process is closed at once, before it can hold a pending slot. The
	// owner found here is the one the connect's credential must name.
	peer, err := s.peers.lookup(c)
	if err != nil || peer.uid != s.uid.Load() {
		release()
		c.Close()
		why := fmt.Sprintf("a process of uid %d; the job's uid is %d", peer.uid, s.uid.Load())
		if err != nil {
			why = "the peer's user is unknown: " + err.Error()
		}
		s.report(-1, "connect", fmt.Errorf("%w: connection refused: %s", ErrProtocol, why))
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		release()
		c.Close()
		return
	}
	pc := &pxConn{c: c, rank: -1}
	s.conns[pc] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.conns, pc)
			s.mu.Unlock()
			c.Close()
		}()
		ok := s.connect(pc, peer)
		release()
		if ok {
			s.serve(pc)
		}
	}()
}

// serve reads a connected rank's requests until its connection ends. Fences run in
// order on their own goroutine, so that an abort or a get is served while a fence waits.
func (s *PMIxServer) serve(pc *pxConn) {
	defer s.h.Gone(pc.rank)
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	pc.fences = make(chan pxFence, 16)
	fenceDone := make(chan struct{})
	go func() {
		defer close(fenceDone)
		for f := range pc.fences {
			s.fence(ctx, pc, f)
		}
	}()
	defer func() {
		close(pc.fences)
		cancel()
		<-fenceDone
		pc.gets.Wait()
	}()
	var hb [pmixHdrLen]byte
	for {
		if _, err := io.ReadFull(pc.c, hb[:]); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && s.ctx.Err() == nil {
				s.report(pc.rank, "read", fmt.Errorf("%w: a message cut short: %v", ErrProtocol, err))
			}
			return
		}
		h, err := parsePMIxHdr(hb[:])
		if err == nil && uint32(h.pindex) != pc.pindex {
			err = fmt.Errorf("%w: message of client index %d on the connection of index %d", ErrProtocol, h.pindex, pc.pindex)
		}
		if err != nil {
			s.report(pc.rank, "read", err)
			return
		}
		body := make([]byte, h.nbytes)
		if _, err := io.ReadFull(pc.c, body); err != nil {
			s.report(pc.rank, "read", fmt.Errorf("%w: a message of %d bytes cut short: %v", ErrProtocol, h.nbytes, err))
			return
		}
		cmd, err := s.request(ctx, pc, h.tag, body)
		if err != nil {
			s.report(pc.rank, pmixCmdName(cmd), err)
			return
		}
		if cmd == pmixCmdFinalize {
			return
		}
	}
}

// send writes one answer.
func (pc *pxConn) send(tag uint32, body []byte) {
	msg := appendPMIxHdr(make([]byte, 0, pmixHdrLen+len(body)), pmixHdr{pindex: int32(pc.pindex), tag: tag, nbytes: uint32(len(body))})
	msg = append(msg, body...)
	pc.wmu.Lock()
	defer pc.wmu.Unlock()
	pc.c.Write(msg)
}

// request serves one request; an error is a protocol error that ends the connection.
func (s *PMIxServer) request(ctx context.Context, pc *pxConn, tag uint32, body []byte) (byte, error) {
	cmd, d, err := pmixReqCmd(body)
	if err != nil {
		return cmd, err
	}
	now := time.Now()
	pc.log.begin(pmixCmdName(cmd), now)
	queued := false // a fence the fence goroutine serves, and notes as served
	defer func() {
		if !queued {
			pc.log.end(false)
		}
	}()
	switch cmd {
	case pmixCmdReq:
		d.end()
		if d.err != nil {
			return cmd, d.err
		}
		s.jobOnce.Do(func() {
			xml := ""
			if s.job.Topology != nil {
				xml = s.job.Topology()
			}
			s.jobData = pmixJobData(s.job, xml)
		})
		pc.send(tag, s.jobData)
	case pmixCmdAbort:
		a, err := parsePMIxAbort(d)
		if err != nil {
			return cmd, err
		}
		// No answer: the rank waits in PMIx_Abort until the abort ends it, as an MPICH
		// rank waits after a PMI-1 abort. Open MPI says "N/A" when it has no message.
		if a.msg == "N/A" {
			a.msg = ""
		}
		s.h.Abort(pc.rank, a.code, a.msg)
	case pmixCmdCommit:
		blocks, err := parsePMIxCommit(d)
		if err != nil {
			return cmd, err
		}
		pc.blocks = mergePMIxBlocks(pc.blocks, blocks)
		pc.send(tag, pmixStatusBody(0))
	case pmixCmdFence:
		f, err := parsePMIxFence(d)
		if err != nil {
			return cmd, err
		}
		if !s.wholeJob(f.procs) {
			pc.send(tag, pmixStatusBody(pmixErrNotSupported))
			return cmd, nil
		}
		var data []byte
		if len(pc.blocks) > 0 {
			data = encodePMIxBlocks(pc.blocks)
		}
		queued = true
		pc.fences <- pxFence{tag: tag, data: data, collect: f.collect, at: now}
	case pmixCmdGet:
		g, err := parsePMIxGetReq(d)
		if err != nil {
			return cmd, err
		}
		// On its own goroutine: a get of another host's rank may wait for that host's
		// agent, and the connection's next requests (an abort) must not wait for it.
		queued = true
		pc.gets.Add(1)
		go func() {
			defer pc.gets.Done()
			defer pc.log.end(false)
			pc.send(tag, s.get(ctx, pc, g))
		}()
	case pmixCmdFinalize:
		d.end()
		if d.err != nil {
			return cmd, d.err
		}
		pc.log.finalized()
		s.h.Finalize(pc.rank)
		pc.send(tag, pmixStatusBody(0))
	case pmixCmdRegEvents:
		if err := parsePMIxRegEvents(d); err != nil {
			return cmd, err
		}
		pc.send(tag, pmixStatusBody(0))
	case pmixCmdDeregEvents:
		// No answer: the client does not wait for one.
	case pmixCmdSpawn:
		s.spawn(pc, tag, d)
	case pmixCmdJobControl:
		cl, other, err := parsePMIxJobControl(d)
		if err != nil {
			return cmd, err
		}
		if other {
			pc.send(tag, pmixStatusBody(pmixErrNotSupported))
			return cmd, nil
		}
		cl.files, cl.dirs = absPaths(cl.files), absPaths(cl.dirs)
		s.mu.Lock()
		s.cleanup = append(s.cleanup, cl)
		s.mu.Unlock()
		pc.send(tag, pmixStatusBody(0))
	default:
		if cmd > pmixCmdMax {
			return cmd, fmt.Errorf("%w: unknown command %d", ErrProtocol, cmd)
		}
		pc.send(tag, pmixStatusBody(pmixErrNotSupported))
	}
	return cmd, nil
}

// absPaths keeps the absolute paths of ps, cleaned.
func absPaths(ps []string) []string {
	var out []string
	for _, p := range ps {
		if filepath.IsAbs(p) && filepath.Clean(p) != "/" {
			out = append(out, filepath.Clean(p))
		}
	}
	return out
}

// wholeJob reports whether procs name every rank of the job: the wildcard rank of its
// namespace, or each rank once.
func (s *PMIxServer) wholeJob(procs []pmixProc) bool {
	seen := map[uint32]bool{}
	for _, p := range procs {
		if p.nspace != s.job.Nspace {
			return false
		}
		if p.rank == pmixRankWild {
			return true
		}
		seen[p.rank] = true
	}
	return len(seen) == len(s.job.NodeOf)
}

// fence runs one fence through the Handler and answers it. A fence of an aborting job
// gets no answer: the rank waits until the abort ends it.
func (s *PMIxServer) fence(ctx context.Context, pc *pxConn, f pxFence) {
	pc.log.wait(pmixCmdName(pmixCmdFence), f.at)
	defer pc.log.end(true)
	var puts map[string][]byte
	if f.data != nil {
		puts = map[string][]byte{pmixDataKey: f.data}
	}
	var err error
	if b, ok := s.h.(Barrierer); ok && !f.collect {
		err = b.Barrier(ctx, pc.rank, puts)
	} else {
		err = s.h.Fence(ctx, pc.rank, puts)
	}
	switch {
	case err == nil:
		pc.send(f.tag, pmixStatusBody(0))
	case errors.Is(err, ErrAborted) || ctx.Err() != nil:
	default:
		pc.send(f.tag, pmixStatusBody(-1))
	}
}

// get answers a get: rank's data of the last completed fence, the scopes this rank may
// see. A key missing from it is the client's to report.
func (s *PMIxServer) get(ctx context.Context, pc *pxConn, g pmixGetReq) []byte {
	if g.proc.nspace != s.job.Nspace || int64(g.proc.rank) >= int64(len(s.job.NodeOf)) {
		return pmixStatusBody(pmixErrNotFound)
	}
	v, err := s.h.Get(ctx, int(g.proc.rank), pmixDataKey)
	if err != nil {
		return pmixStatusBody(pmixErrNotFound)
	}
	blocks, err := parsePMIxCommit(&pmixDec{b: v})
	if err != nil {
		return pmixStatusBody(pmixErrNotFound)
	}
	local := s.job.NodeOf[g.proc.rank] == s.job.NodeOf[pc.rank]
	return pmixGetAnswer(s.job.Nspace, g.proc.rank, blocks, local)
}

// pmixJobData builds the answer to a job-data request: the namespace, then the job's
// keys, one info array per node, and one blob per rank. topo is the node's hwloc
// topology as XML, or "".
func pmixJobData(j PMIxJob, topo string) []byte {
	size := len(j.NodeOf)
	univ := j.Universe
	if univ < size {
		univ = size
	}
	u32 := func(v int) pmixValue { return pmixValue{typ: pmixUint32, u: uint64(v)} }
	str := func(v string) pmixValue { return pmixValue{typ: pmixString, str: v} }
	ranksOn := make([][]int, len(j.Hosts))
	local := make([]int, size)
	for r, n := range j.NodeOf {
		local[r] = len(ranksOn[n])
		ranksOn[n] = append(ranksOn[n], r)
	}
	napps := 1
	appOf := func(r int) int {
		if j.AppNum == nil {
			return 0
		}
		return j.AppNum[r]
	}
	for r := range size {
		napps = max(napps, appOf(r)+1)
	}
	var nodes []string
	numNodes := 0
	for n, rs := range ranksOn {
		nodes = append(nodes, j.Hosts[n])
		if len(rs) > 0 {
			numNodes++
		}
	}
	var e pmixEnc
	e.count(1)
	e.str(j.Nspace)
	kv := func(key string, v pmixValue) {
		e.count(1)
		e.kval(key, v)
	}
	kv(pmixKeySrvNspace, str(j.Nspace+".agent"))
	kv(pmixKeySrvRank, u32(j.Node))
	kv(pmixKeyJobID, str(j.Nspace))
	kv(pmixKeyOffset, u32(0))
	kv(pmixKeyNumNodes, u32(numNodes))
	kv(pmixKeyJobSize, u32(size))
	kv(pmixKeyNApps, u32(napps))
	kv(pmixKeyMaxSize, u32(univ))
	kv(pmixKeyNodeList, str(strings.Join(nodes, ",")))
	if topo != "" {
		kv(pmixKeyTopoXML, str(topo))
	}
	kv(pmixKeySessionArr, pmixValue{typ: pmixDataArray, elemType: pmixInfoT, infos: []pmixInfo{
		{key: pmixKeySessionID, val: u32(0)},
		{key: pmixKeyUnivSize, val: u32(univ)},
	}})
	for n, rs := range ranksOn {
		if len(rs) == 0 {
			continue
		}
		peers := make([]string, len(rs))
		for i, r := range rs {
			peers[i] = strconv.Itoa(r)
		}
		kv(pmixKeyNodeArr, pmixValue{typ: pmixDataArray, elemType: pmixInfoT, infos: []pmixInfo{
			{key: pmixKeyHostname, val: str(j.Hosts[n])},
			{key: pmixKeyNodeID, val: u32(n)},
			{key: pmixKeyNodeSize, val: u32(len(rs))},
			{key: pmixKeyLPeers, val: str(strings.Join(peers, ","))},
			{key: pmixKeyLocalLdr, val: pmixValue{typ: pmixProcRank, u: uint64(rs[0])}},
			{key: pmixKeyLocalSize, val: u32(len(rs))},
		}})
	}
	for r := range size {
		var b pmixEnc
		b.count(1)
		b.uvar(uint64(r))
		bkv := func(key string, v pmixValue) {
			b.count(1)
			b.kval(key, v)
		}
		bkv(pmixKeyGlobalRank, pmixValue{typ: pmixProcRank, u: uint64(r)})
		bkv(pmixKeyLocalRank, pmixValue{typ: pmixUint16, u: uint64(local[r])})
		bkv(pmixKeyNodeRank, pmixValue{typ: pmixUint16, u: uint64(local[r])})
		bkv(pmixKeyNodeID, u32(j.NodeOf[r]))
		bkv(pmixKeyHostname, str(j.Hosts[j.NodeOf[r]]))
		bkv(pmixKeyAppNum, u32(appOf(r)))
		kv(pmixKeyBlob, pmixValue{typ: pmixByteObject, bytes: b.b})
	}
	return e.b
}
