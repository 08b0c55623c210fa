package launcher

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// TestLaunchProcs runs real-runtime ranks under GORMA_PROCS and checks the GOMAXPROCS
// Init leaves each rank with: a count is taken as it is; go keeps Go's choice (the
// processors the rank may use); auto keeps it on a host that the ranks do not fill and
// lowers it where they do: to one when the ranks talk over shared memory only, to two
// when they use tcp (the rule's table is runtime's TestHostProcs).
func TestLaunchProcs(t *testing.T) {
	binaries(t)
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set: the ranks inherit it")
	}
	prog := rtprog(t)
	c := len(agentCPUs())
	for _, tc := range []struct {
		name string
		n    int
		env  []string
		want int
	}{
		{"count", 2, []string{"-x", "GORMA_PROCS=1"}, 1},
		{"go", 2, []string{"-x", "GORMA_PROCS=go"}, c},
		{"auto, one rank", 1, nil, c}, // fills the host only where c is 1, and then keeps 1
		{"auto, a full host", c, nil, 1},
		{"auto, a full host over tcp", c, []string{"--transport", "tcp"}, min(c, 2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-n", strconv.Itoa(tc.n), "--bind-to", "none"}, tc.env...)
			r := runGL(t, "", append(args, prog, "procs")...)
			if r.code != 0 {
				t.Fatalf("golaunch %q: exit %d\n%s", args, r.code, r.stderr)
			}
			for rank := range tc.n {
				mustContain(t, "stdout", r.stdout, fmt.Sprintf("procs %d %d %d %d\n", rank, tc.want, tc.n, c))
			}
		})
	}
}
