package runtime

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// testPM is a PMI server for in-process tests of Init: the agent's real server
// (agentPM), or a scripted one that can misbehave or speak PMI-2 (fakePM).
type testPM interface {
	// connect serves rank over a new socketpair and returns the environment of a rank
	// started with PMI_FD, as Slurm and Hydra start theirs.
	connect(rank int, extra map[string]string) map[string]string
	barrierCounts() []int // PMI barriers each rank entered so far
	putCounts() []int     // PMI puts each rank made so far
}

// fakePM is a PMI-1 server over real socketpairs, one per rank, for in-process tests of
// Init under a foreign process manager: a job-wide KVS, barrier_in/barrier_out across
// the ranks, and PMI_process_mapping. Hooks make it misbehave. It counts the barriers
// each rank entered.
type fakePM struct {
	t       *testing.T
	size    int
	mapping string // PMI_process_mapping's value; "" for none
	// onLine, if set, may answer a request itself: it returns the reply line (with its
	// newline) and true, or close to close the connection.
	onLine func(rank int, cmd string, kv map[string]string) (reply string, handled, close bool)

	mu       sync.Mutex
	kvs      map[string]string
	barrier  *sync.Cond
	arrived  int
	round    int
	barriers []int // barrier_in count by rank
	puts     []int // put count by rank
}

func newFakePM(t *testing.T, size int, mapping string) *fakePM {
	pm := &fakePM{t: t, size: size, mapping: mapping, kvs: map[string]string{}, barriers: make([]int, size), puts: make([]int, size)}
	pm.barrier = sync.NewCond(&pm.mu)
	return pm
}

func (pm *fakePM) connect(rank int, extra map[string]string) map[string]string {
	conn, env := pmiSocketpair(pm.t, rank, pm.size, extra)
	go pm.serve(rank, conn)
	return env
}

// pmiSocketpair makes rank's socketpair and returns the server's end and the environment
// of a rank started with the other end as PMI_FD.
func pmiSocketpair(t *testing.T, rank, size int, extra map[string]string) (net.Conn, map[string]string) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[0]), "pmi-server")
	conn, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	env := map[string]string{"PMI_FD": strconv.Itoa(fds[1]), "PMI_RANK": strconv.Itoa(rank),
		"PMI_SIZE": strconv.Itoa(size), "GORMA_PROGRESS": "block"}
	for k, v := range extra {
		env[k] = v
	}
	return conn, env
}

// parseLine splits a PMI-1 line (or, with sep ';', a PMI-2 frame's body) into its cmd
// and its other keys.
func parseLine(line string, sep string) (string, map[string]string) {
	kv := map[string]string{}
	for _, f := range strings.Split(strings.TrimSpace(line), sep) {
		if k, v, ok := strings.Cut(strings.TrimSpace(f), "="); ok {
			kv[k] = v
		}
	}
	return kv["cmd"], kv
}

// readRequest reads a PMI-1 line or, once the client chose PMI-2, a frame.
func readRequest(rd *bufio.Reader, v2 bool) (string, map[string]string, error) {
	if !v2 {
		line, err := rd.ReadString('\n')
		if err != nil {
			return "", nil, err
		}
		cmd, kv := parseLine(line, " ")
		return cmd, kv, nil
	}
	var hdr [6]byte
	if _, err := io.ReadFull(rd, hdr[:]); err != nil {
		return "", nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(hdr[:])))
	if err != nil || n < 0 || n > 1<<16 {
		return "", nil, fmt.Errorf("bad frame length %q", hdr)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(rd, body); err != nil {
		return "", nil, err
	}
	cmd, kv := parseLine(string(body), ";")
	return cmd, kv, nil
}

func (pm *fakePM) serve(rank int, conn net.Conn) {
	defer conn.Close()
	rd := bufio.NewReader(conn)
	v2 := false
	for {
		cmd, kv, err := readRequest(rd, v2)
		if err != nil {
			return
		}
		if cmd == "init" && kv["pmi_version"] == "2" {
			v2 = true
		}
		reply, handled, closeIt := "", false, false
		if pm.onLine != nil {
			reply, handled, closeIt = pm.onLine(rank, cmd, kv)
		}
		if closeIt {
			return
		}
		if !handled {
			reply = pm.answer(rank, cmd, kv)
		}
		if reply == "" {
			continue
		}
		if _, err := conn.Write([]byte(reply)); err != nil {
			return
		}
	}
}

// answer is the PMI-1 simple wire's answer to a request (MPICH's pmi-1.1 messages).
func (pm *fakePM) answer(rank int, cmd string, kv map[string]string) string {
	switch cmd {
	case "init":
		return "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n"
	case "get_maxes":
		return "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n"
	case "get_appnum":
		return "cmd=appnum appnum=0\n"
	case "get_my_kvsname":
		return "cmd=my_kvsname kvsname=kvs_fake_0\n"
	case "get_universe_size":
		return fmt.Sprintf("cmd=universe_size size=%d\n", pm.size)
	case "put":
		pm.mu.Lock()
		pm.kvs[kv["key"]] = kv["value"]
		pm.puts[rank]++
		pm.mu.Unlock()
		return "cmd=put_result rc=0 msg=success\n"
	case "get":
		return pm.get(kv["key"])
	case "barrier_in":
		pm.enterBarrier(rank)
		return "cmd=barrier_out\n"
	case "finalize":
		return "cmd=finalize_ack\n"
	case "abort":
		return ""
	}
	return fmt.Sprintf("cmd=%s rc=-1 msg=unknown_command\n", cmd)
}

func (pm *fakePM) get(key string) string {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	v, ok := pm.kvs[key]
	if key == "PMI_process_mapping" {
		v, ok = pm.mapping, pm.mapping != ""
	}
	if !ok {
		return "cmd=get_result rc=-1 msg=key_" + key + "_not_found\n"
	}
	return "cmd=get_result rc=0 msg=success value=" + v + "\n"
}

// enterBarrier blocks until every rank has entered the current round.
func (pm *fakePM) enterBarrier(rank int) {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	pm.barriers[rank]++
	round := pm.round
	pm.arrived++
	if pm.arrived == pm.size {
		pm.arrived = 0
		pm.round++
		pm.barrier.Broadcast()
		return
	}
	for pm.round == round {
		pm.barrier.Wait()
	}
}

// barrierCounts returns the barriers each rank entered so far.
func (pm *fakePM) barrierCounts() []int {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	return append([]int(nil), pm.barriers...)
}

// putCounts returns the PMI puts each rank made so far.
func (pm *fakePM) putCounts() []int {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	return append([]int(nil), pm.puts...)
}

// startFake initializes size ranks through pm in goroutines (ranks with different
// salts count as different hosts) and returns their Worlds, failing the test on any
// error.
func startFake(t *testing.T, ctx context.Context, pm testPM, salts []string) []*World {
	t.Helper()
	worlds := make([]*World, len(salts))
	errs := make([]error, len(salts))
	var wg sync.WaitGroup
	for r := range salts {
		env := pm.connect(r, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			worlds[r], errs[r] = initWith(ctx, options{getenv: func(k string) string { return env[k] }, hostSalt: salts[r],
				exit: func(int) {}})
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return worlds
}
