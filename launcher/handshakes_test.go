package launcher

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

func TestShedPolicy(t *testing.T) {
	for _, tt := range []struct {
		unproven, proven, limit int
		want                    shedAction
	}{
		{0, 0, 4, admitFree},
		{2, 1, 4, admitFree},
		{4, 0, 4, admitEvict},
		{1, 3, 4, admitEvict},
		{0, 4, 4, shedNewcomer},
		{3, 2, 4, admitEvict}, // never more than the limit, but decide all the same
	} {
		if got := shedPolicy(tt.unproven, tt.proven, tt.limit); got != tt.want {
			t.Errorf("shedPolicy(%d unproven, %d proven, limit %d) = %d, want %d", tt.unproven, tt.proven, tt.limit, got, tt.want)
		}
	}
}

// The table sheds the oldest unproven connection, never a proven one, and the newcomer
// only when every pending one is proven.
func TestPendingTable(t *testing.T) {
	type step struct {
		op     string // admit (unproven), admitP (proven), prove, remove
		c      int
		act    shedAction
		shed   int
		result bool // prove, remove
	}
	tb := newPendingTable[int](3)
	for i, s := range []step{
		{op: "admit", c: 1},
		{op: "admit", c: 2},
		{op: "admitP", c: 3},
		{op: "admit", c: 4, act: admitEvict, shed: 1},
		{op: "prove", c: 1, result: false}, // shed: its hello came too late
		{op: "prove", c: 2, result: true},
		{op: "admitP", c: 5, act: admitEvict, shed: 4},
		{op: "admit", c: 6, act: shedNewcomer, shed: 6},
		{op: "remove", c: 3, result: true},
		{op: "remove", c: 4, result: false},
		{op: "admit", c: 7},
		{op: "remove", c: 7, result: true},
	} {
		switch s.op {
		case "admit", "admitP":
			act, shed := tb.admit(s.c, s.op == "admitP")
			if act != s.act || act != admitFree && shed != s.shed {
				t.Fatalf("step %d: admit(%d) = %d, shed %d; want %d, shed %d", i, s.c, act, shed, s.act, s.shed)
			}
		case "prove":
			if got := tb.prove(s.c); got != s.result {
				t.Fatalf("step %d: prove(%d) = %v", i, s.c, got)
			}
		case "remove":
			if got := tb.remove(s.c); got != s.result {
				t.Fatalf("step %d: remove(%d) = %v", i, s.c, got)
			}
		}
		if n := len(tb.unproven) + len(tb.proven); n > tb.limit {
			t.Fatalf("step %d: %d pending, limit %d", i, n, tb.limit)
		}
	}
}

func testHello(key []byte, version uint16, at time.Time, nonce byte) []byte {
	h := make([]byte, helloSize)
	copy(h, helloMagic)
	binary.BigEndian.PutUint16(h[4:], version)
	binary.BigEndian.PutUint64(h[timeOff:], uint64(at.UnixNano()))
	h[nonceOff] = nonce
	copy(h[macOff:], mac(key, helloLabel, h[:macOff]))
	return h
}

func TestCheckHello(t *testing.T) {
	key, other := controlKey(randomKey(t)), controlKey(randomKey(t))
	now := time.Unix(1_000_000, 0)
	for _, tt := range []struct {
		name  string
		hello []byte
		want  helloVerdict
	}{
		{"fresh", testHello(key, controlVersion, now.Add(-time.Second), 1), helloProven},
		{"a clock a minute ahead", testHello(key, controlVersion, now.Add(time.Minute), 1), helloProven},
		{"stale", testHello(key, controlVersion, now.Add(-helloSkew-time.Second), 1), helloStale},
		{"from the future", testHello(key, controlVersion, now.Add(helloSkew+time.Second), 1), helloStale},
		{"version 4", testHello(key, 4, time.Unix(0, 0), 1), helloOtherVersion},
		{"another key", testHello(other, controlVersion, now, 1), helloForged},
		{"short", testHello(key, controlVersion, now, 1)[:helloSize-1], helloForged},
		{"silence", nil, helloForged},
		{"zeros", make([]byte, helloSize), helloForged},
	} {
		if got := checkHello(key, tt.hello, now); got != tt.want {
			t.Errorf("%s: checkHello = %d, want %d", tt.name, got, tt.want)
		}
	}
	var n nonceCache
	h := testHello(key, controlVersion, now, 7)
	if !n.fresh(h, now) || n.fresh(h, now.Add(helloSkew)) {
		t.Error("a replayed nonce within the window was taken for fresh")
	}
	if !n.fresh(h, now.Add(2*helloSkew+time.Second)) {
		t.Error("a nonce was remembered past twice the skew")
	}
}

