package shm

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

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
