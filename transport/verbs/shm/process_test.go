package shm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// The two-process test re-executes the test binary as a child (TestChildProcess with
// childEnv set) that plays the other rank. They talk over the child's stdin and stdout
// (endpoint bytes and keys, as a launcher would carry them) and over shm for everything else.
const childEnv = "GORMA_SHM_TEST_CHILD"

type childProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func startChild(t testing.TB) *childProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &childProc{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	c.out.Buffer(nil, 1<<20)
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return c
}

// expect reads lines until one starts with word and returns its fields after word.
func (c *childProc) expect(t testing.TB, word string) []string {
	t.Helper()
	for c.out.Scan() {
		f := strings.Fields(c.out.Text())
		if len(f) > 0 && f[0] == word {
			return f[1:]
		}
	}
	t.Fatalf("child ended before saying %s: %v", word, c.out.Err())
	return nil
}

// TestTwoProcesses runs RDMA, atomics and sends against a child process, then kills it
// while this side sleeps in Wait: with the child watched through a pidfd, and polled
// (no pidfd left in the device's budget).
func TestTwoProcesses(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in the child")
	}
	t.Run("pidfd", twoProcesses)
	t.Run("polled", func(t *testing.T) {
		old := pidfdBudget
		pidfdBudget = 0
		defer func() { pidfdBudget = old }()
		twoProcesses(t)
	})
}

func twoProcesses(t *testing.T) {
	c := startChild(t)
	f := c.expect(t, "HELLO")
	childEP, _ := hex.DecodeString(f[0])
	arenaKey, _ := strconv.ParseUint(f[1], 10, 64)
	userKey, _ := strconv.ParseUint(f[2], 10, 64)

	me := openSide(t, verbs.Config{Wait: verbs.WaitBlock}, verbs.QPAttr{})
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
	defer cancel()
	if err := verbs.Connect(ctx, me.qp, childEP); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c.in, "EP %x\n", me.qp.Endpoint())
	c.expect(t, "CONNECTED")

	// RDMA into the child's arena and its ordinary Go memory, an atomic, then a Send.
	arenaData, userData := pattern(4000, 1), pattern(3000, 2)
	me.post(t, verbs.SendWR{WRID: 1, Op: verbs.OpRDMAWrite, Local: arenaData, Remote: verbs.RemoteAddr{RKey: arenaKey, Offset: 8}})
	me.post(t, verbs.SendWR{WRID: 2, Op: verbs.OpRDMAWrite, Local: userData, Remote: verbs.RemoteAddr{RKey: userKey, Offset: 5}})
	old := make([]byte, 8)
	me.post(t, verbs.SendWR{WRID: 3, Op: verbs.OpAtomicFetchAdd, Flags: verbs.Signaled, Local: old,
		Remote: verbs.RemoteAddr{RKey: arenaKey}, CompareAdd: 5})
	wantWC(t, me.next(t), 3, verbs.Success, verbs.WCFetchAdd)
	if v := binary.LittleEndian.Uint64(old); v != 100 {
		t.Fatalf("fetch-add in the child returned %d, want 100", v)
	}
	src := me.allocMR(t, 16, 0)
	copy(src.Bytes(), "check, please!!!")
	rb := me.allocMR(t, 8192, verbs.LocalWrite)
	me.recv(t, verbs.RecvWR{WRID: 10, Local: rb.Bytes(), LKey: rb.LKey()})
	me.post(t, verbs.SendWR{WRID: 4, Op: verbs.OpSend, Flags: verbs.Signaled, Local: src.Bytes(), LKey: src.LKey()})
	wantWC(t, me.next(t), 4, verbs.Success, verbs.WCSend)
	if err := me.cq.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	wc := me.next(t)
	wantWC(t, wc, 10, verbs.Success, verbs.WCRecv)
	// The child answers with its view of both regions.
	got := rb.Bytes()[:wc.ByteLen]
	want := append(append(binary.LittleEndian.AppendUint64(nil, 105), arenaData...), userData...)
	if !bytes.Equal(got, want) {
		t.Fatalf("child saw %d bytes that differ from what was written (%d)", len(got), len(want))
	}
	// RDMA read of the child's user memory.
	back := make([]byte, 3000)
	me.post(t, verbs.SendWR{WRID: 5, Op: verbs.OpRDMARead, Flags: verbs.Signaled, Local: back, Remote: verbs.RemoteAddr{RKey: userKey, Offset: 5}})
	wantWC(t, me.next(t), 5, verbs.Success, verbs.WCRDMARead)
	if !bytes.Equal(back, userData) {
		t.Fatal("read of the child's memory differs")
	}

	// Kill the child while a receive is posted and we sleep in Wait: the receive flushes,
	// the wait ends, and the next request fails.
	me.recv(t, verbs.RecvWR{WRID: 11, Local: rb.Bytes(), LKey: rb.LKey()})
	done := make(chan error, 1)
	go func() { done <- me.cq.Wait(ctx) }()
	time.Sleep(20 * time.Millisecond)
	c.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("wait after the peer died: %v", err)
		}
	case <-time.After(testbudget.Scale(5 * time.Second)):
		t.Fatal("a waiter was not woken when its peer died")
	}
	wantWC(t, me.next(t), 11, verbs.WRFlushErr, verbs.WCRecv)
	me.post(t, verbs.SendWR{WRID: 6, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: arenaData, Remote: verbs.RemoteAddr{RKey: arenaKey}})
	wantWC(t, me.next(t), 6, verbs.WRFlushErr, verbs.WCRDMAWrite)
}

// TestChildProcess is the child of TestTwoProcesses; it does nothing in a normal run.
func TestChildProcess(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("only run as TestTwoProcesses' child")
	}
	s := openSide(t, verbs.Config{Wait: verbs.WaitBlock}, verbs.QPAttr{})
	mr := s.allocMR(t, 8192, verbs.AccessAll)
	binary.LittleEndian.PutUint64(mr.Bytes(), 100)
	user := make([]byte, 4096)
	umr, err := s.pd.RegMR(user, verbs.RemoteRead|verbs.RemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	rb := s.allocMR(t, 64, verbs.LocalWrite)
	s.recv(t, verbs.RecvWR{WRID: 1, Local: rb.Bytes(), LKey: rb.LKey()})
	fmt.Printf("HELLO %x %d %d\n", s.qp.Endpoint(), mr.RKey(), umr.RKey())
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	if !in.Scan() {
		t.Fatal("parent went away")
	}
	f := strings.Fields(in.Text())
	ep, _ := hex.DecodeString(f[1])
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	if err := verbs.Connect(ctx, s.qp, ep); err != nil {
		t.Fatal(err)
	}
	fmt.Println("CONNECTED")
	// Wait for the parent's Send, then report what the parent's RDMA left in our memory.
	if err := s.cq.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	wc := s.next(t)
	if wc.Status != verbs.Success || string(rb.Bytes()[:wc.ByteLen]) != "check, please!!!" {
		t.Fatalf("child received %+v", wc)
	}
	reply := s.allocMR(t, 8+4000+3000, 0)
	copy(reply.Bytes(), mr.Bytes()[:8])
	copy(reply.Bytes()[8:], mr.Bytes()[8:4008])
	copy(reply.Bytes()[4008:], user[5:3005])
	s.post(t, verbs.SendWR{WRID: 2, Op: verbs.OpSend, Flags: verbs.Signaled, Local: reply.Bytes(), LKey: reply.LKey()})
	wantWC(t, s.next(t), 2, verbs.Success, verbs.WCSend)
	// Stay alive (serving RDMA reads of user) until the parent kills us or goes away.
	for in.Scan() {
	}
}
