package tcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"testing/iotest"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

func encode(h header) []byte {
	var b [hdrSize]byte
	h.put(&b)
	return b[:]
}

func TestDecodeHeader(t *testing.T) {
	good := header{op: opWrite, flags: flagImm, payloadLen: 5, seq: 9, rkey: 1 << 50, offset: 3, imm: 7, credits: 2}
	mod := func(f func(b []byte)) []byte {
		b := encode(good)
		f(b)
		return b
	}
	cases := []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"good", encode(good), true},
		{"empty", nil, false},
		{"truncated", encode(good)[:hdrSize-1], false},
		{"other version", mod(func(b []byte) { b[0] = ProtocolVersion + 1 }), false},
		{"opcode 0", mod(func(b []byte) { b[1] = 0 }), false},
		{"unknown opcode", mod(func(b []byte) { b[1] = byte(opLimit) }), false},
		{"unknown flag", mod(func(b []byte) { b[2] = 0x80 }), false},
		{"immediate on a read", encode(header{op: opRead, flags: flagImm}), false},
		{"ack on a send", encode(header{op: opSend, flags: flagAck, ack: 1 << 40}), true},
		{"ack on a read response", encode(header{op: opReadResp, flags: flagAck, ack: 3}), true},
		{"ack on a cmp-swap", encode(header{op: opCmpSwap, flags: flagAck, ack: 3}), false},
		{"ack on an ack", encode(header{op: opAck, flags: flagAck, ack: 3}), false},
		{"unknown status", encode(header{op: opAck, status: maxStatus + 1}), false},
		{"status on a request", encode(header{op: opWrite, status: verbs.RemAccessErr}), false},
		{"reserved set", mod(func(b []byte) { b[63] = 1 }), false},
		{"oversized payload", encode(header{op: opSend, payloadLen: MaxMessageSize + 1}), false},
		{"oversized read", encode(header{op: opRead, length: MaxMessageSize + 1}), false},
		{"payload on a read", encode(header{op: opRead, payloadLen: 1}), false},
		{"payload on an ack", encode(header{op: opAck, payloadLen: 8}), false},
		{"payload on a failed read", encode(header{op: opReadResp, status: verbs.RemAccessErr, payloadLen: 8}), false},
		{"ack with status", encode(header{op: opAck, status: verbs.RemAccessErr, seq: 3}), true},
		{"max payload", encode(header{op: opReadResp, payloadLen: MaxMessageSize}), true},
		{"read response slice", encode(header{op: opReadResp, flags: flagMore | flagAck, ack: 2, payloadLen: respSlice}), true},
		{"empty slice", encode(header{op: opReadResp, flags: flagMore}), false},
		{"failed slice", encode(header{op: opReadResp, flags: flagMore, status: verbs.RemAccessErr}), false},
		{"slice flag on a write", encode(header{op: opWrite, flags: flagMore, payloadLen: 8}), false},
		{"slice flag on an ack", encode(header{op: opAck, flags: flagMore}), false},
		{"marked write", encode(header{op: opWrite, flags: flagLater | flagAck, ack: 4, payloadLen: 8}), true},
		{"later flag on a send", encode(header{op: opSend, flags: flagLater, payloadLen: 8}), false},
		{"later flag on a write with immediate", encode(header{op: opWrite, flags: flagLater | flagImm, payloadLen: 8}), false},
		{"later flag on a read", encode(header{op: opRead, flags: flagLater, length: 8}), false},
		{"later flag on an ack", encode(header{op: opAck, flags: flagLater}), false},
	}
	for _, c := range cases {
		h, err := decodeHeader(c.b)
		if c.ok != (err == nil) {
			t.Errorf("%s: err %v, want ok=%v", c.name, err, c.ok)
			continue
		}
		if err != nil && !errors.Is(err, errBadFrame) {
			t.Errorf("%s: %v does not wrap errBadFrame", c.name, err)
		}
		if err == nil && !bytes.Equal(encode(h), c.b[:hdrSize]) {
			t.Errorf("%s: re-encoding differs", c.name)
		}
	}
}

