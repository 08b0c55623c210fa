package tcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

func TestOpenRejectsShortSecret(t *testing.T) {
	for _, s := range [][]byte{nil, []byte("short")} {
		_, err := verbs.Open(providerName, verbs.Config{Provider: Options{Secret: s}})
		if !errors.Is(err, verbs.ErrInvalid) || !strings.Contains(err.Error(), "Secret") {
			t.Errorf("Open with a %d-byte secret: %v, want ErrInvalid naming tcp.Options.Secret", len(s), err)
		}
	}
}

// TestOpenProviderOptions: Open takes tcp.Options as a value or a non-nil pointer, and
// refuses any other type of Config.Provider with ErrInvalid naming the type it got.
func TestOpenProviderOptions(t *testing.T) {
	opts := Options{Secret: testSecret}
	for _, p := range []any{opts, &opts} {
		d, err := verbs.Open(providerName, verbs.Config{ArenaSize: 16 << 20, Provider: p})
		if err != nil {
			t.Fatalf("Open with Provider %T: %v", p, err)
		}
		d.Close()
	}
	for _, p := range []any{(*Options)(nil), struct{ Secret []byte }{testSecret}, "secret"} {
		_, err := verbs.Open(providerName, verbs.Config{Provider: p})
		var ve *verbs.Error
		if !errors.Is(err, verbs.ErrInvalid) || !errors.As(err, &ve) || !strings.Contains(err.Error(), fmt.Sprintf("%T", p)) {
			t.Errorf("Open with Provider %T: %v, want a *verbs.Error with ErrInvalid naming the type", p, err)
		}
	}
}

// acceptor returns whichever of a and b accepts (does not dial) when they connect.
func acceptor(a, b *side) (acc, dialer *side) {
	if dialsTo(a.dev.id, a.qp.Num(), b.dev.id, b.qp.Num()) {
		return b, a
	}
	return a, b
}

