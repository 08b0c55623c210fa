package launcher

import (
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// TestRuntimeRPC runs net/rpc between the ranks of a real job: rank 0 serves on
// World.Listen, the others dial it with World.Dial and call it, over shm and over tcp
// placement alike (the streams run through the ranks' connection listeners).
func TestRuntimeRPC(t *testing.T) {
	const n = 4
	prog := rtprog(t)
	for _, tr := range []string{"auto", "tcp"} {
		t.Run(tr, func(t *testing.T) {
			gl := startGL(t, "-n", fmt.Sprint(n), "--transport", tr, "--timeout", testbudget.Scale(60*time.Second).String(), prog, "rpc")
			if code := gl.wait(t, 60*time.Second); code != 0 {
				t.Fatalf("golaunch exited %d:\n%s", code, gl.stderr.String())
			}
			seen := map[string]bool{}
			for l := range gl.lines {
				seen[l] = true
			}
			for r := 1; r < n; r++ {
				if want := fmt.Sprintf("[%d] rpc %d %d", r, r, 7*r); !seen[want] {
					t.Errorf("no line %q in the output %v", want, seen)
				}
			}
		})
	}
}