// FuzzCheckHello: no input panics the decoder of a connection's first bytes, and only
// bytes that carry the key's mac prove the key.
func FuzzCheckHello(f *testing.F) {
	key := controlKey(make([]byte, 32))
	now := time.Unix(1_000_000, 0)
	f.Add(testHello(key, controlVersion, now, 1))
	f.Add(testHello(key, 4, now, 1))
	f.Add([]byte("GLCH"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v := checkHello(key, b, now)
		if v != helloForged && (len(b) < helloSize || string(b[macOff:helloSize]) != string(mac(key, helloLabel, b[:macOff]))) {
			t.Fatalf("verdict %d for bytes without the key's mac", v)
		}
	})
}

// A replayed hello is refused without a word: the agent answers the first and closes the
// second.
func TestAgentRefusesReplayedHello(t *testing.T) {
	a := testAgent(t, "a", 1, randomKey(t))
	hello := testHello(a.ckey, controlVersion, time.Now(), 9)
	for i, want := range []int{replySize, 0} {
		c, err := net.Dial("tcp", a.controlAddr())
		if err != nil {
			t.Fatal(err)
		}
		c.Write(hello)
		c.SetReadDeadline(time.Now().Add(testbudget.Scale(5 * time.Second)))
		b := make([]byte, replySize)
		n, err := io.ReadFull(c, b)
		c.Close()
		if n != want {
			t.Errorf("hello %d: the agent wrote %d bytes (%v), want %d", i+1, n, err, want)
		}
	}
}

// An agent replies to a hello whose time is off with hsStale; the submitter then names
// the clocks.
func TestStaleHello(t *testing.T) {
	a := testAgent(t, "a", 1, randomKey(t))
	c, err := net.Dial("tcp", a.controlAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(testHello(a.ckey, controlVersion, time.Now().Add(-time.Hour), 3))
	c.SetReadDeadline(time.Now().Add(testbudget.Scale(5 * time.Second)))
	reply := make([]byte, replySize)
	if _, err := io.ReadFull(c, reply); err != nil || binary.BigEndian.Uint16(reply[6:]) != hsStale {
		t.Errorf("reply to an hour-old hello: status %d (%v), want hsStale", binary.BigEndian.Uint16(reply[6:]), err)
	}

	key := controlKey(randomKey(t))
	cl, s := net.Pipe()
	defer cl.Close()
	defer s.Close()
	go func() {
		hello := make([]byte, helloSize)
		io.ReadFull(s, hello)
		finishHandshake(s, key, hello, helloStale) // as an agent whose clock differs
	}()
	_, err = clientHandshake(cl, key)
	if err == nil || !strings.Contains(err.Error(), "synchronize the clocks") {
		t.Errorf("handshake answered hsStale: %v, want an error naming the clocks", err)
	}
}

// shedProxy forwards connections to addr, closing the first drop of them at once as an
// agent that sheds them would.
func shedProxy(t *testing.T, addr string, drop int) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if n < drop {
				c.Close()
				continue
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer up.Close()
				go func() {
					io.Copy(up, c)
					up.Close() // the client's close reaches the agent
				}()
				io.Copy(c, up)
			}()
		}
	}()
	return ln.Addr().String()
}

// dialControl tries a shed handshake again, and when the agent sheds every try it says
// so, not a word about the key.
func TestDialControlRetriesShed(t *testing.T) {
	a := testAgent(t, "a", 1, randomKey(t))
	cc, err := dialControl(shedProxy(t, a.controlAddr(), 3), a.ckey, defaultTiming.scaled(testbudget.Scale))
	if err != nil {
		t.Fatalf("dial after 3 shed handshakes: %v", err)
	}
	cc.close()

	tm := ctlTiming{dial: 500 * time.Millisecond, handshake: 300 * time.Millisecond}
	_, err = dialControl(shedProxy(t, a.controlAddr(), 1<<30), a.ckey, tm)
	if err == nil || !errors.Is(err, errShed) || !strings.Contains(err.Error(), "handshake shed (agent busy)") ||
		strings.Contains(err.Error(), "key") {
		t.Errorf("dial to an agent that sheds every handshake: %v; want handshake shed (agent busy), no word of the key", err)
	}
}
