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

// pmixRank is a rank that speaks the PMIx wire by hand, from the variables golaunch
// gives it: it connects with the native credential, then rank 0 waits in a fence and
// rank 1 sends the message given in hex (or "" for none).
const pmixRank = `import os, socket, struct, sys
ns = os.environ['PMIX_NAMESPACE'].encode()
rank = int(os.environ['PMIX_RANK'])
host, port = os.environ['PMIX_SERVER_URI41'].split('tcp4://')[1].rsplit(':', 1)
s = socket.create_connection((host, int(port)))
body = (b'native\0' + struct.pack('>I', 8) + struct.pack('<II', os.getuid(), os.getgid()) + b'\0' +
        ns + b'\0' + struct.pack('>I', rank) + b'4.2.2\0v41\0\x01hash\0\0')
s.sendall(b'\xff' * 8 + struct.pack('<Q', len(body)) + body)
ack = b''
while len(ack) < 8:
    ack += s.recv(8 - len(ack))
st, pindex = struct.unpack('>iI', ack)
def send(tag, b):
    s.sendall(struct.pack('>IIII', pindex, tag, len(b), 0) + b)
if rank == 0:
    send(1, b'\x02\x03\x02\x01\x02' + bytes([2 * (len(ns) + 1)]) + ns + b'\0\xfe\xff\xff\xff\x0f\x02\x00')
elif sys.argv[1]:
    send(2, bytes.fromhex(sys.argv[1]))
while s.recv(1 << 16):
    pass
`

// TestPMIxProtocolError: rank 1 of a real job breaks the PMIx wire while rank 0 waits in
// a fence. The job must end at once with exit 125 and a summary naming the rank and the
// PMIx protocol error, as a PMI-1 protocol error does.
func TestPMIxProtocolError(t *testing.T) {
	binaries(t)
	py := "/usr/bin/python3"
	if _, err := exec.LookPath(py); err != nil {
		testbudget.SkipEngine(t, "needs Debian's python3 (/usr/bin/python3)")
	}
	script := filepath.Join(t.TempDir(), "pmixrank.py")
	if err := os.WriteFile(script, []byte(pmixRank), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, msg, want string }{
		{"unknown command", "0263", "PMIx protocol error in command 99: unknown command 99"},
		{"commit of scope 9", "0202020902010000", "PMIx protocol error in commit: PMIx body at byte"},
		{"trailing bytes", "020500", "PMIx protocol error in finalize: PMIx body at byte 2: 1 bytes after the request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			budget := testbudget.Scale(20 * time.Second)
			r := runGL(t, "", "-n", "2", "--startup-timeout", "0", "--timeout", budget.String(), py, script, tc.msg)
			if r.code == ExitTimeout {
				t.Fatalf("rank 1's PMIx protocol error did not end the job within %v:\n%s", budget, r.stderr)
			}
			summary := abortLine(r.stderr)
			if r.code != ExitFailure || !strings.HasPrefix(summary, "golaunch: rank 1 (host ") || !strings.Contains(summary, tc.want) {
				t.Fatalf("exit %d, summary %q; want %d and %q\nstderr:\n%s", r.code, summary, ExitFailure, tc.want, r.stderr)
			}
		})
	}
}
