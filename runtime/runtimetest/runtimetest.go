package runtimetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/internal/testhook"
)

// Options configure a Job.
type Options struct {
	// Transport is the launcher's --transport: "auto" (default), "shm" or "tcp".
	Transport string
	// Hosts names the host of each rank (len n); ranks with different names count as
	// different hosts. Default: every rank on host "node0".
	Hosts []string
	// Env holds extra environment variables of every rank (GORMA_PROGRESS, ...).
	Env map[string]string
	// Timeout bounds Start and each of Run's phases, scaled by the test slack
	// (internal/testbudget). Default 20 s.
	Timeout time.Duration
}

// Job is a running in-process job.
type Job struct {
	Worlds []*runtime.World

	srv *pmi.Server
	h   *handler
	dir string

	exits *exitLog
}

// exitLog records the codes ranks passed to Abort. The ranks' Exit hooks hold it, not
// the Job, so that a World's engine does not keep its Job (and every other rank's World)
// reachable.
type exitLog struct {
	mu    sync.Mutex
	codes map[int]int
}

// Start initializes n ranks and returns when all have (or the first error).
func Start(ctx context.Context, n int, opt Options) (*Job, error) {
	if n < 1 {
		return nil, fmt.Errorf("runtimetest: %d ranks", n)
	}
	if opt.Hosts == nil {
		opt.Hosts = make([]string, n)
		for i := range opt.Hosts {
			opt.Hosts[i] = "node0"
		}
	}
	if len(opt.Hosts) != n {
		return nil, fmt.Errorf("runtimetest: %d hosts for %d ranks", len(opt.Hosts), n)
	}
	if opt.Transport == "" {
		opt.Transport = "auto"
	}
	if opt.Timeout == 0 {
		opt.Timeout = 20 * time.Second
	}
	opt.Timeout = testbudget.Scale(opt.Timeout)
	dir, err := os.MkdirTemp("", "gorma-rt-")
	if err != nil {
		return nil, err
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	h := &handler{x: pmi.NewExchange(n), size: n, secret: secret, finalized: map[int]bool{}, reports: make(chan Report, 4*n)}
	h.mapping, h.nodes = nodeMap(opt.Hosts)
	srv, err := pmi.Listen(filepath.Join(dir, "agent.sock"), h)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	h.srv = srv
	j := &Job{Worlds: make([]*runtime.World, n), srv: srv, h: h, dir: dir, exits: &exitLog{codes: map[int]int{}}}
	exits := j.exits

	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	envs := contracts(n, opt, srv.Path())
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := envs[r]
			w, err := testhook.Init(ctx, testhook.Options{
				Getenv:   func(k string) string { return env[k] },
				HostSalt: opt.Hosts[r],
				Exit:     func(code int) { exits.record(r, code) },
			})
			if err != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, err)
				cancel() // the others would wait for this rank in a fence
				return
			}
			j.Worlds[r] = w.(*runtime.World)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		j.closeWorlds()
		j.Close()
		return nil, err
	}
	return j, nil
}

// contracts returns each rank's environment.
func contracts(n int, opt Options, sock string) []map[string]string {
	var order []string
	local := map[string][]int{}
	for r, h := range opt.Hosts {
		if _, ok := local[h]; !ok {
			order = append(order, h)
		}
		local[h] = append(local[h], r)
	}
	node := map[string]int{}
	for i, h := range order {
		node[h] = i
	}
	envs := make([]map[string]string, n)
	for r, h := range opt.Hosts {
		lr := 0
		for i, x := range local[h] {
			if x == r {
				lr = i
			}
		}
		env := map[string]string{
			pmi.EnvJobID: "7e57", pmi.EnvRank: strconv.Itoa(r), pmi.EnvSize: strconv.Itoa(n),
			pmi.EnvLocalRank: strconv.Itoa(lr), pmi.EnvLocalSize: strconv.Itoa(len(local[h])),
			pmi.EnvNodeRank: strconv.Itoa(node[h]), pmi.EnvNumNodes: strconv.Itoa(len(order)),
			pmi.EnvHost: h, pmi.EnvAgentSock: sock, pmi.EnvTransport: opt.Transport,
			// The ranks share the test's process: none may change its GOMAXPROCS.
			runtime.EnvProcs: "go",
		}
		for k, v := range opt.Env {
			env[k] = v
		}
		envs[r] = env
	}
	return envs
}

