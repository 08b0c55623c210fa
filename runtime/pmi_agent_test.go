package runtime

import (
	"context"
	"sync"
	"testing"

	"github.com/gorma-hpc/gorma/pmi"
)

// agentPM serves PMI-1 to in-process ranks with the agent's own server (pmi.Server and
// pmi.Exchange, as golaunch serves an MPI program), counting each rank's fences and puts.
type agentPM struct {
	t       *testing.T
	size    int
	mapping string
	srv     *pmi.Server
	x       *pmi.Exchange

	mu       sync.Mutex
	barriers []int
	puts     []int
	gets     int
	abort    bool
}

func newAgentPM(t *testing.T, size int, mapping string) *agentPM {
	pm := &agentPM{t: t, size: size, mapping: mapping, x: pmi.NewExchange(size),
		barriers: make([]int, size), puts: make([]int, size)}
	pm.srv = pmi.NewServer(pm)
	t.Cleanup(func() { pm.srv.Close() })
	return pm
}

func (pm *agentPM) connect(rank int, extra map[string]string) map[string]string {
	conn, env := pmiSocketpair(pm.t, rank, pm.size, extra)
	pm.srv.ServeConn(conn, rank)
	return env
}

func (pm *agentPM) barrierCounts() []int {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	return append([]int(nil), pm.barriers...)
}

func (pm *agentPM) getCount() int {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	return pm.gets
}

func (pm *agentPM) aborted() bool {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	return pm.abort
}

func (pm *agentPM) putCounts() []int {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	return append([]int(nil), pm.puts...)
}

// The pmi.Handler of a one-agent job.

func (pm *agentPM) Init(_ context.Context, rank int, _ string) (pmi.Info, error) {
	return pmi.Info{Size: pm.size, ProcessMapping: pm.mapping}, nil
}

func (pm *agentPM) Fence(ctx context.Context, rank int, puts map[string][]byte) error {
	pm.mu.Lock()
	pm.barriers[rank]++
	pm.puts[rank] += len(puts)
	pm.mu.Unlock()
	return pm.x.Fence(ctx, rank, puts)
}

func (pm *agentPM) Get(_ context.Context, rank int, key string) ([]byte, error) {
	pm.mu.Lock()
	pm.gets++
	pm.mu.Unlock()
	return pm.x.Get(rank, key)
}

func (pm *agentPM) Abort(rank, code int, msg string) {
	pm.mu.Lock()
	pm.abort = true
	pm.mu.Unlock()
	pm.x.Fail(pmi.ErrAborted)
}
func (pm *agentPM) Finalize(int) {}
func (pm *agentPM) Gone(int)     {}
