package pmi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gorma-hpc/gorma/internal/accept"
)

// Handler is the agent's side of the protocol; Server calls it from the connection's
// goroutine. Methods that block take the connection's context, which ends when the rank
// disconnects or the server closes.
type Handler interface {
	// Init admits rank of job (checking it belongs to this agent) and returns its Info.
	// job is "" for a PMI-1 client on a connection the agent handed to rank itself
	// ([Server.ServeConn]): its rank is known, and PMI-1 names no job.
	Init(ctx context.Context, rank int, job string) (Info, error)
	// Fence records rank's puts and blocks until every rank of the job has fenced.
	Fence(ctx context.Context, rank int, puts map[string][]byte) error
	// Get returns a value put by rank before the last completed fence; rank is
	// [AnyRank] for a PMI-1 get, whose key names a value of the whole job.
	Get(ctx context.Context, rank int, key string) ([]byte, error)
	// Abort starts a job abort requested by rank.
	Abort(rank, code int, msg string)
	// Finalize records that rank finished cleanly.
	Finalize(rank int)
	// Gone reports that rank's connection ended (finalized or not).
	Gone(rank int)
}

// Barrierer is implemented by a Handler whose fences may leave puts where they are made.
// The Server calls Barrier instead of Fence for a gorma client: its gets name the rank
// they read, so its puts need not reach every host at the fence, only the host of a rank
// that later asks for them. A PMI-1 client's get names no rank, so its fence is Fence,
// which must make its puts readable everywhere. Barrier blocks as Fence does.
type Barrierer interface {
	Barrier(ctx context.Context, rank int, puts map[string][]byte) error
}

// Spawner is implemented by a Handler whose job can grow (golaunch's agent). Spawn starts
// n new ranks of rank's job and returns the job rank of the first once every new rank has
// passed its group's fence; an error matching ErrRefused says why they cannot be placed.
// A Handler without it refuses gorma-spawn.
type Spawner interface {
	Spawn(ctx context.Context, rank, n int) (first int, err error)
}

// Reporter is implemented by a Handler that takes ranks' reports: a gorma rank's answer
// to a ReportAsked event (what it is blocked in). A Handler without it drops them.
type Reporter interface {
	Report(rank int, text string)
}

// Server serves the protocol: PMI-1 clients (an MPI library) and gorma clients ([Dial]),
// on a Unix socket ([Listen]) and on connections handed to it ([Server.ServeConn]). Each
// connection has a reader goroutine and a dispatcher goroutine; Close stops them all and
// waits for them.
type Server struct {
	ln         net.Listener // nil: only connections given to ServeConn
	stopAccept context.CancelFunc
	h          Handler
	path       string
	wg         sync.WaitGroup

	mu     sync.Mutex
	conns  map[*sconn]struct{}
	ranks  map[int]*sconn   // initialized connections
	calls  map[int]*callLog // the requests of each rank's last connection that completed init, kept after it ends
	news   []string         // Announce's event lines, for gorma connections that init later
	closed bool
}

type connMode int

const (
	modeNew   connMode = iota // before init
	modePMI1                  // an MPI library: lock-step, never an unsolicited line
	modeGorma                 // a gorma client: id= on answers, percent-encoded text, events
)

type sconn struct {
	c        net.Conn
	wmu      sync.Mutex
	assigned int // the rank this connection was handed to (ServeConn), or -1 (a socket)

	// Set by the dispatcher goroutine at init, before the connection enters ranks.
	rank int // -1 until init
	mode connMode
	info Info
	puts map[string][]byte // this rank's puts since its last fence (dispatcher only)

	pid   int     // the peer's process on the socket (SO_PEERCRED), 0 on a handed connection
	broke bool    // a protocol error was reported (dispatcher only)
	log   callLog // its requests, for Calls
}

func (sc *sconn) send(s string) error {
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	_, err := sc.c.Write([]byte(s))
	return err
}

// NewServer returns a server for connections handed to ServeConn only.
func NewServer(h Handler) *Server {
	return &Server{h: h, conns: make(map[*sconn]struct{}), ranks: make(map[int]*sconn), calls: make(map[int]*callLog)}
}

// Listen creates the socket at path (mode 0600, its directory should be 0700) and serves h
// on it, as well as on connections handed to ServeConn.
func Listen(path string, h Handler) (*Server, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("pmi: listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("pmi: restrict %s to its owner: %w", path, err)
	}
	s := NewServer(h)
	s.ln, s.path = ln, path
	var ctx context.Context
	ctx, s.stopAccept = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.accept(ctx)
	return s, nil
}

// Path is the socket's path ("" without a socket).
func (s *Server) Path() string { return s.path }

// accept serves the socket until Close (internal/accept): an Accept error (out of
// descriptors, say) is retried after a back-off, never the end of the socket. Pending
// connections are not bounded: only the job's user can reach the socket (mode 0600 in
// a 0700 directory), and a connection is a rank's for as long as the rank lives.
func (s *Server) accept(ctx context.Context) {
	defer s.wg.Done()
	accept.Serve(ctx, s.ln, accept.Config{}, func(c net.Conn, release func()) {
		release()
		s.add(c, -1)
	})
}

// ServeConn serves conn, whose other end the agent gave to rank (one end of a
// socketpair, the rank's PMI_FD). A PMI-1 client on it needs no rank of its own; a gorma
// client on it must name this rank. It returns at once; Close closes conn.
func (s *Server) ServeConn(conn net.Conn, rank int) {
	s.add(conn, rank)
}

func (s *Server) add(c net.Conn, rank int) {
	sc := &sconn{c: c, assigned: rank, rank: -1, puts: make(map[string][]byte)}
	if rank < 0 {
		sc.pid = peerPID(c)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.Close()
		return
	}
	s.conns[sc] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go s.serve(sc)
}