func (l *exitLog) record(rank, code int) {
	l.mu.Lock()
	l.codes[rank] = code
	l.mu.Unlock()
}

// Exit returns the code rank passed to Abort, if it did.
func (j *Job) Exit(rank int) (int, bool) {
	j.exits.mu.Lock()
	defer j.exits.mu.Unlock()
	c, ok := j.exits.codes[rank]
	return c, ok
}

// Notify pushes an agent event to rank (every rank if rank < 0).
func (j *Job) Notify(rank int, ev pmi.Event) { j.srv.Notify(rank, ev) }

// PMICalls returns how many fences (one per rank and round) and gets the job's agent has
// served so far.
func (j *Job) PMICalls() (fences, gets int) { return int(j.h.fences.Load()), int(j.h.gets.Load()) }

// AskReports asks every rank what it is blocked in (pmi.ReportAsked, with stacks if
// asked) and returns their reports by rank, once all have answered or ctx ends.
func (j *Job) AskReports(ctx context.Context, stacks bool) ([]string, error) {
	j.srv.Notify(-1, pmi.Event{Kind: pmi.ReportAsked, Rank: -1, Stacks: stacks})
	out := make([]string, len(j.Worlds))
	for got := 0; got < len(out); got++ {
		select {
		case r := <-j.h.reports:
			out[r.Rank] = r.Text
		case <-ctx.Done():
			return out, fmt.Errorf("runtimetest: %d of %d reports: %w", got, len(out), ctx.Err())
		}
	}
	return out, nil
}

// Finalize finalizes every rank concurrently and returns their errors joined.
func (j *Job) Finalize(ctx context.Context) error {
	errs := make([]error, len(j.Worlds))
	var wg sync.WaitGroup
	for r, w := range j.Worlds {
		if w == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Finalize(ctx); err != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (j *Job) closeWorlds() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	j.Finalize(ctx)
}

// Close stops the fake agent and removes its directory. Worlds not finalized by then see
// their agent connection end (an abort).
func (j *Job) Close() error {
	err := j.srv.Close()
	os.RemoveAll(j.dir)
	return err
}

// Run starts an n-rank job, calls f concurrently for every rank's World, and finalizes
// every rank. Errors of Start, f and Finalize fail t. A rank whose f fails is finalized
// anyway, so that the others do not wait for it.
func Run(t testing.TB, n int, opt Options, f func(w *runtime.World) error) {
	t.Helper()
	if opt.Timeout == 0 {
		opt.Timeout = 20 * time.Second
	}
	j, err := Start(context.Background(), n, opt)
	opt.Timeout = testbudget.Scale(opt.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, w := range j.Worlds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(w); err != nil {
				errs[r] = fmt.Errorf("rank %d: %w", r, err)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(opt.Timeout):
		t.Fatalf("runtimetest: ranks still running after %v; goroutines:\n%s", opt.Timeout, stacks())
	}
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), opt.Timeout)
	defer cancel()
	if err := j.Finalize(ctx); err != nil {
		t.Errorf("finalize: %v", err)
	}
}

// stacks returns every goroutine's stack, cut at maxStacks bytes, so that a hung test
// shows where its ranks wait.
func stacks() []byte {
	const maxStacks = 256 << 10
	buf := make([]byte, maxStacks)
	return buf[:goruntime.Stack(buf, true)]
}

// handler is the fake agent.
type handler struct {
	x      *pmi.Exchange
	size   int
	secret []byte
	srv    *pmi.Server

	mapping string   // PMI_process_mapping of the ranks' hosts
	nodes   []string // the names of its nodes (nodeMap)

	gets, fences atomic.Int64 // PMI calls served (Job.PMICalls)

	mu        sync.Mutex
	finalized map[int]bool
	aborted   bool
	reports   chan Report
}

// Report is a rank's answer to a report event (Job.AskReports).
type Report struct {
	Rank int
	Text string
}

// Report takes a rank's report (pmi.Reporter).
func (h *handler) Report(rank int, text string) {
	select {
	case h.reports <- Report{rank, text}:
	default: // nobody asked for this many
	}
}