// TestFrameReader reads a frame stream delivered one byte at a time.
func TestFrameReader(t *testing.T) {
	var stream []byte
	pay := bytes.Repeat([]byte("0123456789"), 1000) // 10000 B: partly buffered, partly direct
	stream = append(stream, encode(header{op: opSend, payloadLen: uint32(len(pay))})...)
	stream = append(stream, pay...)
	stream = append(stream, encode(header{op: opCredit, credits: 4})...)
	stream = append(stream, encode(header{op: opWrite, payloadLen: 3})...)
	stream = append(stream, "abc"...)
	for _, r := range []io.Reader{bytes.NewReader(stream), iotest.OneByteReader(bytes.NewReader(stream))} {
		f := newFrameReader(r, nil)
		h, err := f.header()
		if err != nil || h.op != opSend {
			t.Fatal(h, err)
		}
		got := make([]byte, h.payloadLen)
		if err := f.readFull(got); err != nil || !bytes.Equal(got, pay) {
			t.Fatal("payload", err)
		}
		if h, err := f.header(); err != nil || h.credits != 4 {
			t.Fatal(h, err)
		}
		if h, err := f.header(); err != nil || h.payloadLen != 3 {
			t.Fatal(h, err)
		}
		if err := f.discard(3); err != nil {
			t.Fatal(err)
		}
		if _, err := f.header(); err != io.EOF {
			t.Fatalf("at the end: %v, want EOF", err)
		}
	}
	f := newFrameReader(bytes.NewReader(encode(header{op: opSend, payloadLen: 10})[:20]), nil)
	if _, err := f.header(); err != io.ErrUnexpectedEOF {
		t.Fatalf("truncated header: %v", err)
	}
}

func TestEndpointRoundTrip(t *testing.T) {
	e := endpoint{devID: 0x1122334455667788, qpn: 42, addr: "10.1.2.3:4567"}
	got, err := decodeEndpoint(appendEndpoint(nil, e))
	if err != nil || got != e {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range []endpoint{{devID: 0, qpn: 1, addr: "a:1"}, {devID: 1, qpn: 0, addr: "a:1"},
		{devID: 1, qpn: 1, addr: "nohost"}, {devID: 1, qpn: 1, addr: "a:0"}, {devID: 1, qpn: 1, addr: ":80"}} {
		if _, err := decodeEndpoint(appendEndpoint(nil, bad)); !errors.Is(err, verbs.ErrBadEndpoint) {
			t.Errorf("%+v: %v, want ErrBadEndpoint", bad, err)
		}
	}
}

func FuzzDecodeEndpoint(f *testing.F) {
	f.Add(appendEndpoint(nil, endpoint{devID: 1, qpn: 2, addr: "127.0.0.1:80"}))
	f.Add([]byte("GRME"))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEndpoint(b)
		if err == nil && !bytes.Equal(appendEndpoint(nil, e), b) {
			t.Fatalf("accepted %x but re-encodes differently", b)
		}
	})
}

// FuzzDecodeFrame decodes arbitrary bytes as a frame stream, in memory and through a
// frameReader: errors, never panics, and every accepted header re-encodes to its bytes.
func FuzzDecodeFrame(f *testing.F) {
	f.Add(encode(header{op: opWrite, payloadLen: 3, rkey: 5}))
	f.Add(append(encode(header{op: opSend, payloadLen: 2, flags: flagImm, imm: 1}), 'h', 'i'))
	f.Add(encode(header{op: opCredit, flags: flagAck, ack: 5, credits: 1}))
	f.Add(encode(header{op: opAck, status: verbs.RemAccessErr}))
	f.Add(encode(header{op: opRead, length: 1 << 20}))
	f.Add(append(encode(header{op: opReadResp, flags: flagMore, payloadLen: 1}), 'x'))
	f.Add(append(encode(header{op: opWrite, flags: flagLater, payloadLen: 1}), 'w'))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		rest := b
		for len(rest) > 0 {
			h, pay, r, err := decodeFrame(rest)
			if err != nil {
				break
			}
			if !bytes.Equal(encode(h), rest[:hdrSize]) || len(pay) != int(h.payloadLen) {
				t.Fatalf("frame %+v does not round-trip", h)
			}
			rest = r
		}
		fr := newFrameReader(bytes.NewReader(b), nil)
		scratch := make([]byte, 256)
		for {
			h, err := fr.header()
			if err != nil {
				return
			}
			n := int(h.payloadLen)
			if n <= len(scratch) {
				err = fr.readFull(scratch[:n])
			} else {
				err = fr.discard(n)
			}
			if err != nil {
				return
			}
		}
	})
}