// TestWrongSecret connects devices holding different secrets: the dialer's ToRTR fails
// with ErrAuth, the acceptor counts a rejection and never connects.
func TestWrongSecret(t *testing.T) {
	other := testCfg()
	other = withOptions(other, func(o *Options) { o.Secret = []byte("a-different-secret-of-32-bytes!!") })
	a := newSide(t, openDev(t, testCfg()), verbs.QPAttr{})
	b := newSide(t, openDev(t, other), verbs.QPAttr{})
	acc, dial := acceptor(a, b)
	mem := newBuf(t, acc, arenaMem, 64)
	pattern(mem.b, 3)
	before := bytes.Clone(mem.b)
	// The handshake gets a budget that a loaded machine meets; the acceptor's wait, which
	// must run out, a short one after it.
	ctx, cancel := testbudget.Context(context.Background(), 5*time.Second, "the refused handshake")
	defer cancel()
	if err := acc.qp.ToRTR(ctx, dial.qp.Endpoint()); err != nil {
		t.Fatal(err)
	}
	err := dial.qp.ToRTR(ctx, acc.qp.Endpoint())
	if !errors.Is(err, verbs.ErrAuth) {
		t.Fatalf("dialer's ToRTR with a wrong secret: %v, want ErrAuth", err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelShort()
	if err := acc.qp.ToRTS(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acceptor's ToRTS: %v, want DeadlineExceeded", err)
	}
	if n, _ := Rejections(acc.dev); n != 1 {
		t.Errorf("acceptor counted %d rejections, want 1", n)
	}
	if !bytes.Equal(mem.b, before) {
		t.Error("acceptor memory changed")
	}
}

// waitClosed reads c until the peer closes it and returns what arrived.
func waitClosed(t *testing.T, c net.Conn, within time.Duration) []byte {
	t.Helper()
	within = testbudget.Scale(within)
	c.SetReadDeadline(time.Now().Add(within))
	got, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("listener kept the connection open for %v", within)
	}
	return got
}

func waitRejections(t *testing.T, d *device, want int64) {
	t.Helper()
	deadline := time.Now().Add(testbudget.Scale(5 * time.Second))
	for d.rejected.Load() < want && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := d.rejected.Load(); got != want {
		t.Fatalf("%d rejections, want %d", got, want)
	}
}

// TestHandshakeRejectsStrangers dials a device's listener directly: garbage, silence,
// and a well-formed hello followed by a proof made without the secret and by a write
// frame. Each connection is closed, counted, and never touches memory.
func TestHandshakeRejectsStrangers(t *testing.T) {
	old := handshakeTimeout
	handshakeTimeout = 300 * time.Millisecond
	defer func() { handshakeTimeout = old }()
	s := newSide(t, openDev(t, testCfg()), verbs.QPAttr{})
	mem := newBuf(t, s, arenaMem, 4096)
	pattern(mem.b, 5)
	before := bytes.Clone(mem.b)
	addr := s.dev.addr
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	var want int64

	t.Run("Garbage", func(t *testing.T) {
		c := dial()
		c.Write(bytes.Repeat([]byte{0xa5}, 500))
		waitClosed(t, c, 2*time.Second)
		want++
		waitRejections(t, s.dev, want)
	})
	t.Run("Silence", func(t *testing.T) {
		c := dial()
		start := time.Now()
		waitClosed(t, c, 3*time.Second)
		if d := time.Since(start); d < handshakeTimeout/2 {
			t.Errorf("closed after %v, before the handshake deadline", d)
		}
		want++
		waitRejections(t, s.dev, want)
	})
	t.Run("ProofWithoutSecret", func(t *testing.T) {
		c := dial()
		ch := clientHello{version: ProtocolVersion, devID: 12345, qpn: 1, toQPN: s.qp.Num(), toDev: s.dev.id, maxSend: 8}
		var chb [clientHelloSize]byte
		ch.encode(&chb)
		c.Write(chb[:])
		var shb [serverHelloSize]byte
		if _, err := io.ReadFull(c, shb[:]); err != nil {
			t.Fatalf("server hello: %v", err)
		}
		mac := transcriptMAC([]byte("guessed-secret-guessed-secret!!!"), clientLabel, chb[:], shb[:])
		var pb [proofSize]byte
		copy(pb[:], proofMagic)
		copy(pb[8:], mac[:])
		c.Write(pb[:])
		// A write frame the listener must never serve.
		h := header{op: opWrite, seq: 0, rkey: mem.key, payloadLen: 64}
		var hb [hdrSize]byte
		h.put(&hb)
		c.Write(hb[:])
		c.Write(make([]byte, 64))
		got := waitClosed(t, c, 2*time.Second)
		if len(got) != finalSize || hsStatus(binary.LittleEndian.Uint16(got[4:])) != hsAuth {
			t.Errorf("after a bad proof the listener sent %x, want only a final answer %v", got, hsAuth)
		}
		want++
		waitRejections(t, s.dev, want)
	})
	if !bytes.Equal(mem.b, before) {
		t.Fatal("memory changed by unauthenticated connections")
	}
	if st := s.qp.State(); st != verbs.Init {
		t.Fatalf("QP moved to %v", st)
	}
}

// TestToRTSHonoursContext: an acceptor whose peer never dials waits in ToRTS until ctx.
func TestToRTSHonoursContext(t *testing.T) {
	a := newSide(t, openDev(t, testCfg()), verbs.QPAttr{})
	b := newSide(t, openDev(t, testCfg()), verbs.QPAttr{})
	acc, dial := acceptor(a, b)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := acc.qp.ToRTR(ctx, dial.qp.Endpoint()); err != nil {
		t.Fatal(err)
	}
	if err := acc.qp.ToRTS(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ToRTS: %v, want DeadlineExceeded", err)
	}
	if err := acc.qp.ToErr(); err != nil || acc.qp.State() != verbs.Err {
		t.Fatalf("ToErr after a timed-out ToRTS: %v, state %v", err, acc.qp.State())
	}
}

// TestStaleKeys: after Dereg every access with the old key fails with RemAccessErr, also
// once the same bytes belong to a new MR, and the new MR stays untouched.
func TestStaleKeys(t *testing.T) {
	for _, k := range []memKind{arenaMem, userMem} {
		t.Run(k.String(), func(t *testing.T) {
			a, b := pair(t, testCfg(), verbs.QPAttr{})
			var old verbs.MR
			raw := make([]byte, 4096)
			if k == arenaMem {
				old = allocMR(t, b, 4096)
			} else {
				old = regMR(t, b, raw)
			}
			key := old.RKey()
			if err := old.Dereg(); err != nil {
				t.Fatal(err)
			}
			var fresh verbs.MR
			if k == arenaMem {
				fresh = allocMR(t, b, 4096)
			} else {
				fresh = regMR(t, b, raw)
			}
			pattern(fresh.Bytes(), 9)
			before := bytes.Clone(fresh.Bytes())
			rej := b.dev.Stats().KeyRejections
			src := newBuf(t, a, unregMem, 64)
			post(t, a.qp, verbs.SendWR{WRID: 1, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: src.b,
				Remote: verbs.RemoteAddr{RKey: key}})
			wantWC(t, waitWC(t, a.cq), 1, verbs.RemAccessErr, verbs.WCRDMAWrite)
			if !bytes.Equal(fresh.Bytes(), before) {
				t.Fatal("the new MR changed")
			}
			if b.dev.Stats().KeyRejections <= rej {
				t.Error("key rejection not counted")
			}
			if a.qp.State() != verbs.Err {
				t.Errorf("initiator in %v after RemAccessErr", a.qp.State())
			}
			// The target's QP is unaffected until it asks for something.
			if b.qp.State() != verbs.RTS {
				t.Errorf("target in %v after its peer's error", b.qp.State())
			}
		})
	}
}

// TestQueueFull: ErrQueueFull past MaxSendWR outstanding and MaxRecvWR posted; a slot
// comes back when a completion is polled.
func TestQueueFull(t *testing.T) {
	a, b := pair(t, testCfg(), verbs.QPAttr{MaxSendWR: 4, MaxRecvWR: 2})
	src := newBuf(t, a, arenaMem, 8)
	dst := newBuf(t, b, arenaMem, 8)
	wr := verbs.SendWR{Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: src.b, LKey: src.key, Remote: verbs.RemoteAddr{RKey: dst.key}}
	for range 4 {
		post(t, a.qp, wr)
	}
	if err := a.qp.PostSend(&wr); !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("fifth post: %v, want ErrQueueFull", err)
	}
	waitWC(t, a.cq)
	post(t, a.qp, wr)
	for range 2 {
		postRecv(t, b.qp, verbs.RecvWR{})
	}
	if err := b.qp.PostRecv(&verbs.RecvWR{}); !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("third receive: %v, want ErrQueueFull", err)
	}
}

