package launcher

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/hashicorp/memberlist"
)

func TestNodeMeta(t *testing.T) {
	for _, m := range []NodeMeta{
		{Version: 1, Slots: 4, Control: "10.0.0.2:41234"},
		{Version: 1, Slots: 0},
		{Version: 7, Slots: maxSlots, Control: "[::1]:9"},
		{Version: 1, Slots: 2, Control: "10.0.0.2:41234", Boot: "9f2c41d07be3a815"},
		{Version: 1, Slots: 0, Boot: "00", Leaving: true},
	} {
		got, err := DecodeMeta(m.Encode())
		if err != nil || got != m {
			t.Errorf("DecodeMeta(%q) = %+v, %v; want %+v", m.Encode(), got, err, m)
		}
	}
	if m, err := DecodeMeta([]byte("v=1 slots=2 ctl=h:1 future=yes")); err != nil || m.Slots != 2 {
		t.Errorf("unknown key: %+v %v", m, err)
	}
	for _, in := range []string{"", "slots=2", "v=1", "v=x slots=1", "v=0 slots=1", "v=1 slots=-1",
		"v=1 slots=2", "v=1 slots=2 ctl=nohost", "v=1 slots=2 ctl=h:0", "v=1 slots=2 ctl=h:000", "v=1 slots=2 ctl=h:99999",
		"v=1 slots=1 slots=2 ctl=h:1", "v=1 slots", "v=1 slots=1 ctl=:5", strings.Repeat("v=1 ", 200),
		"v=1 slots=0 boot=", "v=1 slots=0 boot=xyz", "v=1 slots=0 boot=ABCD", "v=1 slots=0 boot=abc",
		"v=1 slots=0 boot=" + strings.Repeat("ab", 17), "v=1 slots=0 bye=0", "v=1 slots=0 bye="} {
		if m, err := DecodeMeta([]byte(in)); err == nil {
			t.Errorf("DecodeMeta(%q) = %+v, want an error", in, m)
		}
	}
}

func FuzzNodeMeta(f *testing.F) {
	f.Add([]byte("v=1 slots=4 ctl=10.0.0.2:41234"))
	f.Add([]byte("v=1 slots=0"))
	f.Add([]byte("v=2 slots=3 ctl=[::1]:80 x=y"))
	f.Add([]byte("v=1 slots=1 ctl=h:7 boot=0123456789abcdef bye=1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeMeta(b)
		if err != nil {
			return
		}
		if m.Version < 1 || m.Slots < 0 || m.Slots > maxSlots || m.Slots > 0 && m.Control == "" {
			t.Fatalf("DecodeMeta(%q) accepted %+v", b, m)
		}
		again, err := DecodeMeta(m.Encode())
		if err != nil || again != m {
			t.Fatalf("round trip of %+v: %+v %v", m, again, err)
		}
	})
}

func TestParseKey(t *testing.T) {
	raw16 := []byte("0123456789abcdef") // 16 bytes of hex digits: hex wins only at 32+ digits
	k, err := ParseKey(raw16)
	if err != nil || !bytes.Equal(k, raw16) {
		t.Errorf("raw 16: %q %v", k, err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	for _, in := range [][]byte{[]byte(hex.EncodeToString(key) + "\n"), []byte("  " + hex.EncodeToString(key))} {
		if k, err := ParseKey(in); err != nil || !bytes.Equal(k, key) {
			t.Errorf("hex key %q: %x %v", in, k, err)
		}
	}
	if k, err := ParseKey(key); err != nil || !bytes.Equal(k, key) {
		t.Errorf("raw 32: %v", err)
	}
	for _, in := range []string{"", "short", strings.Repeat("ab", 20), strings.Repeat("x", 33)} {
		if _, err := ParseKey([]byte(in)); err == nil || !strings.Contains(err.Error(), "16, 24 or 32") {
			t.Errorf("ParseKey(%q) = %v", in, err)
		}
	}
}

func TestLoadKeyPermissions(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "key")
	os.WriteFile(p, []byte(strings.Repeat("ab", 32)), 0o644)
	if _, err := LoadKey(p); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("world-readable key: %v", err)
	}
	os.Chmod(p, 0o600)
	if _, err := LoadKey(p); err != nil {
		t.Errorf("0600 key: %v", err)
	}
}

func randomKey(t testing.TB) []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

