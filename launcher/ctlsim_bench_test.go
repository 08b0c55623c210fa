package launcher

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/pmi"
)

// simRanksPerAgent is the ranks per agent of the control-plane simulation.
const simRanksPerAgent = 10

// ctlModel is the control protocol's message count for one agent with r ranks in a job
// that starts, fences f times and is aborted: what the agent receives (job, start, one
// fence-done per round, abort, done) and what it sends (ready, one fence per round, and
// per rank: started, init, exit). Pings are apart: 1/heartbeatInterval each way.
func ctlModel(r, f int) (toAgent, fromAgent int64) {
	return int64(4 + f), int64(1 + f + 3*r)
}

// TestCtlSim runs the control-plane simulation at 20 agents of 10 ranks and checks what
// the job must do at any scale: every agent got the job and its start, every rank reads
// every other rank's card after the fence, the abort reached every rank, the submitter
// named the failing rank, and every agent exchanged the model's count of messages.
func TestCtlSim(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	const agents = 20
	res, err := runCtlSim(ctx, agents, simRanksPerAgent, true)
	if err != nil {
		t.Fatal(err)
	}
	trigger := agents*simRanksPerAgent - 1
	if res.Code != 1 || !strings.Contains(res.Summary, fmt.Sprintf("rank %d (host a%04d, pid %d) exited with code 1; job aborted", trigger, agents-1, simPid(trigger))) {
		t.Errorf("submitter: exit %d, summary %q; want 1 and rank %d's exit", res.Code, res.Summary, trigger)
	}
	wantIn, wantOut := ctlModel(simRanksPerAgent, 1)
	for i := range agents {
		if res.AgentIn[i] != wantIn || res.AgentOut[i] != wantOut {
			t.Errorf("agent %d: %d frames in, %d out; the model says %d and %d", i, res.AgentIn[i], res.AgentOut[i], wantIn, wantOut)
		}
	}
	// The submitter's children in the agent tree get the job's spec, the others a
	// reference to the spec that comes down the tree (treespec.go).
	for _, c := range []struct {
		t    frameType
		to   bool
		want int64
	}{
		{fJob, true, defaultFanout}, {fJobTree, true, agents - defaultFanout}, {fStart, true, agents}, {fFenceDone, true, agents}, {fAbort, true, agents}, {fDone, true, agents},
		{fReady, false, agents}, {fStarted, false, int64(res.Ranks)}, {fInit, false, int64(res.Ranks)},
		{fFence, false, agents}, {fExit, false, int64(res.Ranks)},
	} {
		got := res.FromAgents[c.t]
		if c.to {
			got = res.ToAgents[c.t]
		}
		if got != c.want {
			t.Errorf("%v frames: %d, want %d", c.t, got, c.want)
		}
	}
}

// BenchmarkControlPlane runs the control-plane simulation (ctlsim_test.go) once per size
// and reports its times and message counts as metrics: run it with
//
//	go test -run '^$' -bench 'BenchmarkControlPlane$' -benchtime 1x ./launcher
//
// Each rank reads three cards after the fence (TestCtlSim reads them all).
func BenchmarkControlPlane(b *testing.B) {
	for _, agents := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("agents=%d", agents), func(b *testing.B) {
			for range b.N {
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Minute))
				res, err := runCtlSim(ctx, agents, simRanksPerAgent, false)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
				b.ReportMetric(float64(res.Ranks), "ranks")
				b.ReportMetric(ms(res.Start), "start-ms")
				b.ReportMetric(ms(res.Init), "init-ms")
				b.ReportMetric(ms(res.Fence), "fence-ms")
				b.ReportMetric(ms(res.Abort), "abort-ms")
				b.ReportMetric(ms(res.End), "end-ms")
				b.ReportMetric(float64(res.MaxAgentMsgs), "msgs/agent")
				b.ReportMetric(float64(res.MaxAgentBytes), "B/agent")
				b.ReportMetric(float64(res.ToAgentsB[fJob])/float64(agents), "job-B/agent")
				b.ReportMetric(float64(res.ToAgentsB[fFenceDone])/float64(agents), "fence-B/agent")
				b.ReportMetric(float64(res.ToAgents[fFenceDone]+res.FromAgents[fFence]), "fence-msgs@submitter")
				b.ReportMetric(float64(res.BytesToAgents+res.BytesFromAgents), "B@submitter")
				b.ReportMetric(float64(res.BusiestB), "B@busiest")
				b.Logf("busiest node: %s, %d bytes", res.Busiest, res.BusiestB)
				b.ReportMetric(0, "ns/op")
			}
		})
	}
}

