package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/cloudwego/shmipc-go"

	"github.com/gorma-hpc/gorma/internal/connbench"
)

// shmipcBufferCap is the shared memory of a dialer's session.
const shmipcBufferCap = 256 << 20

// shmipc-go's net.Conn face: its Listen accepts a Unix socket connection per session
// and hands out each stream the session opens as a net.Conn; a dialer's session comes
// from a SessionManager (one session over a Unix socket, shared memory in a memfd),
// and each Dial opens a stream of it, whose Close closes the stream.
func init() {
	shmipc.SetLogLevel(4) // errors only: shmipc-go logs to standard output, the tables' place
	var (
		mu       sync.Mutex
		sessions = map[string]*shmipc.SessionManager{}
	)
	manager := func(addr string) (*shmipc.SessionManager, error) {
		mu.Lock()
		defer mu.Unlock()
		if sm := sessions[addr]; sm != nil {
			return sm, nil
		}
		conf := shmipc.DefaultSessionManagerConfig()
		conf.Network, conf.Address = "unix", addr
		conf.SessionNum = 1
		conf.MemMapType = shmipc.MemMapTypeMemFd
		conf.ShareMemoryPathPrefix = "/dev/shm/sockpeers"
		conf.LogOutput = os.Stderr
		// A write that finds no free shared buffer goes over the Unix socket instead and
		// makes the session refuse new streams for 30 s: room for a stream test's burst.
		conf.ShareMemoryBufferCap = shmipcBufferCap
		sm, err := shmipc.NewSessionManager(conf)
		if err != nil {
			return nil, err
		}
		sessions[addr] = sm
		return sm, nil
	}
	connbench.Register(connbench.Transport{
		Name:   "shmipc",
		Listen: shmipc.Listen,
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
			for addr, sm := range sessions {
				sm.Close()
				delete(sessions, addr)
			}
		},
	})
}
