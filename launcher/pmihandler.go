package launcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gorma-hpc/gorma/pmi"
)

// pmiHandler is an agent job's side of the PMI protocol (pmi.Handler). The pmi.Server
// calls it from one goroutine per rank connection.
//
// Fences are job-wide. On a one-host job the agent's Exchange sees every rank and
// completes the round by itself. On a multi-host job the agent tells the submitter once
// every live rank it runs has fenced (fFence, fencewire.go). A gorma rank's fence is a
// barrier (Barrier): its puts stay here, and an agent whose rank asks for them fetches
// them (fetch.go). A PMI-1 or PMIx rank's fence gathers (Fence): its puts go in the
// frame's card block. Once every rank of the round has fenced, the submitter sends every
// agent the round's number and every agent's block (fFenceDone), and the agent completes
// the round (Exchange.Complete). A rank cannot fence round k+1 before round k completed on
// its agent, and frames on one connection keep their order, so a completion always
// lands in the round it belongs to.
type pmiHandler agentJob

var (
	_ pmi.Handler         = (*pmiHandler)(nil)
	_ pmi.Barrierer       = (*pmiHandler)(nil)
	_ pmi.ProtocolHandler = (*pmiHandler)(nil)
	_ pmi.Spawner         = (*pmiHandler)(nil)
	_ pmi.SpawnRefuser    = (*pmiHandler)(nil)
)

func (h *pmiHandler) job() *agentJob { return (*agentJob)(h) }

// Init admits a local rank of this job, once: a gorma rank on the agent socket (naming
// the job), or any rank on the PMI_FD socketpair the agent gave it (job "": PMI-1 names
// none). A rank that reaches init on either is a PMI rank for the abort rules.
func (h *pmiHandler) Init(ctx context.Context, rank int, job string) (pmi.Info, error) {
	j := h.job()
	if job != "" && job != j.spec.ID {
		return pmi.Info{}, fmt.Errorf("job %q is not running on this agent (it runs %s)", truncate(job, 40), j.spec.ID)
	}
	roster, mapping := j.rosterNow()
	if rank < 0 || rank >= roster.Size || roster.RankHost[rank] != j.spec.Node {
		return pmi.Info{}, fmt.Errorf("rank %d does not run on agent %s", rank, j.host())
	}
	j.mu.Lock()
	switch {
	case j.aborting:
		j.mu.Unlock()
		return pmi.Info{}, fmt.Errorf("%w: %s", pmi.ErrAborted, j.abortCause)
	case j.connected[rank]:
		j.mu.Unlock()
		return pmi.Info{}, fmt.Errorf("rank %d reached init already", rank)
	}
	j.connected[rank] = true
	j.mu.Unlock()
	j.send(fInit, rankMsg{Rank: rank}) // never under j.mu: a send may wait on the network
	return pmi.Info{Size: roster.Size, Secret: j.spec.Secret, KVSName: "kvs_" + j.spec.ID,
		AppNum: j.spec.appOf(rank), UniverseSize: roster.Size, ProcessMapping: mapping, Hosts: j.nodesNow()}, nil
}

// Fence publishes rank's puts to every host and waits for the job-wide round. A spawned
// rank's first fence is its group's instead (growagent.go). A put under keyObserveLost
// goes into the rank's exit report too.
func (h *pmiHandler) Fence(ctx context.Context, rank int, puts map[string][]byte) error {
	return h.fence(ctx, rank, puts, false)
}

// Barrier is Fence for a gorma rank, whose puts stay here until another host's agent
// fetches them (fetch.go).
func (h *pmiHandler) Barrier(ctx context.Context, rank int, puts map[string][]byte) error {
	return h.fence(ctx, rank, puts, true)
}

func (h *pmiHandler) fence(ctx context.Context, rank int, puts map[string][]byte, barrier bool) error {
	j := h.job()
	if v, ok := puts[keyObserveLost]; ok {
		j.noteObsLost(rank, v)
	}
	if handled, err := j.groupFence(ctx, rank, puts); handled {
		return err
	}
	roster, _ := j.rosterNow()
	if len(roster.Hosts) == 1 {
		return j.x.Fence(ctx, rank, puts)
	}
	// The fence is recorded here before the submitter hears of it: its fence-done, which
	// completes the round here, must find this rank's puts in it.
	return j.x.FenceThen(ctx, rank, puts, func(round int) error {
		var gather map[string][]byte
		if !barrier {
			gather = puts
		}
		return j.fenced(round, rank, gather)
	})
}

