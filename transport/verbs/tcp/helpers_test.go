package tcp

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// testSecret authenticates the devices of this package's own tests.
var testSecret = []byte("tcp-provider-unit-test-secret-0123")

// testCfg is a small device: tests open many.
func testCfg() verbs.Config {
	return verbs.Config{ArenaSize: 64 << 20, MaxMRs: 256, Provider: Options{Secret: testSecret}}
}

// side is one end of a connected pair.
type side struct {
	dev *device
	pd  verbs.PD
	cq  verbs.CQ
	qp  verbs.QP
}

func openDev(t testing.TB, cfg verbs.Config) *device {
	t.Helper()
	d, err := verbs.Open(providerName, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d.(*device)
}

// newSide creates a PD, a CQ and a QP in Init on d.
func newSide(t testing.TB, d *device, attr verbs.QPAttr) *side {
	t.Helper()
	pd, err := d.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := d.CreateCQ(1 << 12)
	if err != nil {
		t.Fatal(err)
	}
	attr.SendCQ, attr.RecvCQ = cq, cq
	qp, err := pd.CreateQP(attr)
	if err != nil {
		t.Fatal(err)
	}
	if err := qp.ToInit(); err != nil {
		t.Fatal(err)
	}
	return &side{dev: d, pd: pd, cq: cq, qp: qp}
}

// connect connects a and b concurrently.
func connect(t testing.TB, a, b *side) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- verbs.Connect(ctx, b.qp, a.qp.Endpoint()) }()
	if err := verbs.Connect(ctx, a.qp, b.qp.Endpoint()); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// pair opens two devices with cfg and connects a QP of each.
func pair(t testing.TB, cfg verbs.Config, attr verbs.QPAttr) (a, b *side) {
	t.Helper()
	a = newSide(t, openDev(t, cfg), attr)
	b = newSide(t, openDev(t, cfg), attr)
	connect(t, a, b)
	return a, b
}

func allocMR(t testing.TB, s *side, n int) verbs.MR {
	t.Helper()
	mr, err := s.pd.AllocMR(n, verbs.AccessAll)
	if err != nil {
		t.Fatal(err)
	}
	return mr
}

func regMR(t testing.TB, s *side, buf []byte) verbs.MR {
	t.Helper()
	mr, err := s.pd.RegMR(buf, verbs.AccessAll)
	if err != nil {
		t.Fatal(err)
	}
	return mr
}

// waitWC waits up to 10 s for one completion on cq.
func waitWC(t testing.TB, cq verbs.CQ) verbs.WC {
	t.Helper()
	var wc [1]verbs.WC
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
	defer cancel()
	for {
		n, err := cq.Poll(wc[:])
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		if n == 1 {
			return wc[0]
		}
		if err := cq.Wait(ctx); err != nil {
			t.Fatalf("no completion: %v", err)
		}
	}
}

// quiet checks that cq produces no completion for d.
func quiet(t testing.TB, cq verbs.CQ, d time.Duration, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := cq.Wait(ctx); err == nil {
		var wc [1]verbs.WC
		cq.Poll(wc[:])
		t.Errorf("%s: unexpected completion %+v", what, wc[0])
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%s: Wait: %v", what, err)
	}
}

func post(t testing.TB, qp verbs.QP, wr verbs.SendWR) {
	t.Helper()
	if err := qp.PostSend(&wr); err != nil {
		t.Fatalf("post %v: %v", wr.Op, err)
	}
}

func postRecv(t testing.TB, qp verbs.QP, wr verbs.RecvWR) {
	t.Helper()
	if err := qp.PostRecv(&wr); err != nil {
		t.Fatalf("post recv: %v", err)
	}
}

func wantWC(t testing.TB, got verbs.WC, wrid uint64, st verbs.Status, op verbs.WCOpcode) {
	t.Helper()
	if got.WRID != wrid || got.Status != st || got.Op != op {
		t.Fatalf("completion %+v (%v, %v), want wrid %d %v %v", got, got.Status, got.Op, wrid, st, op)
	}
}

func pattern(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i*7)
	}
}

// waitWCErr is waitWC for goroutines other than the test's.
func waitWCErr(cq verbs.CQ) (verbs.WC, error) {
	var wc [1]verbs.WC
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(10*time.Second))
	defer cancel()
	for {
		n, err := cq.Poll(wc[:])
		if err != nil {
			return verbs.WC{}, err
		}
		if n == 1 {
			return wc[0], nil
		}
		if err := cq.Wait(ctx); err != nil {
			return verbs.WC{}, fmt.Errorf("no completion: %w", err)
		}
	}
}

func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

// waitWCAsync waits for one completion on cq on a goroutine of its own (waitWCErr's
// bound) and delivers it on the returned channel; an error fails the test.
func waitWCAsync(t testing.TB, cq verbs.CQ) <-chan verbs.WC {
	got := make(chan verbs.WC, 1)
	go func() {
		wc, err := waitWCErr(cq)
		if err != nil {
			t.Error(err)
		}
		got <- wc
	}()
	return got
}

// withOptions returns cfg with its tcp Options (cfg.Provider) changed by set.
func withOptions(cfg verbs.Config, set func(*Options)) verbs.Config {
	o, _ := cfg.Provider.(Options)
	set(&o)
	cfg.Provider = o
	return cfg
}
