package pmi

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
)

// Handler is the agent's side of the protocol; Server calls it from the connection's
// goroutine. Methods that block take the connection's context, which ends when the rank
// disconnects or the server closes.
type Handler interface {
	// Init admits rank of job (checking it belongs to this agent) and returns its Info.
	Init(ctx context.Context, rank int, job string) (Info, error)
	// Fence records rank's puts and blocks until every rank of the job has fenced.
	Fence(ctx context.Context, rank int, puts map[string][]byte) error
	// Get returns a value put by rank before the last completed fence.
	Get(ctx context.Context, rank int, key string) ([]byte, error)
	// Abort starts a job abort requested by rank.
	Abort(rank, code int, msg string)
	// Finalize records that rank finished cleanly.
	Finalize(rank int)
	// Gone reports that rank's connection ended (finalized or not).
	Gone(rank int)
}

// Server serves the protocol on a Unix socket. Each connection has a reader goroutine and
// a dispatcher goroutine; Close stops them all and waits for them.
type Server struct {
	ln   net.Listener
	h    Handler
	path string
	wg   sync.WaitGroup

	mu     sync.Mutex
	conns  map[*sconn]struct{}
	ranks  map[int]*sconn
	closed bool
}

type sconn struct {
	c    net.Conn
	wmu  sync.Mutex
	rank int // -1 until init
}

func (sc *sconn) send(m msg) error {
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	_, err := sc.c.Write([]byte(EncodeLine(m)))
	return err
}

// Listen creates the socket at path (mode 0600, its directory should be 0700) and serves h.
func Listen(path string, h Handler) (*Server, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("pmi: listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("pmi: restrict %s to its owner: %w", path, err)
	}
	s := &Server{ln: ln, h: h, path: path, conns: make(map[*sconn]struct{}), ranks: make(map[int]*sconn)}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // closed
		}
		sc := &sconn{c: c, rank: -1}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[sc] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(sc)
	}
}

// serve reads sc's lines on one goroutine and dispatches them on this one, so a blocking
// Fence sees the rank hang up through ctx.
func (s *Server) serve(sc *sconn) {
	defer s.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	lines := make(chan msg)
	go func() {
		defer cancel()
		defer close(lines)
		rd := newReader(sc.c)
		for rd.Scan() {
			m, err := DecodeLine(rd.Text())
			if err != nil {
				sc.send(errorLine(err))
				return
			}
			select {
			case lines <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	puts := make(map[string][]byte)
	for m := range lines {
		reply := s.dispatch(ctx, sc, m, puts)
		reply["id"] = m["id"]
		if sc.send(reply) != nil || (m["cmd"] == "init" && reply["cmd"] == "error") {
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

func (s *Server) dispatch(ctx context.Context, sc *sconn, m msg, puts map[string][]byte) msg {
	cmd := m["cmd"]
	if cmd != "init" && sc.rank < 0 {
		return errorLine(fmt.Errorf("%w: %s before init", ErrProtocol, cmd))
	}
	switch cmd {
	case "init":
		if sc.rank >= 0 {
			return errorLine(fmt.Errorf("%w: second init", ErrProtocol))
		}
		if v := m["version"]; v != strconv.Itoa(ProtocolVersion) {
			return errorLine(fmt.Errorf("%w: rank speaks PMI version %s, agent %d (mixed gorma builds?)", ErrProtocol, v, ProtocolVersion))
		}
		rank, err := m.int("rank")
		if err != nil {
			return errorLine(err)
		}
		info, err := s.h.Init(ctx, rank, m["job"])
		if err != nil {
			return errorLine(err)
		}
		s.mu.Lock()
		if _, taken := s.ranks[rank]; taken {
			s.mu.Unlock()
			return errorLine(fmt.Errorf("pmi: rank %d is already connected", rank))
		}
		sc.rank = rank
		s.ranks[rank] = sc
		s.mu.Unlock()
		return msg{"cmd": "init-ok", "size": strconv.Itoa(info.Size), "secret": hex.EncodeToString(info.Secret)}
	case "put":
		v, err := m.hex("value")
		if err != nil {
			return errorLine(err)
		}
		if m["key"] == "" {
			return errorLine(fmt.Errorf("%w: put without key", ErrProtocol))
		}
		puts[m["key"]] = v
		return msg{"cmd": "put-ok"}
	case "fence":
		batch := make(map[string][]byte, len(puts))
		for k, v := range puts {
			batch[k] = v
		}
		clear(puts)
		if err := s.h.Fence(ctx, sc.rank, batch); err != nil {
			return errorLine(err)
		}
		return msg{"cmd": "fence-ok"}
	case "get":
		rank, err := m.int("rank")
		if err != nil {
			return errorLine(err)
		}
		v, err := s.h.Get(ctx, rank, m["key"])
		if err != nil {
			return errorLine(err)
		}
		return msg{"cmd": "get-ok", "value": hex.EncodeToString(v)}
	case "abort":
		code, err := m.int("code")
		if err != nil {
			return errorLine(err)
		}
		s.h.Abort(sc.rank, code, m["msg"])
		return msg{"cmd": "abort-ok"}
	case "finalize":
		s.h.Finalize(sc.rank)
		return msg{"cmd": "finalize-ok"}
	}
	return errorLine(fmt.Errorf("%w: unknown command %q", ErrProtocol, trunc(cmd)))
}

// Notify pushes ev to rank's connection (or to every connection if rank < 0). It does not
// wait for the rank to read it.
func (s *Server) Notify(rank int, ev Event) {
	s.mu.Lock()
	var targets []*sconn
	if rank < 0 {
		for _, sc := range s.ranks {
			targets = append(targets, sc)
		}
	} else if sc, ok := s.ranks[rank]; ok {
		targets = append(targets, sc)
	}
	s.mu.Unlock()
	for _, sc := range targets {
		go sc.send(ev.line()) // a rank that stopped reading must not stall the agent
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
	err := s.ln.Close()
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
