package pmi

import (
	"sync"
	"time"
)

// Wires, as Calls.Wire names them.
const (
	WirePMI1  = wire1   // an MPI library's PMI-1 client (MPICH)
	WirePMIx  = "PMIx"  // a PMIx client (Open MPI)
	WireGorma = "gorma" // a gorma rank, which answers hang reports itself
)

// Calls is what a server saw of one rank's requests since its init. golaunch's agent
// reports it for a rank that is no gorma rank, whose own state it cannot see: the fence
// the rank waits in, or its last request.
type Calls struct {
	Wire      string    // WirePMI1, WirePMIx or WireGorma
	Done      uint64    // requests served (answered, or taken without an answer)
	Last      string    // the last request's command ("barrier_in", "fence", "get", ...)
	LastAt    time.Time // when Last arrived
	Fence     string    // the fence the rank waits in ("barrier_in", "fence"), "" none
	FenceAt   time.Time // when that fence arrived
	Finalized bool      // the rank called finalize
}

// callLog keeps one connection's Calls. The connection's goroutines write it; the
// server's Calls reads it from any goroutine.
type callLog struct {
	mu sync.Mutex
	c  Calls
}

// begin notes a request of cmd that arrived at now.
func (l *callLog) begin(cmd string, now time.Time) {
	l.mu.Lock()
	l.c.Last, l.c.LastAt = cmd, now
	l.mu.Unlock()
}

// wait notes that the rank's fence cmd, which arrived at at, waits for the job's other
// ranks until end.
func (l *callLog) wait(cmd string, at time.Time) {
	l.mu.Lock()
	l.c.Fence, l.c.FenceAt = cmd, at
	l.mu.Unlock()
}

// end notes a served request; fence says it was the fence wait noted.
func (l *callLog) end(fence bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.c.Done++
	if fence {
		l.c.Fence, l.c.FenceAt = "", time.Time{}
	}
}

// setWire notes how the rank talks to the server.
func (l *callLog) setWire(w string) {
	l.mu.Lock()
	l.c.Wire = w
	l.mu.Unlock()
}

// finalized notes that the rank called finalize.
func (l *callLog) finalized() {
	l.mu.Lock()
	l.c.Finalized = true
	l.mu.Unlock()
}

func (l *callLog) get() Calls {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c
}

// Calls returns what the server saw of rank's requests on its last connection that
// completed init, and false when none did.
func (s *Server) Calls(rank int) (Calls, bool) { return callsOf(&s.mu, s.calls, rank) }

// Calls returns what the server saw of rank's requests, and false when no connection of
// rank was admitted.
func (s *PMIxServer) Calls(rank int) (Calls, bool) { return callsOf(&s.mu, s.calls, rank) }

// callsOf returns the Calls of rank's log in logs, which mu guards, and false when it
// has none.
func callsOf(mu *sync.Mutex, logs map[int]*callLog, rank int) (Calls, bool) {
	mu.Lock()
	l := logs[rank]
	mu.Unlock()
	if l == nil {
		return Calls{}, false
	}
	return l.get(), true
}
