package pmi

import (
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// waitCalls waits until srv's Calls of rank satisfy ok, and returns them; it fails the
// test, saying what it waited for, when they do not within a budget.
func waitCalls(t *testing.T, what string, calls func() (Calls, bool), ok func(Calls) bool) Calls {
	t.Helper()
	budget := testbudget.Scale(10 * time.Second)
	for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
		c, found := calls()
		if found && ok(c) {
			return c
		}
		if time.Since(start) > budget {
			t.Fatalf("%s: not within %v; Calls = %+v, %v", what, budget, c, found)
		}
	}
}

// The PMI-1 server's Calls of a rank: how it talks, the barrier it waits in since it
// arrived, the requests served, finalize. A gorma client's connection says gorma, and a
// rank that never reached init has none.
func TestCallsPMI1(t *testing.T) {
	h := newJob(3)
	s := NewServer(h)
	defer s.Close()
	if _, ok := s.Calls(0); ok {
		t.Fatal("Calls of a rank that never connected")
	}
	p0, p1 := handTo(t, s, 0), handTo(t, s, 1)
	p0.ask("cmd=init pmi_version=1 pmi_subversion=1")
	p0.ask("cmd=put kvsname=kvs_job1 key=k value=v")
	before := time.Now()
	p0.send("cmd=barrier_in")
	c := waitCalls(t, "rank 0 waits in barrier_in", func() (Calls, bool) { return s.Calls(0) },
		func(c Calls) bool { return c.Fence != "" })
	if c.Wire != WirePMI1 || c.Fence != "barrier_in" || c.Last != "barrier_in" || c.Done != 2 || c.FenceAt.Before(before) ||
		c.Finalized {
		t.Errorf("rank 0 in its barrier: %+v; want PMI-1, barrier_in since %v, 2 requests served", c, before)
	}

	// Rank 2, a gorma client, fences too; rank 1's barrier completes the round.
	ours, theirs := net.Pipe()
	s.ServeConn(ours, 2)
	g, err := DialConn(ctx(t), theirs, 2, "job1")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	fenced := make(chan error, 1)
	go func() { fenced <- g.Fence(ctx(t)) }()
	p1.ask("cmd=init pmi_version=1 pmi_subversion=1")
	if got := p1.ask("cmd=barrier_in"); got != "cmd=barrier_out" {
		t.Fatalf("rank 1's barrier: %q", got)
	}
	if got := p0.next(); got != "cmd=barrier_out" {
		t.Fatalf("rank 0's barrier: %q", got)
	}
	if err := <-fenced; err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Calls(2); c.Wire != WireGorma {
		t.Errorf("the gorma client's Calls: %+v", c)
	}
	p0.ask("cmd=finalize")
	c = waitCalls(t, "rank 0's finalize served", func() (Calls, bool) { return s.Calls(0) },
		func(c Calls) bool { return c.Done == 4 })
	if c.Fence != "" || !c.Finalized || c.Last != "finalize" {
		t.Errorf("rank 0 after its barrier and finalize: %+v", c)
	}
}

// The PMIx server's Calls of a rank: a fence it waits in since it arrived, while later
// requests are served beside it; the fence answered; finalize.
func TestCallsPMIx(t *testing.T) {
	h := newJob(2)
	s := listenPMIx(t, h, pmixJobOf(2))
	c0, pi0 := connectRank(t, s, 0)
	if _, ok := s.Calls(1); ok {
		t.Fatal("Calls of a rank that never connected")
	}
	before := time.Now()
	sendPMIx(t, c0, pi0, 1, pmixFenceBody("golaunch.job1", true))
	sendPMIx(t, c0, pi0, 2, pmixCmd(pmixCmdReq).b)
	recvPMIx(t, c0) // the job data: served while the fence waits
	c := waitCalls(t, "rank 0 waits in its fence", func() (Calls, bool) { return s.Calls(0) },
		func(c Calls) bool { return c.Fence != "" && c.Done == 1 })
	if c.Wire != WirePMIx || c.Fence != "fence" || c.Last != "job data" || c.FenceAt.Before(before) {
		t.Errorf("rank 0 in its fence: %+v; want PMIx, fence since %v, job data last", c, before)
	}

	c1, pi1 := connectRank(t, s, 1)
	sendPMIx(t, c1, pi1, 1, pmixFenceBody("golaunch.job1", true))
	for _, c := range []net.Conn{c0, c1} {
		if hd, b := recvPMIx(t, c); hd.tag != 1 || !bytes.Equal(b, pmixStatusBody(0)) {
			t.Fatalf("fence answer: tag %d body % x", hd.tag, b)
		}
	}
	sendPMIx(t, c0, pi0, 3, pmixCmd(pmixCmdFinalize).b)
	recvPMIx(t, c0)
	c = waitCalls(t, "rank 0's finalize served", func() (Calls, bool) { return s.Calls(0) },
		func(c Calls) bool { return c.Done == 3 })
	if c.Fence != "" || !c.Finalized || c.Last != "finalize" {
		t.Errorf("rank 0 after its fence and finalize: %+v", c)
	}
}

