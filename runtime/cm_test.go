package runtime

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// TestCMDecide pins the target's answer to a connection request in every state.
func TestCMDecide(t *testing.T) {
	for _, tc := range []struct {
		me, from int
		st       cmState
		want     uint8
	}{
		{1, 0, cmNone, cmAccept},
		{0, 1, cmNone, cmAccept},
		{0, 1, cmDialing, cmYield},  // this rank's own request wins
		{1, 0, cmDialing, cmAccept}, // the lower rank's request wins
		{0, 1, cmReady, cmYield},
		{1, 0, cmAccepting, cmRefuse},
		{1, 0, cmFailed, cmRefuse},
	} {
		if got := cmDecide(tc.me, tc.from, tc.st); got != tc.want {
			t.Errorf("rank %d, request from %d in state %d: %d, want %d", tc.me, tc.from, tc.st, got, tc.want)
		}
	}
}

// cmSim simulates two ranks' connection set-up with cmDecide: which ranks start a
// request, and every order in which requests and replies are delivered.
type cmSim struct {
	st       [2]cmState
	waiting  [2]bool // an origin told to yield, waiting for its listener side
	accepted int     // requests accepted
	queue    []cmMsg
}

type cmMsg struct {
	to, from int
	reply    bool
	status   uint8
}

// step delivers message i of the queue.
func (s cmSim) step(i int) cmSim {
	s.queue = slices.Clone(s.queue)
	m := s.queue[i]
	s.queue = slices.Delete(s.queue, i, i+1)
	if !m.reply {
		st := cmDecide(m.to, m.from, s.st[m.to])
		if st == cmAccept {
			s.accepted++
			s.st[m.to] = cmReady // the listener side finishes the pair
			if s.waiting[m.to] {
				s.waiting[m.to] = false
			}
		}
		s.queue = append(s.queue, cmMsg{to: m.from, from: m.to, reply: true, status: st})
		return s
	}
	switch m.status {
	case cmAccept:
		s.st[m.to] = cmReady
	case cmYield:
		if s.st[m.to] != cmReady {
			s.waiting[m.to] = true
		}
	}
	return s
}

// explore runs every delivery order from s and checks each end state.
func (s cmSim) explore(t *testing.T, path string) {
	if len(s.queue) == 0 {
		if s.accepted != 1 || s.st[0] != cmReady || s.st[1] != cmReady || s.waiting[0] || s.waiting[1] {
			t.Errorf("%s: accepted %d, states %v, waiting %v", path, s.accepted, s.st, s.waiting)
		}
		return
	}
	for i, m := range s.queue {
		s.step(i).explore(t, fmt.Sprintf("%s %+v", path, m))
	}
}

// TestCMSimulation: whoever starts, and in whatever order the messages arrive, exactly
// one request is accepted and both ranks end connected, none waiting.
func TestCMSimulation(t *testing.T) {
	for _, starters := range [][]int{{0}, {1}, {0, 1}, {1, 0}} {
		var s cmSim
		for _, r := range starters {
			s.st[r] = cmDialing
			s.queue = append(s.queue, cmMsg{to: 1 - r, from: r})
		}
		s.explore(t, fmt.Sprint(starters))
	}
}

// FuzzCMFrames: no handshake message makes a decoder panic, and what the decoders accept
// encodes back to the same bytes.
func FuzzCMFrames(f *testing.F) {
	h := cmHello{from: 3, to: 7}
	f.Add(h.encode())
	f.Add(encodeCMChallenge(&h.nonce))
	f.Add(encodeCMBusy())
	f.Add(encodeCMMessage(cmReqMagic, 0, encodeCMRequestBody([]byte("card"), []byte("ep")), []byte("s"), cmReqLabel, nil)[:cmHeadSize])
	f.Add(encodeCMMessage(cmReplyMagic, cmYield, nil, []byte("s"), cmReplyLabel, nil))
	f.Add(encodeCMRequestBody([]byte("card"), []byte("endpoint")))
	f.Fuzz(func(t *testing.T, b []byte) {
		if h, err := decodeCMHello(b); err == nil && !bytes.Equal(h.encode(), b) {
			t.Fatalf("hello %x decodes to %+v, which encodes differently", b, h)
		}
		if n, err := decodeCMChallenge(b); err == nil && !bytes.Equal(encodeCMChallenge(&n), b) {
			t.Fatalf("challenge %x does not encode back", b)
		}
		if _, err := decodeCMChallenge(b); err == nil && isCMBusy(b) {
			t.Fatalf("%x is both a challenge and a busy frame", b)
		}
		for _, magic := range []string{cmReqMagic, cmReplyMagic} {
			if h, err := decodeCMHead(b, magic); err == nil && (h.n > cmMaxBody || h.status > cmNotYet) {
				t.Fatalf("%s head %x decodes to %+v", magic, b, h)
			}
		}
		if c, ep, err := decodeCMRequestBody(b); err == nil && !bytes.Equal(encodeCMRequestBody(c, ep), b) {
			t.Fatalf("request body %x does not encode back", b)
		}
	})
}

