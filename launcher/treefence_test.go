package launcher

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/pmi"
)

// TestTreeFenceWire: an fTreeFence body carries the job id and the payload as they came;
// a round frame carries one positive round and nothing after it.
func TestTreeFenceWire(t *testing.T) {
	b, _ := pmi.AppendCards(nil, []pmi.Card{{Rank: 1, Key: "k", Value: []byte{1, 2}}})
	done := appendFenceDone(nil, 4, [][]byte{b})
	m, err := decodeTreeFence(appendTreeFence(nil, "job-1", done))
	if err != nil || m.Job != "job-1" || !bytes.Equal(m.Done, done) {
		t.Fatalf("decoded %+v, %v", m, err)
	}
	for _, bad := range [][]byte{nil, {0}, {5, 'a'}, append(binary.AppendUvarint(nil, maxJobID+1), make([]byte, maxJobID+1)...)} {
		if m, err := decodeTreeFence(bad); err == nil {
			t.Errorf("%q decoded to %+v", bad, m)
		}
	}
	r, err := decodeFenceRound(fFenceRef, binary.AppendUvarint(nil, 7))
	if err != nil || r.Round != 7 {
		t.Fatalf("round: %+v, %v", r, err)
	}
	for _, bad := range [][]byte{nil, {0}, {7, 0}, binary.AppendUvarint(nil, maxRound+1)} {
		if r, err := decodeFenceRound(fFenceAsk, bad); err == nil {
			t.Errorf("%q decoded to %+v", bad, r)
		}
	}
}

func FuzzTreeFence(f *testing.F) {
	f.Add(appendTreeFence(nil, "j", appendFenceDone(nil, 2, nil)))
	f.Add([]byte{1, 'j', 1, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		m, err := decodeTreeFence(p)
		if err != nil {
			return
		}
		if again, err := decodeTreeFence(appendTreeFence(nil, m.Job, m.Done)); err != nil || again.Job != m.Job || !bytes.Equal(again.Done, m.Done) {
			t.Fatalf("%q decodes to %+v, which does not survive encoding: %+v, %v", p, m, again, err)
		}
		if d, err := decodeFenceDone(m.Done); err == nil {
			d.puts(16)
		}
		decodeFenceRound(fFenceRef, p)
	})
}

// TestCtlSimGather runs the control-plane simulation at 20 agents of 10 ranks whose
// fence gathers, as PMI-1 ranks' does, with the default fan-out of 16: the submitter
// sends the round's payload to its 16 children in the tree and a reference to the other
// 4, which get the payload from agent a0000, their parent. Every rank reads every card.
// Under --ft, with a0000 lost as the fence begins, its children get the payload from the
// submitter.
func TestCtlSimGather(t *testing.T) {
	const agents = 20
	for _, c := range []struct {
		name                  string
		victim                int
		payloads, refs, links int64 // links: payloads from a parent
	}{
		{"tree", -1, defaultFanout, agents - defaultFanout, agents - defaultFanout},
		{"parent-lost", 0, agents - 1, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
			defer cancel()
			res, err := runCtlSimOpts(ctx, agents, simRanksPerAgent, simOpts{fullGet: true, gather: true, victim: c.victim})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.ToAgents[fFenceDone]; got != c.payloads {
				t.Errorf("fence-done payloads from the submitter: %d, want %d", got, c.payloads)
			}
			if got := res.ToAgents[fFenceRef]; got != c.refs {
				t.Errorf("fence references: %d, want %d", got, c.refs)
			}
			if got := res.FromAgents[fFenceAsk]; got != 0 {
				t.Errorf("%d agents asked the submitter for the payload", got)
			}
			if res.TreeFenceLinks != c.links {
				t.Errorf("%d agents got the payload from their parent, want %d", res.TreeFenceLinks, c.links)
			}
		})
	}
}

