package connbench

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
)

// maxSize bounds a header's size: the server allocates a buffer of it.
const maxSize = 64 << 20

// server accepts the client's connections and runs each one's header in a goroutine of
// its own; connections for a served test (opServe) go to that test's listener.
type server struct {
	l      net.Listener
	tests  []Test
	served []*connQueue // by test number; nil for tests without a server
	o      *Options
}

func newServer(l net.Listener, o *Options) *server {
	s := &server{l: l, tests: registeredTests(), o: o}
	s.served = make([]*connQueue, len(s.tests))
	for i, t := range s.tests {
		if t.Serve != nil {
			s.served[i] = newConnQueue(l.Addr())
		}
	}
	return s
}

// run serves until ctx is done; it closes the listener and the served tests' listeners.
func (s *server) run(ctx context.Context) error {
	var wg sync.WaitGroup
	errc := make(chan error, len(s.tests)+1)
	for i, q := range s.served {
		if q == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.tests[i].Serve(q, s.o); err != nil && !errors.Is(err, net.ErrClosed) {
				errc <- err
			}
		}()
	}
	go func() {
		<-ctx.Done()
		s.l.Close()
	}()
	for {
		c, err := s.l.Accept()
		if err != nil {
			for _, q := range s.served {
				if q != nil {
					q.Close()
				}
			}
			wg.Wait()
			if ctx.Err() != nil {
				select {
				case err := <-errc:
					return err
				default:
					return nil
				}
			}
			return err
		}
		go s.handle(c)
	}
}

// handle runs the headers of one connection until the client closes it.
func (s *server) handle(c net.Conn) {
	buf := []byte(nil)
	for {
		h, err := readHeader(c)
		if err != nil || int(h.size) > maxSize {
			c.Close()
			return
		}
		if h.op == opServe {
			if int(h.size) >= len(s.served) || s.served[h.size] == nil || !s.served[h.size].push(c) {
				c.Close()
			}
			return
		}
		if n := max(int(h.size), 1); cap(buf) < n {
			buf = make([]byte, n)
		}
		b := buf[:max(h.size, 1)]
		if h.op == opEcho {
			err = echo(c, b[:h.size], h.count)
		} else {
			err = sink(c, b, h.count)
		}
		if err != nil {
			c.Close()
			return
		}
	}
}

func echo(c net.Conn, b []byte, count uint64) error {
	for range count {
		if _, err := io.ReadFull(c, b); err != nil {
			return err
		}
		if _, err := c.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func sink(c net.Conn, b []byte, total uint64) error {
	for got := uint64(0); got < total; {
		n, err := c.Read(b[:min(uint64(len(b)), total-got)])
		got += uint64(n)
		if err != nil && got < total {
			return err
		}
	}
	_, err := c.Write([]byte{1})
	return err
}

// connQueue is a net.Listener fed by the server's accept loop.
type connQueue struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newConnQueue(addr net.Addr) *connQueue {
	return &connQueue{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (q *connQueue) push(c net.Conn) bool {
	select {
	case q.ch <- c:
		return true
	case <-q.done:
		return false
	}
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.ch:
		return c, nil
	case <-q.done:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) Close() error {
	q.once.Do(func() { close(q.done) })
	return nil
}

func (q *connQueue) Addr() net.Addr { return q.addr }