// TestHeldSends: Sends beyond the receiver's posted receives wait in the sender (holding
// their slots) and are delivered in order once receives are posted.
func TestHeldSends(t *testing.T) {
	a, b := pair(t, testCfg(), verbs.QPAttr{})
	src := newBuf(t, a, arenaMem, 3)
	dst := newBuf(t, b, arenaMem, 3)
	copy(src.b, "xyz")
	postRecv(t, b.qp, verbs.RecvWR{WRID: 0, Local: dst.b[0:1], LKey: dst.key})
	for i := range 3 {
		post(t, a.qp, verbs.SendWR{WRID: uint64(i), Op: verbs.OpSend, Flags: verbs.Signaled, Local: src.b[i : i+1], LKey: src.key})
	}
	wantWC(t, waitWC(t, b.cq), 0, verbs.Success, verbs.WCRecv)
	wantWC(t, waitWC(t, a.cq), 0, verbs.Success, verbs.WCSend)
	quiet(t, a.cq, 50*time.Millisecond, "held sends")
	postRecv(t, b.qp, verbs.RecvWR{WRID: 1, Local: dst.b[1:2], LKey: dst.key})
	postRecv(t, b.qp, verbs.RecvWR{WRID: 2, Local: dst.b[2:3], LKey: dst.key})
	for i := 1; i < 3; i++ {
		wantWC(t, waitWC(t, b.cq), uint64(i), verbs.Success, verbs.WCRecv)
		wantWC(t, waitWC(t, a.cq), uint64(i), verbs.Success, verbs.WCSend)
	}
	if string(dst.b) != "xyz" {
		t.Fatalf("received %q", dst.b)
	}
}