// TestTreeFenceAsk: an agent holding a reference asks the submitter for the payload
// once its parent in the tree is reported lost, and a payload that then comes twice
// completes the round once.
func TestTreeFenceAsk(t *testing.T) {
	hosts := make([]HostSlots, 5)
	addrs := make([]string, 5)
	for i := range hosts {
		hosts[i], addrs[i] = HostSlots{Name: fmt.Sprintf("h%d", i), Slots: 1}, "127.0.0.1:1"
	}
	roster, err := PlanRanks(hosts, 5)
	if err != nil {
		t.Fatal(err)
	}
	here, sub := net.Pipe()
	defer here.Close()
	defer sub.Close()
	// Fan-out 2: h3 (position 4) has h0 (position 1) as its parent, and no child.
	j := &agentJob{a: &Agent{name: "h3", log: log.New(io.Discard, "", 0)}, conn: &ctlConn{c: here},
		spec: jobSpec{ID: "j", Roster: roster, Addrs: addrs, Fanout: 2, Node: 3}}
	j.x = pmi.NewExchange(roster.Size)
	j.initGrowth()
	if p := j.treeParent(); p != 0 {
		t.Fatalf("parent %d, want host 0", p)
	}
	frames := make(chan frameType, 4)
	rounds := make(chan int, 4)
	go func() {
		hdr := make([]byte, 5)
		for {
			ft, p, err := readFrame(sub, hdr)
			if err != nil {
				close(frames)
				return
			}
			m, err := decodeFenceRound(ft, p)
			if err != nil {
				t.Error(err)
			}
			frames <- ft
			rounds <- m.Round
		}
	}()
	j.fenceRef(1)
	j.treeHostLost("h1") // not its parent
	select {
	case ft := <-frames:
		t.Fatalf("asked (%v) with its parent alive", ft)
	case <-time.After(50 * time.Millisecond):
	}
	j.treeHostLost("h0")
	if ft, r := <-frames, <-rounds; ft != fFenceAsk || r != 1 {
		t.Fatalf("sent %v for round %d, want %v for round 1", ft, r, fFenceAsk)
	}
	b, _ := pmi.AppendCards(nil, []pmi.Card{{Rank: 0, Key: "k", Value: []byte("v0")}})
	p := appendFenceDone(nil, 1, [][]byte{b})
	for range 2 {
		m, _ := decodeFenceDone(p)
		if err := j.fenceDone(p, m, fromSubmitter); err != nil {
			t.Fatal(err)
		}
	}
	if n := j.x.Rounds(); n != 1 {
		t.Fatalf("%d rounds completed, want 1", n)
	}
	if v, err := j.x.Get(0, "k"); err != nil || string(v) != "v0" {
		t.Fatalf("rank 0's put: %q, %v", v, err)
	}
	j.fenceRef(1) // a late reference to a round completed: nothing to ask
	j.fenceRef(2) // its parent is lost: it asks at once
	if ft, r := <-frames, <-rounds; ft != fFenceAsk || r != 2 {
		t.Fatalf("sent %v for round %d, want %v for round 2", ft, r, fFenceAsk)
	}
	j.closeTree()
}

// TestAgentsTreeGather: PMI-1 ranks on 5 real agents with fan-out 2 fence twice, the
// fences gathering every put at every host; the payloads go down the tree (a1 passes
// them to a3 and a4, a2 to a5), and the leaves get none from the submitter.
func TestAgentsTreeGather(t *testing.T) {
	c := startCluster(t, 5, 1)
	r := runGL(t, "", c.submit("--tree-fanout", "2", "-n", "5", pmiprogBinPath(t), "pmi1")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for rank := range 5 {
		mustContain(t, "stdout", r.stdout, fmt.Sprintf("[%d] pmi1 rank %d/5 host a%d ok", rank, rank, rank+1))
	}
	for agent, kids := range map[string][]string{"a1": {"a3", "a4"}, "a2": {"a5"}} {
		for _, k := range kids {
			mustContain(t, agent+"'s log", c.agents[agent].stderr.String(), "passes its gathering fences' payloads to agent "+k)
		}
	}
	// Each agent logs where every gathering round's payload came from: the submitter
	// sends it to the tree's top agents only, never to a leaf (a star would).
	for agent, from := range map[string]string{"a1": fromSubmitter, "a2": fromSubmitter, "a3": fromParent, "a4": fromParent, "a5": fromParent} {
		log := c.agents[agent].stderr.String()
		got := regexp.MustCompile(`round \d+'s gathering payload came from ([^\n]*)`).FindAllStringSubmatch(log, -1)
		if len(got) == 0 {
			t.Errorf("agent %s logged no gathering round's payload:\n%s", agent, log)
		}
		for _, m := range got {
			if m[1] != from {
				t.Errorf("agent %s: a gathering round's payload came from %s, want %s only:\n%s", agent, m[1], from, log)
			}
		}
		if from == fromParent && (strings.Contains(log, "passes its gathering") || strings.Contains(log, "asking the submitter")) {
			t.Errorf("leaf %s passed a payload on, or asked for one:\n%s", agent, log)
		}
	}
}