// TestCMMessageMAC: a request or reply checks only with the secret and the transcript it
// was made with, and with its own body.
func TestCMMessageMAC(t *testing.T) {
	secret, transcript, body := []byte("secret of the job"), []byte("hello and challenge"), []byte("body")
	msg := encodeCMMessage(cmReplyMagic, cmAccept, body, secret, cmReplyLabel, transcript)
	h, err := decodeCMHead(msg[:cmHeadSize], cmReplyMagic)
	if err != nil || h.n != len(body) {
		t.Fatalf("head: %+v, %v", h, err)
	}
	raw := msg[:cmHeadSize]
	if !checkCMMAC(&h, raw, body, secret, cmReplyLabel, transcript) {
		t.Fatal("the reply does not check")
	}
	for name, ok := range map[string]bool{
		"another secret":     checkCMMAC(&h, raw, body, []byte("secret of another"), cmReplyLabel, transcript),
		"another transcript": checkCMMAC(&h, raw, body, secret, cmReplyLabel, []byte("replayed")),
		"the request label":  checkCMMAC(&h, raw, body, secret, cmReqLabel, transcript),
		"another body":       checkCMMAC(&h, raw, []byte("bodx"), secret, cmReplyLabel, transcript),
	} {
		if ok {
			t.Errorf("the reply checks with %s", name)
		}
	}
}

// connectedTo waits until w's ready connections are want, or a bound passes, and
// returns them. An accepting rank marks a connection ready just after it answered the
// request, so a message over it can complete a receive a moment before.
func connectedTo(w *World, want []int) []int {
	end := time.Now().Add(testbudget.Scale(5 * time.Second))
	for {
		c := connected(w)
		if slices.Equal(c, want) || time.Now().After(end) {
			return c
		}
		time.Sleep(time.Millisecond)
	}
}

// connected returns the ranks w's engine holds a ready connection to (as many as
// Connections counts).
func connected(w *World) []int {
	e := w.e
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []int
	for r, p := range e.links.peers {
		if p != nil && p.ready {
			out = append(out, r)
		}
	}
	return out
}

