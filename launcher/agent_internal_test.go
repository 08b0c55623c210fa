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