func (h *handler) Init(ctx context.Context, rank int, job string) (pmi.Info, error) {
	if rank < 0 || rank >= h.size {
		return pmi.Info{}, fmt.Errorf("rank %d of a %d-rank job", rank, h.size)
	}
	return pmi.Info{Size: h.size, Secret: h.secret, ProcessMapping: h.mapping, Hosts: h.nodes}, nil
}

// nodeMap is the node map golaunch's agent serves for ranks on hosts: the
// PMI_process_mapping value and the nodes' names, numbered in order of first appearance.
func nodeMap(hosts []string) (mapping string, names []string) {
	index := map[string]int{}
	nodes := make([]int, len(hosts))
	for r, h := range hosts {
		n, ok := index[h]
		if !ok {
			n = len(names)
			index[h] = n
			names = append(names, h)
		}
		nodes[r] = n
	}
	return pmi.FormatProcessMapping(nodes), names
}

func (h *handler) Fence(ctx context.Context, rank int, puts map[string][]byte) error {
	h.fences.Add(1)
	return h.x.Fence(ctx, rank, puts)
}

func (h *handler) Get(ctx context.Context, rank int, key string) ([]byte, error) {
	h.gets.Add(1)
	return h.x.Get(rank, key)
}

func (h *handler) Abort(rank, code int, msg string) {
	h.mu.Lock()
	first := !h.aborted
	h.aborted = true
	h.mu.Unlock()
	if first {
		h.srv.Notify(-1, pmi.Event{Kind: pmi.Aborted, Rank: rank, Host: "", Code: code, Cause: msg})
		h.x.Fail(fmt.Errorf("rank %d aborted with code %d", rank, code))
	}
}

func (h *handler) Finalize(rank int) {
	h.mu.Lock()
	h.finalized[rank] = true
	h.mu.Unlock()
}

func (h *handler) Gone(rank int) {
	h.mu.Lock()
	fin := h.finalized[rank]
	h.mu.Unlock()
	if fin {
		return
	}
	h.srv.Notify(-1, pmi.Event{Kind: pmi.ProcFailed, Rank: rank, Cause: "exited without Finalize"})
	h.x.Fail(fmt.Errorf("rank %d exited without Finalize", rank))
}

// ArenaUse returns the bytes in use and the live MRs of the arenas of w's rank, summed
// over its devices: what a leak test compares before and after many cycles.
func ArenaUse(w *runtime.World) (inUse, liveMRs int64) { return testhook.ArenaUse(w) }

// Usage is what a leak test counts in this process besides the arena: goroutines, open
// file descriptors and lines of /proc/self/maps.
type Usage struct{ Goroutines, FDs, Maps int }

// MeasureUsage reads the process's Usage now.
func MeasureUsage() Usage {
	fds, _ := os.ReadDir("/proc/self/fd")
	maps, _ := os.ReadFile("/proc/self/maps")
	return Usage{goruntime.NumGoroutine(), len(fds), bytes.Count(maps, []byte("\n"))}
}

// SettleUsage polls, for at most 5 s scaled by the test slack, until goroutines and fds
// are back to base (what ends with a job may take a moment to exit), and returns the last
// reading.
func SettleUsage(base Usage) Usage {
	deadline := time.Now().Add(testbudget.Scale(5 * time.Second))
	for {
		u := MeasureUsage()
		if u.Goroutines <= base.Goroutines && u.FDs <= base.FDs || time.Now().After(deadline) {
			return u
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ObserveMode is one way a benchmark runs a job: without observation, with the profile
// or with the timeline (GORMA_PROFILE, GORMA_TRACE; docs/api.md).
type ObserveMode struct {
	Name string            // "off", "profile" or "trace"
	Env  map[string]string // what Options.Env adds to turn it on; nil for off
}

// ObserveBoth returns what Options.Env adds to turn on the profile and the timeline
// together, writing their files under dir: the tests of what a rank counts and records.
func ObserveBoth(dir string) map[string]string {
	return map[string]string{"GORMA_PROFILE": dir, "GORMA_TRACE": dir + "/trace.json"}
}

// ObserveModes returns the three modes, each writing its files under dir.
func ObserveModes(dir string) []ObserveMode {
	return []ObserveMode{
		{"off", nil},
		{"profile", map[string]string{"GORMA_PROFILE": dir + "/prof"}},
		{"trace", map[string]string{"GORMA_TRACE": dir + "/trace.json"}},
	}
}