// readLines reads sc's lines and sends them to lines until EOF, an error or ctx ends. A
// multi-line command (mcmd=spawn ... endcmd) arrives as one request. A line over MaxLine
// is the last request: the connection cannot be read in step after it. A line cut by EOF
// is dropped: nobody is left to answer it.
func (s *Server) readLines(ctx context.Context, sc *sconn, lines chan<- request) {
	rd := newLineReader(sc.c)
	var multi bool
	for {
		raw, err := rd.next()
		if err != nil && !errors.Is(err, ErrLineTooLong) {
			return
		}
		rq := request{raw: raw, err: err}
		switch {
		case err != nil:
		case multi:
			if strings.TrimSpace(raw) != "endcmd" {
				continue
			}
			multi, rq.raw = false, "cmd="+cmdSpawn
		case strings.HasPrefix(raw, "mcmd="):
			multi = true
			continue
		case lineCmd(raw) == cmdReport:
			s.report(sc, raw) // one way, and never behind a request the dispatcher holds (a fence)
			continue
		}
		select {
		case lines <- rq:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// report passes a gorma rank's report to the Handler, if it is a Reporter.
func (s *Server) report(sc *sconn, raw string) {
	m, err := parseLine(raw)
	if err != nil {
		return
	}
	s.mu.Lock()
	rank, gorma := sc.rank, sc.mode == modeGorma
	s.mu.Unlock()
	if r, ok := s.h.(Reporter); ok && rank >= 0 && gorma {
		r.Report(rank, untext(m["text"]))
	}
}

// serve reads sc's lines on one goroutine and dispatches them on this one, so a blocking
// Fence sees the rank hang up through ctx.
func (s *Server) serve(sc *sconn) {
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	lines := make(chan request)
	go func() {
		defer cancel()
		defer close(lines)
		s.readLines(ctx, sc, lines)
	}()
	for rq := range lines {
		cmd, now := lineCmd(rq.raw), time.Now()
		fence := cmd == cmdBarrier
		sc.log.begin(cmd, now)
		if fence {
			sc.log.wait(cmd, now)
		}
		m, a := s.serveLine(ctx, sc, rq)
		sc.log.end(fence)
		if a == nil {
			continue // no answer (PMI-1 abort, a PMI-1 fence of an aborting job)
		}
		f := a.f
		if id, ok := m["id"]; ok {
			f = append(f, "id", id)
		}
		if sc.send(line(a.cmd, f)) != nil || a.hangup {
			break
		}
	}
	cancel()
	sc.c.Close()
	for range lines { // let the reader finish
	}
	s.mu.Lock()
	delete(s.conns, sc)
	rank := sc.rank
	if rank >= 0 && s.ranks[rank] == sc {
		delete(s.ranks, rank)
	}
	s.mu.Unlock()
	if rank >= 0 {
		s.h.Gone(rank)
	}
}

// serveLine parses and dispatches one request and returns it with its answer. A request
// that broke the protocol goes to the Handler first, if it is a ProtocolHandler.
func (s *Server) serveLine(ctx context.Context, sc *sconn, rq request) (msg, *answer) {
	var m msg
	var a *answer
	err := rq.err
	if err == nil {
		m, err = sc.parse(rq.raw)
	}
	if err != nil {
		a = sc.fail(cmdError, err)
		a.hangup = rq.err != nil
	} else {
		a = s.dispatch(ctx, sc, m)
	}
	if a != nil && a.perr != nil && !sc.broke {
		sc.broke = true // the first error only: a rank that sends garbage in a loop floods nothing
		cmd := m["cmd"]
		if m == nil {
			cmd = lineCmd(rq.raw)
		}
		s.protocolError(sc, cmd, a.perr)
	}
	return m, a
}

// protocolError passes a request that broke the protocol to the Handler.
func (s *Server) protocolError(sc *sconn, cmd string, err error) {
	ph, ok := s.h.(ProtocolHandler)
	if !ok {
		return
	}
	rank := sc.rank
	if rank < 0 {
		rank = sc.assigned
	}
	ph.ProtocolError(&ProtocolError{Rank: rank, Pid: sc.pid, Cmd: Truncate(cmd), Err: err})
}

// Notify pushes ev to rank's connection (or to every connection if rank < 0), if it is
// a gorma client's: a PMI-1 client never gets a line it did not ask for. It does not wait
// for the rank to read it.
func (s *Server) Notify(rank int, ev Event) {
	s.mu.Lock()
	var targets []*sconn
	for r, sc := range s.ranks {
		if (rank < 0 || r == rank) && sc.mode == modeGorma {
			targets = append(targets, sc)
		}
	}
	s.mu.Unlock()
	for _, sc := range targets {
		go sc.send(ev.line()) // a rank that stopped reading must not stall the agent
	}
}

// Announce pushes ev to every gorma connection as Notify(-1, ev) does, and to each gorma
// connection that completes init later, at its init: news a rank must have whenever it
// connects, such as a failed rank in a job that goes on (golaunch --ft). No connection
// gets an announced event twice.
func (s *Server) Announce(ev Event) {
	line := ev.line()
	s.mu.Lock()
	s.news = append(s.news, line)
	var targets []*sconn
	for _, sc := range s.ranks {
		if sc.mode == modeGorma {
			targets = append(targets, sc)
		}
	}
	s.mu.Unlock()
	for _, sc := range targets {
		go sc.send(line)
	}
}

// Close stops the server and closes every connection.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	var err error
	if s.ln != nil {
		err = s.ln.Close()
		s.stopAccept()
	}
	for sc := range s.conns {
		sc.c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