// TestErrModeRefusesPeer: a QP that went to Err keeps its connection and refuses the
// peer's next request with RetryExcErr; the peer fails only then.
func TestErrModeRefusesPeer(t *testing.T) {
	a, b := pair(t, testCfg(), verbs.QPAttr{})
	mem := newBuf(t, a, arenaMem, 64)
	before := bytes.Clone(mem.b)
	if err := a.qp.ToErr(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if st := b.qp.State(); st != verbs.RTS {
		t.Fatalf("peer in %v right after ToErr", st)
	}
	src := newBuf(t, b, unregMem, 64)
	pattern(src.b, 1)
	post(t, b.qp, verbs.SendWR{WRID: 4, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled, Local: src.b, Remote: verbs.RemoteAddr{RKey: mem.key}})
	wantWC(t, waitWC(t, b.cq), 4, verbs.RetryExcErr, verbs.WCRDMAWrite)
	if !bytes.Equal(mem.b, before) {
		t.Fatal("a QP in Err let its peer write")
	}
	if st := b.qp.State(); st != verbs.Err {
		t.Fatalf("peer in %v after RetryExcErr", st)
	}
}

// TestBidirectionalBulk has both sides read 1 MiB blocks from each other at full queue
// depth at once: neither side's reader may block on writing while the other's does.
func TestBidirectionalBulk(t *testing.T) {
	const n, depth, rounds = 1 << 20, 32, 96
	a, b := pair(t, testCfg(), verbs.QPAttr{MaxSendWR: depth})
	errc := make(chan error, 2)
	for _, pr := range [][2]*side{{a, b}, {b, a}} {
		me, peer := pr[0], pr[1]
		loc, rem := newBuf(t, me, arenaMem, n), newBuf(t, peer, arenaMem, n)
		go func() {
			wr := verbs.SendWR{Op: verbs.OpRDMARead, Flags: verbs.Signaled, Local: loc.b, LKey: loc.key, Remote: verbs.RemoteAddr{RKey: rem.key}}
			posted, done := 0, 0
			for done < rounds {
				for posted < rounds && posted-done < depth {
					if err := me.qp.PostSend(&wr); err != nil {
						errc <- err
						return
					}
					posted++
				}
				wc, err := waitWCErr(me.cq)
				if err != nil || wc.Status != verbs.Success {
					errc <- fmt.Errorf("read %d: %+v %v", done, wc, err)
					return
				}
				done++
			}
			errc <- nil
		}()
	}
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

// TestPeerDeviceCloseMidStream closes the target's device under a stream of 1 MiB writes:
// the oldest outstanding write fails with RetryExcErr, the rest flush, nothing hangs.
func TestPeerDeviceCloseMidStream(t *testing.T) {
	a, b := pair(t, testCfg(), verbs.QPAttr{MaxSendWR: 16})
	src := newBuf(t, a, arenaMem, 1<<20)
	dst := newBuf(t, b, arenaMem, 1<<20)
	checkFailingStream(t, a, verbs.SendWR{Op: verbs.OpRDMAWrite, Local: src.b, LKey: src.key, Remote: verbs.RemoteAddr{RKey: dst.key}},
		func() { b.dev.Close() })
}

// checkFailingStream keeps 16 signaled copies of wr outstanding, calls kill after 20
// successes, and checks that the stream then fails as the verbs doc says.
func checkFailingStream(t *testing.T, a *side, wr verbs.SendWR, kill func()) {
	t.Helper()
	wr.Flags = verbs.Signaled
	deadline := time.Now().Add(testbudget.Scale(15 * time.Second))
	posted, ok, killed := 0, 0, false
	var errs []verbs.Status
	var wcs [16]verbs.WC
	for outstanding := 0; ; {
		for outstanding < 16 && len(errs) == 0 {
			wr.WRID = uint64(posted)
			if err := a.qp.PostSend(&wr); err != nil {
				t.Fatalf("post: %v", err)
			}
			posted++
			outstanding++
		}
		if outstanding == 0 {
			break
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		err := a.cq.Wait(ctx)
		cancel()
		if err != nil {
			t.Fatalf("stream hangs: %v (%d ok, errors %v, killed %v)", err, ok, errs, killed)
		}
		k, _ := a.cq.Poll(wcs[:])
		outstanding -= k
		for _, wc := range wcs[:k] {
			switch {
			case wc.Status == verbs.Success && len(errs) > 0:
				t.Fatalf("success after an error: %+v", wc)
			case wc.Status == verbs.Success:
				ok++
			default:
				errs = append(errs, wc.Status)
			}
		}
		if ok >= 20 && !killed {
			kill()
			killed = true
		}
	}
	if !killed || len(errs) == 0 {
		t.Fatalf("stream never failed (killed %v, %d ok)", killed, ok)
	}
	if errs[0] != verbs.RetryExcErr {
		t.Errorf("first error %v, want RetryExcErr", errs[0])
	}
	for _, st := range errs[1:] {
		if st != verbs.WRFlushErr {
			t.Errorf("later error %v, want WRFlushErr (all: %v)", st, errs)
			break
		}
	}
	if a.qp.State() != verbs.Err {
		t.Errorf("QP in %v after the peer died", a.qp.State())
	}
	t.Logf("%d writes succeeded, then %v", ok, errs)
}

// childEnv makes the test binary a target process for TestKilledPeerProcess.
const childEnv = "GORMA_TCP_TEST_CHILD"

// TestChildTarget is the child of TestKilledPeerProcess: it opens a device, prints its
// endpoint and an MR key, connects to the endpoint it reads, says READY and waits.
func TestChildTarget(t *testing.T) {
	switch os.Getenv(childEnv) {
	case "":
		t.Skip("helper process for TestKilledPeerProcess and the two-process benchmarks")
	case "echo":
		childEcho()
	}
	cfg := testCfg()
	cfg.Wait = verbs.WaitBlock
	s := newSide(t, openDev(t, cfg), verbs.QPAttr{})
	mr := allocMR(t, s, 1<<20)
	in := childConnect(s, mr.RKey())
	fmt.Println("READY")
	for in.Scan() { // until the parent closes stdin or kills us
	}
	os.Exit(0)
}

// childConnect is a helper process's side of the connection to its parent: it prints
// "EP <endpoint hex> <rkey>", reads the parent's endpoint from stdin and connects s to it.
// It exits the process on failure and returns stdin for what follows.
func childConnect(s *side, rkey uint64) *bufio.Scanner {
	fmt.Printf("EP %s %d\n", hex.EncodeToString(s.qp.Endpoint()), rkey)
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		os.Exit(2)
	}
	ep, err := hex.DecodeString(strings.TrimSpace(in.Text()))
	if err != nil {
		os.Exit(3)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
	defer cancel()
	if err := verbs.Connect(ctx, s.qp, ep); err != nil {
		fmt.Println("ERR", err)
		os.Exit(4)
	}
	return in
}

// TestKilledPeerProcess SIGKILLs a target process under a stream of 1 MiB RDMA reads.
func TestKilledPeerProcess(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip()
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildTarget$")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	next := func() []string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("child said nothing: %v", lines.Err())
		}
		return strings.Fields(lines.Text())
	}
	f := next()
	if len(f) != 3 || f[0] != "EP" {
		t.Fatalf("child said %q", f)
	}
	ep, _ := hex.DecodeString(f[1])
	rkey, _ := strconv.ParseUint(f[2], 10, 64)
	a := newSide(t, openDev(t, testCfg()), verbs.QPAttr{MaxSendWR: 16})
	fmt.Fprintf(stdin, "%s\n", hex.EncodeToString(a.qp.Endpoint()))
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
	defer cancel()
	if err := verbs.Connect(ctx, a.qp, ep); err != nil {
		t.Fatal(err)
	}
	if f := next(); len(f) == 0 || f[0] != "READY" {
		t.Fatalf("child said %q", f)
	}
	loc := newBuf(t, a, arenaMem, 1<<20)
	checkFailingStream(t, a, verbs.SendWR{Op: verbs.OpRDMARead, Local: loc.b, LKey: loc.key, Remote: verbs.RemoteAddr{RKey: rkey}},
		func() { cmd.Process.Kill() })
}
