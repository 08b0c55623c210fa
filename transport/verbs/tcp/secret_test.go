package tcp

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// deferredCfg is testCfg opened without a secret (Options.DeferSecret).
func deferredCfg() verbs.Config {
	return withOptions(testCfg(), func(o *Options) { o.Secret, o.DeferSecret = nil, true })
}

func setSecret(t *testing.T, d verbs.Device, secret []byte) {
	t.Helper()
	s, ok := d.(SecretSetter)
	if !ok {
		t.Fatalf("%T has no SetSecret method", d)
	}
	if err := s.SetSecret(secret); err != nil {
		t.Fatal(err)
	}
}

// waitInbound waits until d holds n inbound connections in their handshake.
func waitInbound(t *testing.T, d *device, n int) {
	t.Helper()
	for i := 0; ; i++ {
		d.mu.Lock()
		got := len(d.inbound)
		d.mu.Unlock()
		if got >= n {
			return
		}
		if i > int(testbudget.Scale(10*time.Second)/time.Millisecond) {
			t.Fatalf("%d inbound connections after %d polls a millisecond apart, want %d", got, i, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// deferredAcceptor opens a device without its secret and one with testSecret, with a
// QP each, arranged so that the deferred device accepts (the lower device id dials).
func deferredAcceptor(t *testing.T, dialerCfg verbs.Config) (acc, dial *side) {
	t.Helper()
	acc = newSide(t, openDev(t, deferredCfg()), verbs.QPAttr{})
	for {
		dial = newSide(t, openDev(t, dialerCfg), verbs.QPAttr{})
		if dialsTo(dial.dev.id, dial.qp.Num(), acc.dev.id, acc.qp.Num()) {
			return acc, dial
		}
		dial.dev.Close()
	}
}

// TestDeferredSecret opens two devices without a secret: their endpoints exist at once,
// the dialer's ToRTR refuses to connect until the secret is set, and after SetSecret on
// both the QPs connect and carry data.
func TestDeferredSecret(t *testing.T) {
	a := newSide(t, openDev(t, deferredCfg()), verbs.QPAttr{})
	b := newSide(t, openDev(t, deferredCfg()), verbs.QPAttr{})
	if len(a.qp.Endpoint()) == 0 || len(b.qp.Endpoint()) == 0 {
		t.Fatal("a QP of a device without its secret has no endpoint")
	}
	acc, dial := acceptor(a, b)
	err := dial.qp.ToRTR(context.Background(), acc.qp.Endpoint())
	if !errors.Is(err, verbs.ErrInvalid) || !strings.Contains(err.Error(), "SetSecret") {
		t.Fatalf("dialer's ToRTR before SetSecret: %v, want ErrInvalid naming SetSecret", err)
	}
	setSecret(t, a.dev, testSecret)
	setSecret(t, b.dev, testSecret)
	connect(t, a, b) // the refused ToRTR left the QP in Init
	loc, rem := newBuf(t, a, arenaMem, 64), newBuf(t, b, arenaMem, 64)
	pattern(loc.b, 1)
	post(t, a.qp, verbs.SendWR{WRID: 1, Op: verbs.OpRDMAWrite, Flags: verbs.Signaled,
		Local: loc.b, LKey: loc.key, Remote: verbs.RemoteAddr{RKey: rem.key}})
	wantWC(t, waitWC(t, a.cq), 1, verbs.Success, verbs.WCRDMAWrite)
	if !bytes.Equal(loc.b, rem.b) {
		t.Fatal("the target's memory differs from what was written")
	}
}

// TestDeferredSecretInbound: a connection that reaches a device before its secret waits,
// and completes its handshake once SetSecret supplies the secret.
func TestDeferredSecretInbound(t *testing.T) {
	acc, dial := deferredAcceptor(t, testCfg())
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
	defer cancel()
	if err := acc.qp.ToRTR(ctx, dial.qp.Endpoint()); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- verbs.Connect(ctx, dial.qp, acc.qp.Endpoint()) }()
	waitInbound(t, acc.dev, 1)
	setSecret(t, acc.dev, testSecret)
	if err := <-errc; err != nil {
		t.Fatalf("dialer's connect once the acceptor has its secret: %v", err)
	}
	if err := acc.qp.ToRTS(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := Rejections(acc.dev); n != 0 {
		t.Errorf("acceptor counted %d rejections, want 0", n)
	}
}

// TestDeferredSecretNeverSet: a connection to a device whose secret never comes is
// closed at the handshake deadline and counted as a rejection; the dialer's ToRTR fails.
func TestDeferredSecretNeverSet(t *testing.T) {
	old := handshakeTimeout
	handshakeTimeout = 300 * time.Millisecond
	defer func() { handshakeTimeout = old }()
	acc, dial := deferredAcceptor(t, testCfg())
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
	defer cancel()
	if err := dial.qp.ToRTR(ctx, acc.qp.Endpoint()); err == nil {
		t.Fatal("dialer's ToRTR to a device without its secret succeeded")
	}
	waitRejections(t, acc.dev, 1)
}

// TestDeferredSecretWrong: a deferred device given another secret than its peer's
// refuses the peer (ErrAuth at the dialer, a rejection at the acceptor).
func TestDeferredSecretWrong(t *testing.T) {
	acc, dial := deferredAcceptor(t, testCfg())
	setSecret(t, acc.dev, []byte("a-different-secret-of-32-bytes!!"))
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
	defer cancel()
	if err := dial.qp.ToRTR(ctx, acc.qp.Endpoint()); !errors.Is(err, verbs.ErrAuth) {
		t.Fatalf("dialer's ToRTR against a different secret: %v, want ErrAuth", err)
	}
	waitRejections(t, acc.dev, 1)
}

// TestSetSecretErrors: a short secret, a second SetSecret, SetSecret on a device opened
// with its secret or after Close, and Options with both a Secret and DeferSecret fail.
func TestSetSecretErrors(t *testing.T) {
	d := openDev(t, deferredCfg())
	if err := d.SetSecret([]byte("short")); !errors.Is(err, verbs.ErrInvalid) || !strings.Contains(err.Error(), "at least") {
		t.Errorf("SetSecret with 5 bytes: %v, want ErrInvalid naming the minimum", err)
	}
	if d.hasSecret() {
		t.Fatal("a refused SetSecret set the secret")
	}
	setSecret(t, d, testSecret)
	if err := d.SetSecret(testSecret); !errors.Is(err, verbs.ErrInvalid) || !strings.Contains(err.Error(), "already set") {
		t.Errorf("second SetSecret: %v, want ErrInvalid saying it is already set", err)
	}
	if err := openDev(t, testCfg()).SetSecret(testSecret); !errors.Is(err, verbs.ErrInvalid) {
		t.Errorf("SetSecret on a device opened with its secret: %v, want ErrInvalid", err)
	}
	closed := openDev(t, deferredCfg())
	closed.Close()
	if err := closed.SetSecret(testSecret); !errors.Is(err, verbs.ErrClosed) {
		t.Errorf("SetSecret after Close: %v, want ErrClosed", err)
	}
	both := withOptions(testCfg(), func(o *Options) { o.DeferSecret = true })
	if _, err := verbs.Open(providerName, both); !errors.Is(err, verbs.ErrInvalid) || !strings.Contains(err.Error(), "DeferSecret") {
		t.Errorf("Open with a Secret and DeferSecret: %v, want ErrInvalid naming DeferSecret", err)
	}
}
