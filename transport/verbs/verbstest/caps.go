package verbstest

import (
	"context"
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// testDeclaredCaps checks what a provider's Caps promise beyond its operations: CapMap's
// QPs implement verbs.Mapper (and no other provider's do), and with CapLocalRTS a QP
// reaches RTS while its peer is still in Init.
func testDeclaredCaps(t *testing.T, f Factory) {
	p, _ := verbs.Lookup(f.Provider)
	c := p.Caps()
	e := newEnv(f)
	a, b := e.open(t, "A"), e.open(t, "B")
	x := e.newEnd(t, a, "A.qp", qpOpts{})
	y := e.newEnd(t, b, "B.qp", qpOpts{})
	if _, ok := x.qp.(verbs.Mapper); ok != c.Has(verbs.CapMap) {
		t.Errorf("QP implements verbs.Mapper: %v; provider declares CapMap: %v", ok, c.Has(verbs.CapMap))
	}
	if !c.Has(verbs.CapLocalRTS) {
		return
	}
	for _, z := range []*end{x, y} {
		if err := z.qp.ToInit(); err != nil {
			t.Fatalf("%s: ToInit: %v", z.cq.name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := x.qp.ToRTR(ctx, y.qp.Endpoint()); err != nil {
		t.Fatalf("ToRTR: %v", err)
	}
	if err := x.qp.ToRTS(ctx); err != nil {
		t.Fatalf("ToRTS with the peer in Init: %v (the provider declares CapLocalRTS)", err)
	}
	wantState(t, "after ToRTS", x.qp, verbs.RTS)
}
