package shm

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// A peer whose process is gone fails ToRTR with verbs.ErrPeer and the system's own
// error in the chain: the ENOENT of its segment's /proc/PID/fd entry (here an fd that is
// not open, as after its owner exited) and the ESRCH of a process that has exited, so
// that the runtime can say "its process exited" and keep the detail for errors.As.
func TestToRTRPeerGone(t *testing.T) {
	ctx := context.Background()
	b := openSide(t, verbs.Config{}, verbs.QPAttr{})
	ep, err := decodeEndpoint(b.qp.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	noSegment := ep
	if noSegment.desc.Path != "" {
		noSegment.desc.Path = filepath.Join(t.TempDir(), "gone")
	} else {
		noSegment.desc.FD = 1 << 20 // above any open descriptor
	}
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := ep
	deadPID.pid, deadPID.desc.PID = int32(exited.Process.Pid), int32(exited.Process.Pid)
	for _, tc := range []struct {
		name string
		ep   endpoint
		want error
	}{
		{"segment gone", noSegment, unix.ENOENT},
		{"process exited", deadPID, unix.ESRCH},
	} {
		a := openSide(t, verbs.Config{}, verbs.QPAttr{})
		raw, err := tc.ep.appendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		err = a.qp.ToRTR(ctx, raw)
		var ve *verbs.Error
		if !errors.Is(err, verbs.ErrPeer) || !errors.Is(err, tc.want) || !errors.As(err, &ve) {
			t.Errorf("%s: ToRTR: %v, want a *verbs.Error wrapping ErrPeer and %v", tc.name, err, tc.want)
		}
	}
}

// connectChild starts a child process (TestChildProcess), connects a QP of a new device
// to it, and returns both with the key of the child's arena region.
func connectChild(t testing.TB) (*childProc, *side, uint64) {
	t.Helper()
	c := startChild(t)
	f := c.expect(t, "HELLO")
	childEP, err := hex.DecodeString(f[0])
	if err != nil {
		t.Fatal(err)
	}
	arenaKey, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	me := openSide(t, verbs.Config{Wait: verbs.WaitBlock}, verbs.QPAttr{})
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
	defer cancel()
	if err := verbs.Connect(ctx, me.qp, childEP); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c.in, "EP %x\n", me.qp.Endpoint())
	c.expect(t, "CONNECTED")
	return c, me, arenaKey
}

// A request that completes after its peer's death is observable fails, even where no
// monitor has handled the death yet: here the peer is polled (no pidfd in the budget,
// checked every monitorFallbackPoll), and the first look after the child is reaped is
// the mapping's PeerAlive and an RDMA write. The kernel marked the child's liveness word
// as it died, so both see the death.
func TestCompleteAfterDeathPolled(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in the child")
	}
	old := pidfdBudget
	pidfdBudget = 0
	defer func() { pidfdBudget = old }()
	c, me, key := connectChild(t)
	m, err := me.qp.(verbs.Mapper).Map(key, 0, 64, verbs.RemoteRead|verbs.RemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unmap()
	src := make([]byte, 8)
	me.post(t, verbs.SendWR{WRID: 1, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: src, Remote: verbs.RemoteAddr{RKey: key}})
	wantWC(t, me.next(t), 1, verbs.Success, verbs.WCRDMAWrite)
	if !m.PeerAlive() {
		t.Fatal("PeerAlive is false while the child runs")
	}
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait() // reaped: the death is observable
	if m.PeerAlive() {
		t.Error("PeerAlive is true after the child was reaped")
	}
	me.post(t, verbs.SendWR{WRID: 2, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: src, Remote: verbs.RemoteAddr{RKey: key}})
	wantWC(t, me.next(t), 2, verbs.RetryExcErr, verbs.WCRDMAWrite)
}
