package connbench

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"sync"
)

// Transport is one way to make net.Conns between the two processes.
type Transport struct {
	Name   string
	Listen func(addr string) (net.Listener, error)
	Dial   func(ctx context.Context, addr string) (net.Conn, error)
	// Addr is the address a server started by the client listens at; dir is a fresh
	// directory of the run, removed after it.
	Addr func(dir string) string
	// Close, if set, releases what Dial keeps between connections; the client calls it
	// after its last test, before it stops the server.
	Close func()
}

var (
	registryMu sync.Mutex
	transports = map[string]Transport{}
)

// Register makes t selectable with --transport. It panics on a duplicate name; mains
// call it from init.
func Register(t Transport) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := transports[t.Name]; dup {
		panic("connbench: transport " + t.Name + " registered twice")
	}
	transports[t.Name] = t
}

// Transports returns the registered names, sorted.
func Transports() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	names := make([]string, 0, len(transports))
	for n := range transports {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func lookupTransport(name string) (Transport, error) {
	registryMu.Lock()
	defer registryMu.Unlock()
	t, ok := transports[name]
	if !ok {
		names := make([]string, 0, len(transports))
		for n := range transports {
			names = append(names, n)
		}
		slices.Sort(names)
		return Transport{}, fmt.Errorf("unknown --transport %q: this build has %v", name, names)
	}
	return t, nil
}

// The kernel's own sockets: the baselines every build has.
func init() {
	var d net.Dialer
	Register(Transport{
		Name:   "unix",
		Listen: func(addr string) (net.Listener, error) { return net.Listen("unix", addr) },
		Dial:   func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "unix", addr) },
		Addr:   func(dir string) string { return filepath.Join(dir, "sock") },
	})
	Register(Transport{
		Name:   "tcp",
		Listen: func(addr string) (net.Listener, error) { return net.Listen("tcp", addr) },
		Dial:   func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) },
		Addr:   func(string) string { return "127.0.0.1:0" },
	})
}
