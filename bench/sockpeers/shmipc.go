package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cloudwego/shmipc-go"

	"github.com/gorma-hpc/gorma/bench/connbench"
)

// shmipcBufferCap is the shared memory of a dialer's shmipc link.
const shmipcBufferCap = 256 << 20

// shmipcInitTimeout bounds a shmipc link's handshake on both sides. shmipc-go's default of
// one second fails on a loaded machine, and its Listen cannot change it: a link that
// one side gave up on leaves the other side's streams waiting for ever.
const shmipcInitTimeout = 30 * time.Second

// shmipc-go's net.Conn face: a listener takes a Unix socket connection per link (its
// multiplexed connection type) and hands out every stream the link opens (a stream is a
// net.Conn), as shmipc's Listen does but with shmipcInitTimeout; a dialer's link comes
// from shmipc's manager type (one link over a Unix socket, shared memory in a memfd), and
// each Dial opens a stream of it, whose Close closes the stream.
func init() {
	shmipc.SetLogLevel(4) // errors only: shmipc-go logs to standard output, the tables' place
	var (
		mu       sync.Mutex
		managers = map[string]*shmipc.SessionManager{}
	)
	manager := func(addr string) (*shmipc.SessionManager, error) {
		mu.Lock()
		defer mu.Unlock()
		if sm := managers[addr]; sm != nil {
			return sm, nil
		}
		conf := shmipc.DefaultSessionManagerConfig()
		conf.Network, conf.Address = "unix", addr
		conf.SessionNum = 1
		conf.MemMapType = shmipc.MemMapTypeMemFd
		conf.ShareMemoryPathPrefix = "/dev/shm/sockpeers"
		conf.LogOutput = os.Stderr
		// A write that finds no free shared buffer goes over the Unix socket instead and
		// makes the link refuse new streams for 30 s: room for a stream test's burst.
		conf.ShareMemoryBufferCap = shmipcBufferCap
		conf.InitializeTimeout = shmipcInitTimeout
		sm, err := shmipc.NewSessionManager(conf)
		if err != nil {
			return nil, err
		}
		managers[addr] = sm
		return sm, nil
	}
	connbench.Register(connbench.Transport{
		Name:   "shmipc",
		Listen: listenShmipc,
		Dial: func(_ context.Context, addr string) (net.Conn, error) {
			sm, err := manager(addr)
			if err != nil {
				return nil, err
			}
			return sm.GetStream()
		},
		Addr: func(dir string) string { return filepath.Join(dir, "shmipc.sock") },
		Close: func() {
			mu.Lock()
			defer mu.Unlock()
			for addr, sm := range managers {
				sm.Close()
				delete(managers, addr)
			}
		},
	})
}

var _ net.Conn = (*shmipc.Stream)(nil)

// shmipcListener is a net.Listener of the streams of the links its Unix socket accepts.
type shmipcListener struct {
	l       net.Listener
	streams chan net.Conn
	done    chan struct{}
	once    sync.Once
}

func listenShmipc(addr string) (net.Listener, error) {
	ul, err := net.Listen("unix", addr)
	if err != nil {
		return nil, err
	}
	l := &shmipcListener{l: ul, streams: make(chan net.Conn), done: make(chan struct{})}
	go l.acceptLinks()
	return l, nil
}

// acceptLinks runs until the listener closes; each link's streams are handed to
// Accept by a goroutine of the link.
func (l *shmipcListener) acceptLinks() {
	for {
		c, err := l.l.Accept()
		if err != nil {
			return
		}
		go l.serveLink(c)
	}
}

func (l *shmipcListener) serveLink(c net.Conn) {
	conf := shmipc.DefaultConfig()
	conf.InitializeTimeout = shmipcInitTimeout
	conf.LogOutput = os.Stderr
	s, err := shmipc.Server(c, conf)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sockpeers: shmipc link: %v\n", err)
		c.Close()
		return
	}
	defer s.Close()
	for {
		st, err := s.AcceptStream()
		if err != nil {
			return
		}
		select {
		case l.streams <- st:
		case <-l.done:
			st.Close()
			return
		}
	}
}

func (l *shmipcListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.streams:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *shmipcListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.l.Close()
}

func (l *shmipcListener) Addr() net.Addr { return l.l.Addr() }
