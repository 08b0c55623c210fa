package connbench

import (
	"context"
	"net"
	"sync"
)

// Test is one benchmark. Run is the client's half; Serve, if set, is a server the
// server process runs over the connections the client opens with Env.DialServed (the
// http and grpc tests); the other tests use the server's built-in echo and sink.
type Test struct {
	Name  string
	Serve func(l net.Listener, o *Options) error
	Run   func(ctx context.Context, env *Env) (Result, error)
}

var (
	testsMu sync.Mutex
	tests   []Test
)

// RegisterTest adds t after the built-in tests (pingpong, stream, connrate, http). Both
// processes are the same program, so the order of registration numbers the tests alike.
func RegisterTest(t Test) {
	testsMu.Lock()
	defer testsMu.Unlock()
	for _, u := range tests {
		if u.Name == t.Name {
			panic("connbench: test " + t.Name + " registered twice")
		}
	}
	tests = append(tests, t)
}

func registeredTests() []Test {
	testsMu.Lock()
	defer testsMu.Unlock()
	return append([]Test(nil), tests...)
}

func init() {
	RegisterTest(Test{Name: "pingpong", Run: runPingPong})
	RegisterTest(Test{Name: "stream", Run: runStream})
	RegisterTest(Test{Name: "connrate", Run: runConnRate})
	RegisterTest(Test{Name: "http", Serve: serveHTTP, Run: runHTTP})
}

// Env is what a test's client half gets: the options and the way to the server.
type Env struct {
	O         *Options
	transport Transport
	addr      string
	index     uint32 // of the running test, for DialServed
}

// Dial opens a bare connection to the server process.
func (e *Env) Dial(ctx context.Context) (net.Conn, error) {
	return e.transport.Dial(ctx, e.addr)
}

// DialServed opens a connection to the running test's Serve in the server process.
func (e *Env) DialServed(ctx context.Context) (net.Conn, error) {
	c, err := e.Dial(ctx)
	if err != nil {
		return nil, err
	}
	if err := writeHeader(c, header{op: opServe, size: e.index}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}
