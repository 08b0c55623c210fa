package launcher

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// pmixOldRank is a rank that speaks the PMIx wire by hand, from the variables golaunch
// gives it. With "child" it first runs itself as a program that inherits its PMIX_*
// variables and connects as its rank with PMIx 3.2.3's wire, which is refused; then it
// connects, fences with the other ranks and finalizes. With "old" rank 1 connects with
// PMIx 3.2.3's wire itself and waits, and rank 0 connects and waits in a fence.
const pmixOldRank = `import os, socket, struct, subprocess, sys, time
ns = os.environ['PMIX_NAMESPACE'].encode()
rank = int(os.environ['PMIX_RANK'])
host, port = os.environ['PMIX_SERVER_URI41'].split('tcp4://')[1].rsplit(':', 1)
def read(s, n):
    b = b''
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            sys.exit('PMIx server closed the connection')
        b += c
    return b
def connect(wire):
    s = socket.create_connection((host, int(port)))
    body = (b'native\0' + struct.pack('>I', 8) + struct.pack('<II', os.getuid(), os.getgid()) + b'\0' +
            ns + b'\0' + struct.pack('>I', rank) + wire + b'\x01hash\0\0')
    s.sendall(b'\xff' * 8 + struct.pack('<Q', len(body)) + body)
    return (s,) + struct.unpack('>iI', read(s, 8))
def call(s, pindex, tag, body):
    s.sendall(struct.pack('>IIII', pindex, tag, len(body), 0) + body)
    read(s, struct.unpack('>IIII', read(s, 16))[2])
old = b'3.2.3\0v3\0'
mode = sys.argv[1]
if mode == 'grandchild':
    print('child of rank %d: status %d' % (rank, connect(old)[1]), flush=True)
    sys.exit(0)
if mode == 'old' and rank == 1:
    connect(old)
    time.sleep(600)
if mode == 'child':
    subprocess.run([sys.executable, sys.argv[0], 'grandchild'], check=True)
s, st, pindex = connect(b'4.2.2\0v41\0')
call(s, pindex, 1, b'\x02\x03\x02\x01\x02' + bytes([2 * (len(ns) + 1)]) + ns + b'\0\xfe\xff\xff\xff\x0f\x02\x00')
call(s, pindex, 2, b'\x02\x05')
`

// TestPMIxConnectBlame: a refused PMIx connect ends the job only when it comes from the
// rank's own process. A program that each rank runs, with the rank's PMIX_* variables
// and PMIx 3.2.3's wire, is refused and the job goes on to a clean end. A rank that
// connects with PMIx 3.2.3's wire itself ends the job, and the summary names it and its
// version.
func TestPMIxConnectBlame(t *testing.T) {
	binaries(t)
	py := "/usr/bin/python3"
	if _, err := exec.LookPath(py); err != nil {
		testbudget.SkipEngine(t, "needs Debian's python3 (/usr/bin/python3)")
	}
	script := filepath.Join(t.TempDir(), "pmixold.py")
	if err := os.WriteFile(script, []byte(pmixOldRank), 0o644); err != nil {
		t.Fatal(err)
	}
	budget := testbudget.Scale(20 * time.Second)
	t.Run("a rank's child", func(t *testing.T) {
		r := runGL(t, "", "-n", "2", "--timeout", budget.String(), py, script, "child")
		if r.code != 0 || strings.Contains(r.stderr, "PMIx protocol error") {
			t.Fatalf("exit %d; want 0 and no protocol error\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		for _, rank := range []string{"0", "1"} {
			if !strings.Contains(r.stdout, "child of rank "+rank+": status -") {
				t.Errorf("rank %s's child was not refused:\n%s", rank, r.stdout)
			}
		}
	})
	t.Run("the rank itself", func(t *testing.T) {
		r := runGL(t, "", "-n", "2", "--startup-timeout", "0", "--timeout", budget.String(), py, script, "old")
		if r.code == ExitTimeout {
			t.Fatalf("rank 1's refused connect did not end the job within %v:\n%s", budget, r.stderr)
		}
		summary := abortLine(r.stderr)
		want := "PMIx protocol error in connect: the rank's PMIx is version 3.2.3"
		if r.code != ExitFailure || !strings.HasPrefix(summary, "golaunch: rank 1 (host ") || !strings.Contains(summary, want) {
			t.Fatalf("exit %d, summary %q; want %d and %q\nstderr:\n%s", r.code, summary, ExitFailure, want, r.stderr)
		}
	})
}