// Get reads a value of the last completed round (rank pmi.AnyRank: PMI-1's job-wide key).
// A rank of another host that made its puts in a barrier has them at its agent, which
// this one asks (fetch.go).
func (h *pmiHandler) Get(ctx context.Context, rank int, key string) ([]byte, error) {
	j := h.job()
	v, err := j.x.Get(rank, key)
	if err == nil || rank == pmi.AnyRank || !errors.Is(err, pmi.ErrNotFound) {
		return v, err
	}
	return j.remoteGet(ctx, rank, key)
}

// Spawn asks the submitter for n new ranks of the job on behalf of rank (pmi.Spawner).
func (h *pmiHandler) Spawn(ctx context.Context, rank, n int) (int, error) {
	return h.job().spawn(ctx, rank, n)
}

// Abort forwards a rank's abort request to the submitter, which aborts the whole job.
func (h *pmiHandler) Abort(rank, code int, msg string) {
	if code == abortProtocol || code == abortRefused {
		code = 1 // a code the agent's own requests carry; the job ends with 1 all the same
	}
	h.job().send(fAbortReq, abortReqMsg{Rank: rank, Code: code, Msg: truncate(msg, 512)})
}

// Finalize records a clean finish; the rank's exit report carries it.
func (h *pmiHandler) Finalize(rank int) {
	j := h.job()
	j.mu.Lock()
	j.finalized[rank] = true
	j.mu.Unlock()
}

// Gone needs no action: the rank's exit (reaped by its waiter) is what counts.
func (h *pmiHandler) Gone(rank int) {}

// Report passes a rank's hang report on to the submitter (pmi.Reporter).
func (h *pmiHandler) Report(rank int, text string) {
	h.job().send(fReport, reportMsg{Rank: rank, Text: text})
}

// RefusedSpawn ends the job of an Open MPI rank that called MPI_Comm_spawn (pmi.SpawnRefuser):
// golaunch starts no programs for it, and the spawn's other ranks would wait for ever.
func (h *pmiHandler) RefusedSpawn(rank int, program string) {
	j := h.job()
	what := "a program"
	if program != "" {
		what = program
	}
	msg := fmt.Sprintf("asked to spawn %s (MPI_Comm_spawn over PMIx): golaunch does not start programs for Open MPI's "+
		"MPI_Comm_spawn, and the spawn's other ranks would wait for ever; run the job under mpirun, or grow a gorma job "+
		"with World.Spawn", what)
	j.a.log.Printf("job %s: rank %d %s", j.spec.ID, rank, msg)
	j.send(fAbortReq, abortReqMsg{Rank: rank, Code: abortRefused, Msg: truncate(msg, 512)})
}

// logPMIStranger is a PMI protocol error on a job's socket from a process that is no
// rank of the job; such a process may connect any number of times.
var logPMIStranger = &logKind{first: "PMI socket: %s",
	summary: "PMI socket: %d protocol errors from processes that are no rank in %v (last %s)"}

// ProtocolError logs a rank's PMI protocol error and asks the submitter to end the job
// with it (an abort request of code abortProtocol). An error on the socket before
// gorma-init is the rank's whose process sent it; one from a process that is no rank of
// the job is only logged, at a bounded rate.
func (h *pmiHandler) ProtocolError(e *pmi.ProtocolError) {
	j := h.job()
	rank := e.Rank
	if rank < 0 {
		rank = j.rankOf(e.Pid)
	}
	if rank < 0 {
		j.a.strangers.note(logPMIStranger, fmt.Sprintf("job %s: pid %d, no rank of the job: %s", j.spec.ID, e.Pid, e.Detail()))
		return
	}
	j.a.log.Printf("job %s: rank %d: %s", j.spec.ID, rank, e.Detail())
	j.send(fAbortReq, abortReqMsg{Rank: rank, Code: abortProtocol, Msg: truncate(e.Detail(), 512)})
}

// rankOf returns the local rank whose process is pid, or -1. A rank still being started
// is not yet in procs: a child of this process whose environment names this job and a
// local rank is that rank.
func (j *agentJob) rankOf(pid int) int {
	if pid <= 0 {
		return -1
	}
	j.mu.Lock()
	for r, p := range j.procs {
		if p.pid == pid {
			j.mu.Unlock()
			return r
		}
	}
	j.mu.Unlock()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) {
		return -1
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return -1
	}
	rank, job := -1, ""
	for _, kv := range bytes.Split(env, []byte{0}) {
		k, v, _ := strings.Cut(string(kv), "=")
		switch k {
		case pmi.EnvRank:
			if n, err := strconv.Atoi(v); err == nil {
				rank = n
			}
		case pmi.EnvJobID:
			job = v
		}
	}
	if job != j.spec.ID || !j.isLocal(rank) {
		return -1
	}
	return rank
}