// TestGossipSim runs the gossip simulation at 20 members: every member list becomes
// whole, and every live member declares the member cut off dead. It needs the timing of
// the agents' memberlist configuration (a probe answered within 100 ms), which the race
// detector's slowdown on a loaded host does not keep: under -race every interval and
// timeout is ten times as long.
func TestGossipSim(t *testing.T) {
	scale := 1
	if raceEnabled {
		scale = 10
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second*time.Duration(scale))
	defer cancel()
	res, err := runGossipSim(ctx, gossipSim{n: 20, scale: scale, window: 500 * time.Millisecond * time.Duration(scale)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Detect <= 0 || res.Spread < res.Detect || res.PacketsPerSec <= 0 {
		t.Errorf("detection %v, spread %v, %.1f packets/s per member", res.Detect, res.Spread, res.PacketsPerSec)
	}
}

// BenchmarkControlPlaneGossip runs the gossip simulation (ctlsim_gossip_test.go) once per
// size and reports join, convergence, steady-state traffic and failure detection:
//
//	go test -run '^$' -bench 'BenchmarkControlPlaneGossip' -benchtime 1x ./launcher
//
// Every member must answer its probes within 100 ms (times the scale), and all members
// share this process's processors, so the sizes stop where they still can on the 2-core
// machine kind: past that, members miss their own probe deadlines and suspect each other
// falsely. A larger size, with the scale raised, shows whether a machine settles it.
func BenchmarkControlPlaneGossip(b *testing.B) {
	for _, c := range []struct{ n, scale int }{{10, 1}, {100, 1}} {
		b.Run(fmt.Sprintf("members=%d", c.n), func(b *testing.B) {
			for range b.N {
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
				res, err := runGossipSim(ctx, gossipSim{n: c.n, scale: c.scale, window: time.Duration(c.scale) * 2 * time.Second})
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
				b.ReportMetric(float64(res.Scale), "time-scale")
				b.ReportMetric(ms(res.Join), "join-ms")
				b.ReportMetric(ms(res.Converge), "converge-ms")
				b.ReportMetric(res.PacketsPerSec, "pkts/member/s")
				b.ReportMetric(res.BytesPerSec, "B/member/s")
				b.ReportMetric(res.StreamsPerSec, "streams/member/s")
				b.ReportMetric(ms(res.Detect), "detect-ms")
				b.ReportMetric(ms(res.Spread), "all-dead-ms")
				b.ReportMetric(float64(res.Dropped), "dropped-pkts")
				b.ReportMetric(0, "ns/op")
			}
		})
	}
}

// discardConn is a control connection's socket that takes every write and keeps only its
// size: the submitter's side of a fence without the agents.
type discardConn struct {
	net.Conn // nil: only Write and Close are called
	n        atomic.Int64
}

func (c *discardConn) Write(p []byte) (int, error) { c.n.Add(int64(len(p))); return len(p), nil }
func (c *discardConn) Close() error                { return nil }

// simWireCard is rank's card as an agent keeps it: the PMI wire's text (hex), which the
// fence frames carry.
func simWireCard(rank int) []byte { return []byte(hex.EncodeToString(simCard(rank))) }

// BenchmarkControlPlaneFence times the serial steps of a gathering multi-host PMI fence
// at agents × 10 ranks, each rank putting one card, apart from everything else: the
// submitter's (the real submitter.fence: collecting each agent's fence frame as its
// events arrive, then encoding one fence-done payload of every agent's card block,
// sealing it for each of its children in the agent tree of fan-out 16, and a reference
// for every other agent), and one agent's (encoding its block, then decoding the
// fence-done payload and completing the round in its pmi.Exchange). In a cluster the
// agents do their step in parallel, and an interior agent passes the payload on, so one
// fence costs about the submitter's step plus the agent's, once per tree level, plus
// the network's time:
//
//	go test -run '^$' -bench 'BenchmarkControlPlaneFence' -benchtime 1x ./launcher
func BenchmarkControlPlaneFence(b *testing.B) {
	for _, agents := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("agents=%d", agents), func(b *testing.B) {
			hosts := make([]HostSlots, agents)
			for i := range hosts {
				hosts[i] = HostSlots{Name: fmt.Sprintf("a%04d", i), Slots: simRanksPerAgent}
			}
			roster, err := PlanRanks(hosts, agents*simRanksPerAgent)
			if err != nil {
				b.Fatal(err)
			}
			key := controlKey(make([]byte, 32))
			hello, reply := make([]byte, helloSize), make([]byte, replySize)
			var sub, agent time.Duration
			var sent int64
			for range b.N {
				s := &submitter{roster: roster, ranks: make([]rankState, roster.Size), tree: newTree(agents, defaultFanout)}
				conns := make([]*discardConn, agents)
				for i := range agents {
					conns[i] = &discardConn{}
					cc, err := newCtlConn(conns[i], key, hello, reply, true)
					if err != nil {
						b.Fatal(err)
					}
					s.links = append(s.links, &agentLink{idx: i, host: hosts[i].Name, cc: cc})
				}
				events := make([]subEvent, agents)
				for h := range agents {
					puts := make(map[int]map[string][]byte)
					var ranks []int
					for _, rank := range roster.RanksOn(h) {
						puts[rank] = map[string][]byte{simCardKey: simWireCard(rank)}
						ranks = append(ranks, rank)
					}
					t0 := time.Now()
					block, err := pmi.AppendCards(nil, pmi.CardsOf(puts))
					if h == 0 {
						agent += time.Since(t0)
					}
					if err != nil {
						b.Fatal(err)
					}
					events[h] = subEvent{link: h, from: s.links[h], t: fFence,
						msg: &agentFenceMsg{Round: 1, Ranks: ranks, Block: block}}
				}
				t0 := time.Now()
				for _, ev := range events {
					s.handle(ev)
				}
				sub += time.Since(t0)
				for i, c := range conns {
					if s.links[i].lost {
						b.Fatalf("agent %d lost in the fence", i)
					}
					sent += c.n.Load()
				}

				// Agent 0's step: the fence-done payload, as the submitter encodes it.
				var blocks [][]byte
				for _, ev := range events {
					blocks = append(blocks, ev.msg.(*agentFenceMsg).Block)
				}
				p := appendFenceDone(nil, 1, blocks)
				x := pmi.NewExchange(roster.Size)
				t0 = time.Now()
				v, err := decodeBody(fFenceDone, p)
				if err != nil {
					b.Fatal(err)
				}
				puts, err := v.(*fenceDone).puts(roster.Size)
				if err != nil {
					b.Fatal(err)
				}
				x.Complete(1, puts)
				agent += time.Since(t0)
			}
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(b.N) }
			b.ReportMetric(ms(sub), "submitter-ms")
			b.ReportMetric(ms(agent), "agent-ms")
			b.ReportMetric(float64(sent)/float64(b.N), "B-sent@submitter")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkControlPlaneGather runs the control-plane simulation once per size with a
// fence that gathers, as PMI-1 ranks' does (every rank's card reaches every host, down
// the agent tree: treefence.go), and reports the fence and the bytes of the busiest node:
//
//	go test -run '^$' -bench 'BenchmarkControlPlaneGather' -benchtime 1x ./launcher
//
// Each rank reads three cards after the fence, from its own agent.
func BenchmarkControlPlaneGather(b *testing.B) {
	for _, agents := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("agents=%d", agents), func(b *testing.B) {
			for range b.N {
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Minute))
				res, err := runCtlSimOpts(ctx, agents, simRanksPerAgent, simOpts{gather: true, victim: -1})
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
				b.ReportMetric(float64(res.Ranks), "ranks")
				b.ReportMetric(ms(res.Fence), "fence-ms")
				b.ReportMetric(float64(res.ToAgentsB[fFenceDone]), "payload-B@submitter")
				b.ReportMetric(float64(res.FromAgents[fFenceAsk]), "asks")
				b.ReportMetric(float64(res.BytesToAgents+res.BytesFromAgents), "B@submitter")
				b.ReportMetric(float64(res.BusiestB), "B@busiest")
				b.Logf("busiest node: %s, %d bytes", res.Busiest, res.BusiestB)
				b.ReportMetric(0, "ns/op")
			}
		})
	}
}

