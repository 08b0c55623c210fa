package tcp

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// The two-process benchmarks put the peer in a child process (TestChildTarget), as a
// deployment does: compare BenchmarkProcRead8 with BenchmarkProcRawTCPPingPong8.

// childEcho is the "echo" child: it accepts one connection and echoes 8-byte messages.
func childEcho() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Exit(5)
	}
	fmt.Printf("ADDR %s\n", ln.Addr())
	c, err := ln.Accept()
	if err != nil {
		os.Exit(6)
	}
	c.(*net.TCPConn).SetNoDelay(true)
	buf := make([]byte, 8)
	for {
		if _, err := io.ReadFull(c, buf); err != nil {
			os.Exit(0)
		}
		if _, err := c.Write(buf); err != nil {
			os.Exit(0)
		}
	}
}

// startChild starts the test binary as a helper of the given mode and returns its first
// line of output, its stdin and a way to read more lines.
func startChild(b testing.TB, mode string) (first []string, stdin io.Writer, next func() []string) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildTarget$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode)
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(out)
	next = func() []string {
		if !lines.Scan() {
			b.Fatalf("child said nothing: %v", lines.Err())
		}
		return strings.Fields(lines.Text())
	}
	return next(), in, next
}

func BenchmarkProcRawTCPPingPong8(b *testing.B) {
	f, _, _ := startChild(b, "echo")
	c, err := net.Dial("tcp", f[1])
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetNoDelay(true)
	buf := make([]byte, 8)
	b.ResetTimer()
	for range b.N {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
}

func procPair(b *testing.B, mode verbs.WaitMode) (*side, uint64) {
	f, in, next := startChild(b, "target")
	ep, _ := hex.DecodeString(f[1])
	rkey, _ := strconv.ParseUint(f[2], 10, 64)
	cfg := testCfg()
	cfg.Wait = mode
	a := newSide(b, openDev(b, cfg), verbs.QPAttr{MaxSendWR: 64})
	fmt.Fprintf(in, "%s\n", hex.EncodeToString(a.qp.Endpoint()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := verbs.Connect(ctx, a.qp, ep); err != nil {
		b.Fatal(err)
	}
	if f := next(); f[0] != "READY" {
		b.Fatal(f)
	}
	return a, rkey
}

func benchProc(b *testing.B, op verbs.Opcode, n int, mode verbs.WaitMode) {
	a, rkey := procPair(b, mode)
	loc := allocMR(b, a, max(n, 8))
	roundTrips(b, a, verbs.SendWR{Op: op, Flags: verbs.Signaled, Local: loc.Bytes()[:n], LKey: loc.LKey(),
		Remote: verbs.RemoteAddr{RKey: rkey}})
}

func BenchmarkProcRead8(b *testing.B)       { benchProc(b, verbs.OpRDMARead, 8, verbs.WaitBlock) }
func BenchmarkProcRead8Hybrid(b *testing.B) { benchProc(b, verbs.OpRDMARead, 8, verbs.WaitHybrid) }
func BenchmarkProcRead8Spin(b *testing.B)   { benchProc(b, verbs.OpRDMARead, 8, verbs.WaitSpin) }
func BenchmarkProcWrite8(b *testing.B)      { benchProc(b, verbs.OpRDMAWrite, 8, verbs.WaitBlock) }