// TestLazyConnections: Init connects no queue pair; a ring connects each rank to its two
// neighbours only, a Barrier adds its dissemination partners, and an exchange of every
// rank with every other at once (each pair's two requests crossing) connects every pair,
// on one node (shm) and across two (tcp), with every message intact.
func TestLazyConnections(t *testing.T) {
	const n = 8
	for _, tc := range []struct {
		name, mapping string
		hosts         []string
	}{
		{"shm", "(vector,(0,1,8))", make([]string, n)},
		{"mixed", "(vector,(0,2,4))", []string{"a", "a", "a", "a", "b", "b", "b", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
			defer cancel()
			pm := newAgentPM(t, n, tc.mapping)
			worlds := startFake(t, ctx, pm, tc.hosts)
			for r, w := range worlds {
				if c := connected(w); len(c) != 0 || (*subWorld)(w).Connections() != 0 {
					t.Errorf("rank %d is connected to %v (Connections %d) after Init", r, c, (*subWorld)(w).Connections())
				}
			}
			runAll(t, worlds, func(w *World) error {
				r := w.Rank()
				next, prev := (r+1)%n, (r+n-1)%n
				if err := Send(ctx, w, []int64{int64(r)}, next, 1); err != nil {
					return err
				}
				got := []int64{-1}
				if _, err := Recv(ctx, w, got, prev, 1); err != nil || got[0] != int64(prev) {
					return fmt.Errorf("ring: got %d, %v", got[0], err)
				}
				return nil
			})
			for r, w := range worlds {
				want := []int{(r + n - 1) % n, (r + 1) % n}
				slices.Sort(want)
				if c := connectedTo(w, want); !slices.Equal(c, want) {
					t.Errorf("rank %d is connected to %v after the ring, want %v", r, c, want)
				}
			}
			runAll(t, worlds, func(w *World) error { return Barrier(ctx, w) })
			for r, w := range worlds {
				if c := connected(w); len(c) > 2+2*3 {
					t.Errorf("rank %d is connected to %d ranks after a Barrier of %d: %v", r, len(c), n, c)
				}
			}
			runAll(t, worlds, func(w *World) error {
				me := w.Rank()
				var reqs []*Request
				bufs := make([][]int64, n)
				for r := range n {
					if r == me {
						continue
					}
					bufs[r] = make([]int64, 1000) // rendezvous on shm, eager on tcp
					q, err := Irecv(w, bufs[r], r, 2)
					if err != nil {
						return err
					}
					out := make([]int64, 1000)
					for i := range out {
						out[i] = int64(me*1_000_000 + r*1000 + i)
					}
					s, err := Isend(w, out, r, 2)
					if err != nil {
						return err
					}
					reqs = append(reqs, q, s)
				}
				if err := WaitAll(ctx, reqs, nil); err != nil {
					return err
				}
				for r, b := range bufs {
					for i, v := range b {
						if want := int64(r*1_000_000 + me*1000 + i); v != want {
							return fmt.Errorf("from rank %d, element %d: %d, want %d", r, i, v, want)
						}
					}
				}
				return nil
			})
			for r, w := range worlds {
				var others []int
				for p := range n {
					if p != r {
						others = append(others, p)
					}
				}
				if c := connectedTo(w, others); len(c) != n-1 {
					t.Errorf("rank %d is connected to %d ranks after the exchange, want %d", r, len(c), n-1)
				}
				for p := range n {
					if p != r && w.Transport(p) != (*subWorld)(worlds[r]).TransportBetween(r, p) {
						t.Errorf("rank %d: Transport(%d) %q, TransportBetween %q", r, p, w.Transport(p), (*subWorld)(worlds[r]).TransportBetween(r, p))
					}
				}
			}
			runAll(t, worlds, func(w *World) error { return w.Finalize(ctx) })
		})
	}
}

// runAll runs f on every World at once and fails the test with each rank's error.
func runAll(t *testing.T, worlds []*World, f func(*World) error) {
	t.Helper()
	errs := make([]error, len(worlds))
	var wg sync.WaitGroup
	for r, w := range worlds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = f(w)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}

// TestCMStranger: connections to a rank's listener that are not a job's rank asking
// (garbage, a hello naming another rank, a request without the job secret) are closed
// and counted, create nothing, and leave the job working.
func TestCMStranger(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	pm := newAgentPM(t, 2, "(vector,(0,1,2))")
	worlds := startFake(t, ctx, pm, make([]string, 2))
	e := worlds[0].e
	try := func(name string, talk func(c net.Conn)) {
		before := e.links.cm.rejected.Load()
		c, err := net.Dial("tcp", e.links.cm.addr)
		if err != nil {
			t.Fatal(err)
		}
		talk(c)
		io.Copy(io.Discard, c) // the listener closes it
		c.Close()
		for deadline := time.Now().Add(testbudget.Scale(5 * time.Second)); e.links.cm.rejected.Load() == before; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not counted as rejected", name)
			}
		}
	}
	try("garbage", func(c net.Conn) { c.Write(bytes.Repeat([]byte("GET / HTTP/1.1\r\n"), 4)) })
	try("a hello for rank 5", func(c net.Conn) {
		h := cmHello{from: 1, to: 5}
		c.Write(h.encode())
	})
	try("a request without the secret", func(c net.Conn) {
		h := cmHello{from: 1, to: 0}
		hb := h.encode()
		c.Write(hb)
		cb := make([]byte, cmChallSize)
		if _, err := io.ReadFull(c, cb); err != nil {
			t.Errorf("no challenge: %v", err)
			return
		}
		body := encodeCMRequestBody(worlds[1].e.links.table().cards[1].encode(), []byte("endpoint"))
		c.Write(encodeCMMessage(cmReqMagic, 0, body, []byte("not the job's secret, not at all"), cmReqLabel, append(hb, cb...)))
	})
	if c := connected(worlds[0]); len(c) != 0 {
		t.Errorf("rank 0 is connected to %v", c)
	}
	e.mu.Lock()
	if e.links.peers[1] != nil {
		t.Errorf("a stranger made rank 0 a peer for rank 1")
	}
	e.mu.Unlock()
	ringAndFinalize(t, ctx, worlds)
}