// TestCtlSimFT runs the control-plane simulation under --ft at 20 agents of 10 ranks and
// loses one agent as the fence begins: every survivor learns of the lost ranks, the
// survivors' fence completes without them, and the job ends naming them.
func TestCtlSimFT(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	const agents, victim = 20, 7
	res, err := runCtlSimWith(ctx, agents, simRanksPerAgent, false, victim)
	if err != nil {
		t.Fatal(err)
	}
	if res.Notice <= 0 || res.Fence <= 0 {
		t.Errorf("notice after %v, fence after %v", res.Notice, res.Fence)
	}
	want := fmt.Sprintf("--ft: %d of %d ranks failed: %d, ", simRanksPerAgent, res.Ranks, victim*simRanksPerAgent)
	if !strings.Contains(res.Summary, want) {
		t.Errorf("submitter: summary %q; want %q", res.Summary, want)
	}
}

// BenchmarkControlPlaneFT runs the control-plane simulation under --ft once per size and
// loses one agent (the middle one) as the fence begins. It reports when the last
// survivor rank holds a proc-failed event for the lost ranks, and when the last survivor
// left the fence:
//
//	go test -run '^$' -bench 'BenchmarkControlPlaneFT' -benchtime 1x ./launcher
func BenchmarkControlPlaneFT(b *testing.B) {
	for _, agents := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("agents=%d", agents), func(b *testing.B) {
			for range b.N {
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Minute))
				res, err := runCtlSimWith(ctx, agents, simRanksPerAgent, false, agents/2)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
				b.ReportMetric(float64(res.Ranks), "ranks")
				b.ReportMetric(ms(res.Notice), "notice-ms")
				b.ReportMetric(ms(res.Fence), "fence-ms")
				b.ReportMetric(0, "ns/op")
			}
		})
	}
}
