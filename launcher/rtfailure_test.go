package launcher

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// rtprog builds tests/rtprog, the rank program that uses the real runtime.
func rtprog(t *testing.T) string {
	t.Helper()
	return rtprogProg.path(t)
}

// shmSegments lists the gorma-* entries of /dev/shm.
func shmSegments() map[string]bool {
	ents, _ := os.ReadDir("/dev/shm")
	m := map[string]bool{}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "gorma") {
			m[e.Name()] = true
		}
	}
	return m
}

// TestRuntimeRankKilled SIGKILLs one rank of a real-runtime job while the other ranks
// are blocked in Barrier, or in a long Recv (from the victim or from AnySource), over
// shm and over tcp. The ranks ignore SIGTERM and --grace is long, so they end only when
// the runtime fails their call: every rank and golaunch must end within 2 s of the kill,
// golaunch with exit 137 and the one summary line naming rank, host, pid and signal, and
// nothing of the job may be left (processes, process groups, /dev/shm segments).
func TestRuntimeRankKilled(t *testing.T) {
	const n, victim = 4, 2
	prog := rtprog(t)
	for _, mode := range []string{"barrier", "recv"} {
		for _, tr := range []string{"shm", "tcp"} {
			t.Run(mode+"/"+tr, func(t *testing.T) {
				before := shmSegments()
				gl := startGL(t, "-n", strconv.Itoa(n), "--transport", tr, "--grace", "20s", prog, mode, strconv.Itoa(victim))
				pids := gl.readyPids(t, n)
				time.Sleep(200 * time.Millisecond) // let the others block in their call
				start := time.Now()
				if err := syscall.Kill(pids[victim], syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				code := gl.wait(t, 5*time.Second)
				took := time.Since(start)
				if bound := testbudget.Scale(2 * time.Second); took > bound {
					t.Errorf("golaunch ended %v after the kill, want within %v", took, bound)
				}
				requireGone(t, pids, max(0, 2*time.Second-time.Since(start)))
				gone := time.Since(start)
				stderr := gl.stderr.String()
				want := fmt.Sprintf("golaunch: rank %d (host %s, pid %d) killed by signal 9 (SIGKILL); job aborted", victim, hostName(), pids[victim])
				checkRootCause(t, summaryLines(stderr), code, want, 137, stderr)
				// Each survivor ended because its blocked call failed, naming a failed rank: the
				// victim, or a survivor that exited on its own failure a moment before (a
				// cascade the survivor may observe first over AnySource or a barrier).
				for rank := range n {
					if rank == victim {
						continue
					}
					prefix := fmt.Sprintf("[%d] rtprog: rank %d: ", rank, rank)
					i := strings.Index(stderr, prefix)
					if i < 0 {
						t.Errorf("rank %d printed no error:\n%s", rank, stderr)
						continue
					}
					line, _, _ := strings.Cut(stderr[i:], "\n")
					if !failedRankText.MatchString(line) {
						t.Errorf("rank %d: %q does not report a failed process", rank, line)
					}
				}
				for name := range shmSegments() {
					if !before[name] {
						t.Errorf("/dev/shm/%s left behind", name)
					}
				}
				t.Logf("golaunch ended %v after the kill, every rank gone after %v", took, gone)
			})
		}
	}
}

// failedRankText matches the runtime's text of a peer failure as a rank prints it: the
// failed rank, its host and what became of it lead.
var failedRankText = regexp.MustCompile(`: rank \d+ on host \S+ (failed|is gone)[: ]`)

// checkRootCause checks that golaunch printed exactly one summary line, want, and exited
// with code: the killed rank or the lost agent, never a survivor whose blocked call failed
// and that exited 1 a moment before the cause's report arrived.
func checkRootCause(t *testing.T, sum []string, code int, want string, wantCode int, stderr string) {
	t.Helper()
	if len(sum) != 1 || sum[0] != want || code != wantCode {
		t.Errorf("summary lines %q and exit %d, want just %q and exit %d\nstderr:\n%s", sum, code, want, wantCode, stderr)
	}
}

// listenPorts returns the TCP ports pid listens on (its sockets in LISTEN state).
func listenPorts(t *testing.T, pid int) []int {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var ports []int
	for _, file := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, file))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
			fl := strings.Fields(sc.Text())
			if len(fl) < 10 || fl[3] != "0A" || !inodes[fl[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(fl[1], ":")
			p, err := strconv.ParseUint(hexPort, 16, 16)
			if err == nil {
				ports = append(ports, int(p))
			}
		}
		f.Close()
	}
	return ports
}