// spawnRefuser is a job's Handler that takes refused spawns.
type spawnRefuser struct {
	*jobHandler
	spawns chan string
}

func (h spawnRefuser) RefusedSpawn(rank int, program string) {
	h.spawns <- fmt.Sprintf("%d %s", rank, program)
}

// pmixSpawnBody is a spawn request as OpenPMIx's PMIx_Spawn packs it: no job directives,
// one app of cmd with one argument, no environment, cwd /tmp, 2 processes, no directives.
func pmixSpawnBody(cmd string) []byte {
	e := pmixCmd(pmixCmdSpawn)
	e.count(1)
	e.uvar(0)
	e.count(1)
	e.uvar(1)
	e.count(1)
	e.str(cmd)
	e.ivar(1)
	e.str("arg")
	e.ivar(0)
	e.str("/tmp")
	e.ivar(2)
	e.uvar(0)
	return e.b
}

// A spawn in a job of two ranks goes to a SpawnRefuser with the program it names, and
// the rank gets no answer (its job ends). A job of one rank, or a Handler that is no
// SpawnRefuser, answers PMIX_ERR_NOT_SUPPORTED.
func TestPMIxServerSpawn(t *testing.T) {
	h := spawnRefuser{newJob(2), make(chan string, 1)}
	s := listenPMIx(t, h, pmixJobOf(2))
	c, pindex := connectRank(t, s, 1)
	sendPMIx(t, c, pindex, 4, pmixSpawnBody("/usr/bin/child"))
	select {
	case got := <-h.spawns:
		if got != "1 /usr/bin/child" {
			t.Errorf("RefusedSpawn(%s), want rank 1 and /usr/bin/child", got)
		}
	case <-time.After(testbudget.Scale(10 * time.Second)):
		t.Fatal("the spawn did not reach RefusedSpawn")
	}
	// spawn.bin is an Open MPI 4.1.4 rank's MPI_Comm_spawn of /bin/true under golaunch -n 2
	// (PMIx 4.2.2), captured with strace.
	sendPMIx(t, c, pindex, 5, readPMIxFixture(t, "spawn.bin"))
	if got := <-h.spawns; got != "1 /bin/true" {
		t.Errorf("Open MPI's spawn: RefusedSpawn(%s), want rank 1 and /bin/true", got)
	}
	// The connection goes on: the next request is answered, and the spawns were not.
	sendPMIx(t, c, pindex, 5, pmixCmd(pmixCmdReq).b)
	if hd, _ := recvPMIx(t, c); hd.tag != 5 {
		t.Errorf("answer of tag %d after the refused spawn, want the job data's 5", hd.tag)
	}
	sendPMIx(t, c, pindex, 6, pmixCmd(pmixCmdSpawn).b)
	if got := <-h.spawns; got != "1 " {
		t.Errorf("a spawn without apps: RefusedSpawn(%s), want rank 1 and no program", got)
	}

	for name, srv := range map[string]*PMIxServer{
		"one rank":        listenPMIx(t, spawnRefuser{newJob(1), h.spawns}, pmixJobOf(1)),
		"no SpawnRefuser": listenPMIx(t, newJob(2), pmixJobOf(2)),
	} {
		c, pindex := connectRank(t, srv, 0)
		sendPMIx(t, c, pindex, 7, pmixSpawnBody("/usr/bin/child"))
		hd, b := recvPMIx(t, c)
		if st := pmixStatusOf(&pmixDec{b: b}); hd.tag != 7 || st != pmixErrNotSupported {
			t.Errorf("%s: tag %d status %d, want 7 and PMIX_ERR_NOT_SUPPORTED", name, hd.tag, st)
		}
	}
	select {
	case got := <-h.spawns:
		t.Errorf("RefusedSpawn(%s) in a job that answers the spawn", got)
	default:
	}
}
