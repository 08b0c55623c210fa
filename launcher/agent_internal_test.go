package launcher

import (
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSweepStaleDirs(t *testing.T) {
	tmp := t.TempDir()
	old := time.Now().Add(-2 * time.Minute)
	mk := func(name string, listen bool) (string, net.Listener) {
		dir := filepath.Join(tmp, name)
		os.Mkdir(dir, 0o700)
		ln, err := net.Listen("unix", filepath.Join(dir, "agent.sock"))
		if err != nil {
			t.Fatal(err)
		}
		if !listen {
			ln.(*net.UnixListener).SetUnlinkOnClose(false)
			ln.Close() // the socket file stays, nobody listens: a killed agent's
			ln = nil
		}
		os.Chtimes(dir, old, old)
		return dir, ln
	}
	stale, _ := mk("golaunch-aaaa-1", false)
	live, ln := mk("golaunch-bbbb-2", true)
	defer ln.Close()
	other, _ := mk("notours-3", false)
	young, _ := mk("golaunch-cccc-4", false)
	os.Chtimes(young, time.Now(), time.Now())
	sweepStaleDirs(tmp, log.New(io.Discard, "", 0))
	for dir, want := range map[string]bool{stale: false, live: true, other: true, young: true} {
		if _, err := os.Stat(dir); (err == nil) != want {
			t.Errorf("%s: exists=%v, want %v", filepath.Base(dir), err == nil, want)
		}
	}
}

// TestWatchSubmitterIsolation: the job's control connection is closed when the
// submitter departs and the connection stays silent for deadSilence, but not while the
// submitter's pings keep arriving; when only other hosts of the job depart it stays open
// while one remains, and is closed isolatedGrace after the last one once the connection
// is silent too (a host cut off before gossip told it of the submitter still ends its
// ranks).
func TestWatchSubmitterIsolation(t *testing.T) {
	a := &Agent{log: log.New(io.Discard, "", 0)}
	closedWithin := func(c net.Conn, d time.Duration) bool {
		c.SetReadDeadline(time.Now().Add(d))
		_, err := c.Read(make([]byte, 1))
		return err == io.EOF || err == io.ErrClosedPipe
	}
	// run watches a connection whose reader waits for frames (as serve does), so that
	// its silence grows unless the test's side pings.
	run := func(events ...string) (peer net.Conn, leaves chan leaveEvent, done chan struct{}) {
		mine, peer := net.Pipe()
		cc := &ctlConn{c: mine}
		go func() {
			for {
				if _, _, err := cc.recv(); err != nil {
					return
				}
			}
		}()
		leaves, done = make(chan leaveEvent, 8), make(chan struct{})
		go func() {
			a.watchSubmitter(cc, "job", "sub", 2, leaves)
			close(done)
		}()
		for _, n := range events {
			leaves <- leaveEvent{Name: n}
		}
		return peer, leaves, done
	}

	start := time.Now()
	peer, _, done := run("sub")
	if !closedWithin(peer, deadSilence+5*time.Second) {
		t.Fatal("the submitter's departure and silence left the control connection open")
	}
	if d := time.Since(start); d < deadSilence/2 {
		t.Fatalf("closed %v after the submitter's departure, before its connection was silent for %v", d, deadSilence)
	}
	<-done

	// The submitter is declared dead but keeps pinging: the connection stays open.
	peer, leaves, done := run("sub")
	ping, err := encodeFrameForTest(fPing, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 * int(deadSilence/heartbeatInterval) {
		if _, err := peer.Write(ping); err != nil {
			t.Fatalf("a live submitter's connection was closed: %v", err)
		}
		time.Sleep(heartbeatInterval)
	}
	close(leaves)
	<-done
	peer.Close()

	peer, leaves, done = run("h1")
	if closedWithin(peer, isolatedGrace+time.Second) {
		t.Fatal("one other host's departure closed the control connection: the submitter names it")
	}
	start = time.Now()
	leaves <- leaveEvent{Name: "h2"}
	if !closedWithin(peer, isolatedGrace+5*time.Second) {
		t.Fatal("losing every other host of the job left the control connection open")
	}
	if d := time.Since(start); d < isolatedGrace/2 {
		t.Fatalf("closed %v after isolation, before the submitter's grace", d)
	}
	<-done

	peer, leaves, done = run("h1", "h2")
	close(leaves) // the job ended first
	<-done
	if closedWithin(peer, 100*time.Millisecond) {
		t.Fatal("a watch whose job ended closed the control connection")
	}
}