// FuzzHandshake feeds arbitrary bytes to the listener's side of the handshake: it must
// reject them without panicking and must never admit a dialer without the secret.
func FuzzHandshake(f *testing.F) {
	ch := clientHello{version: ProtocolVersion, devID: 7, qpn: 1, toQPN: 1, toDev: 99, maxSend: 8}
	var chb [clientHelloSize]byte
	ch.encode(&chb)
	f.Add(chb[:])
	f.Add(append(chb[:], make([]byte, proofSize)...))
	f.Add([]byte("GRMC"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, s := net.Pipe()
		defer c.Close()
		defer s.Close()
		go func() { // the dialer's side: send the fuzz bytes, swallow answers
			go io.Copy(io.Discard, c)
			c.Write(b)
			c.Close()
		}()
		s.SetDeadline(time.Now().Add(testbudget.Scale(2 * time.Second)))
		_, err := serverHandshake(s, testSecret, 99, func(*clientHello) (hsStatus, uint32) {
			t.Fatalf("admitted a dialer that does not hold the secret: %x", b)
			return hsOK, 0
		})
		if err == nil {
			t.Fatalf("handshake succeeded on %x", b)
		}
	})
}

// TestHandshakeRoundTrip runs both sides over a pipe.
func TestHandshakeRoundTrip(t *testing.T) {
	c, s := net.Pipe()
	defer c.Close()
	defer s.Close()
	errc := make(chan error, 1)
	go func() {
		ch, err := serverHandshake(s, testSecret, 99, func(ch *clientHello) (hsStatus, uint32) { return hsOK, 32 })
		if err == nil && (ch.devID != 7 || ch.qpn != 3 || ch.maxSend != 16) {
			err = errors.New("server learned the wrong dialer")
		}
		errc <- err
	}()
	peer, err := clientHandshake(c, testSecret, peerInfo{devID: 7, qpn: 3, maxSend: 16}, endpoint{devID: 99, qpn: 5, addr: "x:1"})
	if err != nil || peer.maxSend != 32 || peer.devID != 99 || peer.qpn != 5 {
		t.Fatal(peer, err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// TestZeroAllocs checks that the hot paths allocate nothing: PostSend, the target's
// service, the completion and Poll, for writes, reads and atomics.
func TestZeroAllocs(t *testing.T) {
	cfg := testCfg()
	cfg.Wait = verbs.WaitBlock
	a, b := pair(t, cfg, verbs.QPAttr{})
	loc, rem := newBuf(t, a, arenaMem, 4096), newBuf(t, b, arenaMem, 4096)
	var wcs [4]verbs.WC
	ctx := context.Background()
	for _, op := range []verbs.Opcode{verbs.OpRDMAWrite, verbs.OpRDMARead, verbs.OpAtomicFetchAdd} {
		n := 4096
		if op.IsAtomic() {
			n = 8
		}
		wr := verbs.SendWR{Op: op, Flags: verbs.Signaled, Local: loc.b[:n], LKey: loc.key, Remote: verbs.RemoteAddr{RKey: rem.key}}
		run := func() {
			if err := a.qp.PostSend(&wr); err != nil {
				t.Fatal(err)
			}
			for {
				if k, _ := a.cq.Poll(wcs[:]); k > 0 {
					return
				}
				a.cq.Wait(ctx)
			}
		}
		run() // warm up
		if allocs := testing.AllocsPerRun(200, run); allocs > 0 {
			t.Errorf("%v: %.1f allocations per request", op, allocs)
		}
	}
	// Send and receive: the receiver reposts, the sender polls both completions.
	rb := newBuf(t, b, arenaMem, 64)
	swr := verbs.SendWR{Op: verbs.OpSendWithImm, Flags: verbs.Signaled, Local: loc.b[:64], LKey: loc.key, Imm: 5}
	rwr := verbs.RecvWR{Local: rb.b, LKey: rb.key}
	postRecv(t, b.qp, rwr)
	sendOne := func() {
		if err := a.qp.PostSend(&swr); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < 1; {
			if k, _ := b.cq.Poll(wcs[:]); k > 0 {
				got += k
				if err := b.qp.PostRecv(&rwr); err != nil {
					t.Fatal(err)
				}
				continue
			}
			b.cq.Wait(ctx)
		}
		for {
			if k, _ := a.cq.Poll(wcs[:]); k > 0 {
				return
			}
			a.cq.Wait(ctx)
		}
	}
	sendOne()
	if allocs := testing.AllocsPerRun(200, sendOne); allocs > 0 {
		t.Errorf("Send/Recv: %.1f allocations per message", allocs)
	}
	quiet(t, a.cq, time.Millisecond, "after the allocation runs")
}