func testAgent(t testing.TB, name string, slots int, key []byte) *Agent {
	t.Helper()
	a, err := startAgent(agentConfig{Name: name, Bind: "127.0.0.1:0", Slots: slots, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.close)
	return a
}

func TestClusterJoinAndMeta(t *testing.T) {
	key := randomKey(t)
	a := testAgent(t, "a", 2, key)
	b := testAgent(t, "b", 3, key)
	if err := b.cl.join([]string{a.cl.addr()}); err != nil {
		t.Fatal(err)
	}
	// The joiner knows the seed at once (push/pull at join): no waiting for gossip.
	ms := b.cl.members()
	if len(ms) != 2 || ms[0].Name != "a" || ms[0].Meta.Slots != 2 || ms[0].Meta.Control != a.controlAddr() {
		t.Fatalf("members after join: %+v", ms)
	}
}

func TestClusterWrongKeyNeverJoins(t *testing.T) {
	a := testAgent(t, "a", 1, randomKey(t))
	b := testAgent(t, "b", 1, randomKey(t))
	if err := b.cl.join([]string{a.cl.addr()}); err == nil {
		t.Fatal("an agent with another key joined")
	}
	time.Sleep(3 * probeInterval)
	if n := len(a.cl.members()); n != 1 {
		t.Errorf("seed has %d members, want 1", n)
	}
	if n := len(b.cl.members()); n != 1 {
		t.Errorf("stranger has %d members, want 1", n)
	}
}

func TestClusterDeathDetected(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for memberlist to declare a death")
	}
	key := randomKey(t)
	a := testAgent(t, "a", 1, key)
	start := time.Now()
	vanishedAgent(t, a, key, "b")
	t.Logf("death of b declared after %v", time.Since(start))
}

// vanishedAgent starts an agent with the name, joins it to seed, makes it vanish (no
// goodbye: as if its host died) and returns once seed has declared it dead.
func vanishedAgent(t *testing.T, seed *Agent, key []byte, name string) {
	t.Helper()
	b, err := startAgent(agentConfig{Name: name, Bind: "127.0.0.1:0", Slots: 1, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	if err := b.cl.join([]string{seed.cl.addr()}); err != nil {
		t.Fatal(err)
	}
	leaves, stop := seed.cl.watchLeaves(name)
	defer stop()
	b.cl.vanish()
	select {
	case ev := <-leaves:
		if ev.Name != name || ev.Left {
			t.Errorf("got %+v, want %s declared dead", ev, name)
		}
	case <-time.After(testbudget.Scale(5 * time.Second)):
		t.Fatalf("%s not declared dead within %v", name, testbudget.Scale(5*time.Second))
	}
}

// TestClusterHeldDeadAgent: a member that joins a seed which holds an agent as dead
// learns that agent's name at join (memberlist itself drops a dead member it never knew).
// A submitter waits longer for such an agent, and its refusal names it.
// TestMergeDelegateForgets feeds the merge delegate push-pull states: an agent held dead
// is recorded, and a later state that holds it alive, or gone by leave, forgets it.
func TestMergeDelegateForgets(t *testing.T) {
	c := &cluster{self: "s", heldDead: make(map[string]member), nodes: make(map[string]member)}
	d := (*mergeDelegate)(c)
	agent := NodeMeta{Version: 1, Slots: 2, Control: "127.0.0.1:9"}.Encode()
	node := func(name string, st memberlist.NodeStateType, meta []byte) *memberlist.Node {
		return &memberlist.Node{Name: name, Addr: net.IPv4(127, 0, 0, 1), Port: 7946, Meta: meta, State: st}
	}
	merge := func(nodes ...*memberlist.Node) {
		t.Helper()
		if err := d.NotifyMerge(nodes); err != nil {
			t.Fatal(err)
		}
	}
	merge(node("a", memberlist.StateDead, agent), node("b", memberlist.StateSuspect, agent),
		node("sub", memberlist.StateDead, NodeMeta{Version: 1}.Encode()), node("s", memberlist.StateDead, agent))
	if got := c.heldDeadAgents(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("held dead: %q, want [a b] (a submitter and self are never held)", got)
	}
	merge(node("a", memberlist.StateAlive, agent), node("b", memberlist.StateLeft, agent))
	if got := c.heldDeadAgents(); got != nil || len(c.heldDead) != 0 {
		t.Fatalf("held dead after the agents answered: %q (%d recorded), want none", got, len(c.heldDead))
	}
}

func TestClusterHeldDeadAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for memberlist to declare a death")
	}
	key := randomKey(t)
	a := testAgent(t, "a", 1, key)
	vanishedAgent(t, a, key, "b")
	// The seed keeps a dead member in its table for gossipToDeadTime: join now.
	s := testAgent(t, "submitter", 0, key)
	if got := s.cl.heldDeadAgents(); got != nil {
		t.Fatalf("held dead before the join: %q", got)
	}
	if err := s.cl.join([]string{a.cl.addr()}); err != nil {
		t.Fatal(err)
	}
	if got := s.cl.heldDeadAgents(); len(got) != 1 || got[0] != "b" {
		t.Fatalf("held dead after the join: %q, want [b]", got)
	}
	for _, m := range s.cl.members() {
		if m.Name == "b" {
			t.Fatalf("the dead agent b is a live member of the joiner: %+v", m)
		}
	}
	if settleFor(s.cl.heldDeadAgents()) != heldDeadSettle || settleFor(nil) != agentSettle {
		t.Errorf("settleFor: %v with a dead agent, %v without", settleFor([]string{"b"}), settleFor(nil))
	}
	if note := heldDeadNote([]string{"b"}); !strings.Contains(note, "the cluster holds agent b as dead") {
		t.Errorf("heldDeadNote: %q", note)
	}
	if note := heldDeadNote(nil); note != "" {
		t.Errorf("heldDeadNote(nil) = %q, want empty", note)
	}
}
