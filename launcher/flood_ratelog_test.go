package launcher

import (
	"bytes"
	"fmt"
	"log"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// lines is a log sink safe for concurrent writes.
type lines struct {
	mu sync.Mutex
	l  []string
}

func (s *lines) add(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.l = append(s.l, line)
}

func (s *lines) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.l...)
}

// TestRateLog floods one kind and trickles another on synctest's fake clock: each kind
// gets its first event at once, then one summary per interval with events, and is
// quiet again after an interval without.
func TestRateLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out lines
		r := newRateLog(10*time.Second, out.add)
		for i := range 1000 {
			r.note(logRefused, fmt.Sprintf("from 10.0.0.3:%d: bad hello", i))
		}
		r.note(logShed, "from 10.0.0.4:1: silent, shed for a newer connection (64 handshakes pending)")
		want := []string{
			"refused control connection from 10.0.0.3:0: bad hello",
			"dropped control connection from 10.0.0.4:1: silent, shed for a newer connection (64 handshakes pending)",
		}
		check := func(when string) {
			t.Helper()
			if got := out.get(); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%s: lines\n%s\nwant\n%s", when, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
		check("at once")
		time.Sleep(5 * time.Second)
		r.note(logRefused, "from 10.0.0.5:7: hello without a valid key proof")
		time.Sleep(5 * time.Second)
		synctest.Wait()
		want = append(want, "refused 1000 control connections in 10s (last from 10.0.0.5:7: hello without a valid key proof)")
		check("after the first interval")
		time.Sleep(10 * time.Second) // a quiet interval: both kinds are forgotten
		synctest.Wait()
		check("after a quiet interval")
		r.note(logRefused, "from 10.0.0.6:8: bad hello")
		r.note(logRefused, "from 10.0.0.6:9: bad hello")
		want = append(want, "refused control connection from 10.0.0.6:8: bad hello")
		check("a new burst")
		r.flush()
		want = append(want, "refused 1 control connections in 10s (last from 10.0.0.6:9: bad hello)")
		check("flushed")
		time.Sleep(time.Minute)
		synctest.Wait()
		check("a minute after the flush")
	})
}

// TestClassifyGossip checks memberlist's (v0.7) lines that strangers cause, as its
// logger writes them, and lines that must pass.
func TestClassifyGossip(t *testing.T) {
	const ts = "2026/01/02 15:04:05 "
	for _, tc := range []struct {
		line   string
		kind   *logKind
		detail string
	}{
		{ts + "[ERR] memberlist: Decrypt packet failed: no installed keys could decrypt the message from=10.0.0.3:4455",
			logGossipPacket, "from 10.0.0.3:4455: Decrypt packet failed: no installed keys could decrypt the message"},
		{ts + `[ERR] memberlist: discarding packet with unacceptable label "": from=10.0.0.3:1`,
			logGossipPacket, `from 10.0.0.3:1: discarding packet with unacceptable label ""`},
		{ts + "[ERR] memberlist: cannot decode label; packet has been truncated from=10.0.0.3:1",
			logGossipPacket, "from 10.0.0.3:1: cannot decode label; packet has been truncated"},
		{ts + "[ERR] memberlist: msg type (99) not supported from=10.0.0.3:1",
			logGossipPacket, "from 10.0.0.3:1: msg type (99) not supported"},
		{ts + "[WARN] memberlist: Got invalid checksum for UDP packet: 1a, 2b",
			logGossipPacket, "from an unknown address: Got invalid checksum for UDP packet: 1a, 2b"},
		{ts + "[ERR] memberlist: failed to receive and remove the stream label header: EOF from=10.0.0.3:2",
			logGossipStream, "from 10.0.0.3:2: failed to receive and remove the stream label header: EOF"},
		{ts + `[ERR] memberlist: discarding stream with unacceptable label "x": from=10.0.0.3:2`,
			logGossipStream, `from 10.0.0.3:2: discarding stream with unacceptable label "x"`},
		{ts + "[ERR] memberlist: failed to receive: no installed keys could decrypt the message from=10.0.0.3:2",
			logGossipStream, "from 10.0.0.3:2: failed to receive: no installed keys could decrypt the message"},
		{ts + "[ERR] memberlist: Error accepting TCP connection: accept tcp 10.0.0.1:7946: accept4: too many open files",
			logGossipAccept, "Error accepting TCP connection: accept tcp 10.0.0.1:7946: accept4: too many open files"},
		{ts + "[INFO] memberlist: Suspect h2 has failed, no acks received", nil, ""},
		{ts + "[ERR] memberlist: Push/Pull with h2 failed: dial tcp: connection refused", nil, ""},
		{ts + "[DEBUG] memberlist: Stream connection from=10.0.0.3:2", nil, ""},
	} {
		k, detail := classifyGossip(tc.line)
		if k != tc.kind || detail != tc.detail {
			t.Errorf("classifyGossip(%q) = %v, %q; want %v, %q", tc.line, k, detail, tc.kind, tc.detail)
		}
	}
}

// TestGossipLog writes through a log.Logger as memberlist does: ordinary lines pass
// whole, a stranger's are summarised.
func TestGossipLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		lg := log.New(newGossipLog(&buf), "", log.LstdFlags)
		lg.Printf("[INFO] memberlist: Marking h2 as failed, suspect timeout reached (0 peer confirmations)")
		for i := range 500 {
			lg.Printf("[ERR] memberlist: Decrypt packet failed: no installed keys could decrypt the message from=10.0.0.3:%d", i)
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		want := []string{
			"[INFO] memberlist: Marking h2 as failed, suspect timeout reached (0 peer confirmations)",
			"[WARN] memberlist: dropped gossip packet from 10.0.0.3:0: Decrypt packet failed: no installed keys could decrypt the message",
			"[WARN] memberlist: dropped 499 gossip packets in 10s (last from 10.0.0.3:499: Decrypt packet failed: no installed keys could decrypt the message)",
		}
		if len(got) != len(want) {
			t.Fatalf("lines:\n%s\nwant lines ending in:\n%s", buf.String(), strings.Join(want, "\n"))
		}
		for i := range want {
			if !strings.HasSuffix(got[i], want[i]) {
				t.Errorf("line %d is %q, want it to end in %q", i, got[i], want[i])
			}
		}
	})
}
