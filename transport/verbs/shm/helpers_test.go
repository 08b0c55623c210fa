package shm

import (
	"context"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/verbs"
)

// testCfg is a small device: tests open many.
var testCfg = verbs.Config{ArenaSize: 64 << 20, MaxMRs: 256}

// side is one end of a connected pair.
type side struct {
	dev verbs.Device
	pd  verbs.PD
	cq  verbs.CQ
	qp  verbs.QP
}

func openSide(t testing.TB, cfg verbs.Config, attr verbs.QPAttr) *side {
	t.Helper()
	if cfg.ArenaSize == 0 {
		cfg.ArenaSize, cfg.MaxMRs = testCfg.ArenaSize, testCfg.MaxMRs
	}
	dev, err := verbs.Open(Name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	s := &side{dev: dev}
	if s.pd, err = dev.AllocPD(); err != nil {
		t.Fatal(err)
	}
	if s.cq, err = dev.CreateCQ(256); err != nil {
		t.Fatal(err)
	}
	attr.SendCQ, attr.RecvCQ = s.cq, s.cq
	if s.qp, err = s.pd.CreateQP(attr); err != nil {
		t.Fatal(err)
	}
	if err := s.qp.ToInit(); err != nil {
		t.Fatal(err)
	}
	return s
}

// pair opens two devices in this process and connects a QP of each to the other.
func pair(t testing.TB, cfg verbs.Config, attr verbs.QPAttr) (a, b *side) {
	t.Helper()
	a, b = openSide(t, cfg, attr), openSide(t, cfg, attr)
	ctx := context.Background()
	if err := verbs.Connect(ctx, a.qp, b.qp.Endpoint()); err != nil {
		t.Fatal(err)
	}
	if err := verbs.Connect(ctx, b.qp, a.qp.Endpoint()); err != nil {
		t.Fatal(err)
	}
	return a, b
}

func (s *side) allocMR(t testing.TB, n int, acc verbs.Access) verbs.MR {
	t.Helper()
	m, err := s.pd.AllocMR(n, acc)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// next returns the next completion of s, driving others' progress while waiting (one
// goroutine plays both processes).
func (s *side) next(t testing.TB, others ...*side) verbs.WC {
	t.Helper()
	deadline := time.Now().Add(testbudget.Scale(10 * time.Second))
	wc := make([]verbs.WC, 1)
	for time.Now().Before(deadline) {
		n, err := s.cq.Poll(wc)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			return wc[0]
		}
		for _, o := range others {
			o.cq.Poll(nil)
		}
	}
	t.Fatalf("no completion within %v", testbudget.Scale(10*time.Second))
	return verbs.WC{}
}

// none checks that s has no completion.
func (s *side) none(t testing.TB) {
	t.Helper()
	wc := make([]verbs.WC, 1)
	if n, _ := s.cq.Poll(wc); n != 0 {
		t.Fatalf("unexpected completion %+v", wc[0])
	}
}

func (s *side) post(t testing.TB, wr verbs.SendWR) {
	t.Helper()
	if err := s.qp.PostSend(&wr); err != nil {
		t.Fatal(err)
	}
}

func (s *side) recv(t testing.TB, wr verbs.RecvWR) {
	t.Helper()
	if err := s.qp.PostRecv(&wr); err != nil {
		t.Fatal(err)
	}
}

func wantWC(t testing.TB, wc verbs.WC, wrid uint64, st verbs.Status, op verbs.WCOpcode) {
	t.Helper()
	if wc.WRID != wrid || wc.Status != st || wc.Op != op {
		t.Fatalf("completion %+v (%v, %v), want wrid %d %v %v", wc, wc.Status, wc.Op, wrid, st, op)
	}
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}