// strangerRefused connects to addr, writes garbage the size of any hello and then a
// frame-like tail, and requires the peer to close the connection without writing a byte.
func strangerRefused(t *testing.T, what, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("%s %s: %v", what, addr, err)
	}
	defer c.Close()
	c.Write([]byte(strings.Repeat("\xa5", 512)))
	c.SetReadDeadline(time.Now().Add(testbudget.Scale(8 * time.Second)))
	n, err := io.Copy(io.Discard, c)
	var ne net.Error
	switch {
	case n != 0:
		t.Errorf("%s %s wrote %d bytes to a stranger", what, addr, n)
	case errors.As(err, &ne) && ne.Timeout():
		t.Errorf("%s %s did not close a stranger's connection", what, addr)
	}
}

// TestStrangersRefusedDuringJob runs a real-runtime job over tcp on two agents and, while
// its ranks wait, connects to every rank's tcp provider port and every agent's control
// port with garbage: each connection is closed without a byte written, and the job then
// completes normally. (Unit tests: tcp's TestHandshakeRejectsStrangers, the launcher's
// TestControlRejectsStrangers; an agent with another key: TestAgentWrongKeyNeverJoins.)
func TestStrangersRefusedDuringJob(t *testing.T) {
	prog := rtprog(t)
	key := writeKey(t)
	var seed string
	controls := map[string]string{}
	for _, name := range []string{"a1", "a2"} {
		args := []string{"agent", "--bind", "127.0.0.1:0", "--slots", "2", "--keyfile", key, "--name", name}
		if seed != "" {
			args = append(args, "--join", seed)
		}
		// "golaunch agent a1: gossip ADDR, control ADDR, 2 slots, 1 members"
		f := strings.Fields(startGL(t, args...).line(t, "golaunch agent "+name+": gossip ", 10*time.Second))
		if seed == "" {
			seed = strings.TrimSuffix(f[4], ",")
		}
		controls[name] = strings.TrimSuffix(f[6], ",")
	}
	c := &testCluster{keyfile: key, seed: seed}
	cmd := exec.Command(golaunchBin, c.submit("-n", "4", "--transport", "tcp", prog, "serve")...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	gl := startCmd(t, cmd)
	pids := gl.readyPids(t, 4)
	var checked int
	for rank, pid := range pids {
		ports := listenPorts(t, pid)
		if len(ports) == 0 {
			t.Errorf("rank %d (pid %d) listens on no tcp port", rank, pid)
		}
		for _, p := range ports {
			strangerRefused(t, fmt.Sprintf("rank %d port", rank), fmt.Sprintf("127.0.0.1:%d", p))
			checked++
		}
	}
	for name, addr := range controls {
		strangerRefused(t, "agent "+name+" control port", addr)
		checked++
	}
	io.WriteString(stdin, "go\n")
	if code := gl.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("the job after the strangers: exit %d\n%s", code, gl.stderr.String())
	}
	var done int
	for l := range gl.lines {
		if strings.Contains(l, "] done ") {
			done++
		}
	}
	if done != 4 {
		t.Errorf("%d ranks done, want 4\n%s", done, gl.stderr.String())
	}
	t.Logf("%d ports refused a stranger; the job completed", checked)
}
