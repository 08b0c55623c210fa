package runtime

import (
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// TestYieldAfter pins when a spinning wait gives its processor away (progress.go): only
// on an oversubscribed host (hostFit); at once for a peer bound to this rank's
// processor, never for one that cannot compete for it, after oversubYieldAfter rounds
// otherwise.
func TestYieldAfter(t *testing.T) {
	id := hostIdentity{netNS: 1}
	cards := []card{
		{host: "a", id: id, cpu: 0}, // this rank
		{host: "a", id: id, cpu: 0}, // bound to the same processor
		{host: "a", id: id, cpu: 1}, // bound to another
		{host: "a", id: id, cpu: -1},
		{host: "b", id: id, cpu: 0}, // another host
	}
	e := &engine{rank: 0, localSize: 4, ncpu: 2, waiting: waitRule(verbs.WaitHybrid, 0, true, 1)}
	tab := &rankTable{cards: cards, cardOK: make([]bool, len(cards)), hosts: make([]string, len(cards))}
	for r := range cards {
		tab.cardOK[r] = true
	}
	e.links.tab.Store(tab)
	for _, tc := range []struct {
		name  string
		r     *Request
		quiet bool
		set   []*Request
		want  int
	}{
		{"recv from the same processor", &Request{kind: reqRecv, peer: 1}, false, nil, 0},
		{"send to the same processor", &Request{kind: reqSend, peer: 1}, false, nil, 0},
		{"probe of the same processor", &Request{kind: reqProbe, peer: 1}, false, nil, 0},
		{"recv from another processor", &Request{kind: reqRecv, peer: 2}, false, nil, neverYield},
		{"recv from an unbound rank", &Request{kind: reqRecv, peer: 3}, false, nil, oversubYieldAfter},
		{"recv from another host", &Request{kind: reqRecv, peer: 4}, false, nil, neverYield},
		{"recv from any source", &Request{kind: reqRecv, peer: AnySource}, false, nil, oversubYieldAfter},
		{"self", &Request{kind: reqRecv, peer: 0}, false, nil, oversubYieldAfter},
		{"engine's own request", &Request{kind: reqSync}, false, nil, oversubYieldAfter},
		{"Finalize's quiet wait", &Request{kind: reqRecv, peer: 1}, true, nil, oversubYieldAfter},
		{"WaitAny", &Request{kind: reqRecv, peer: 1}, false, []*Request{{}}, oversubYieldAfter},
	} {
		if got := e.yieldAfterLocked(tc.r, tc.quiet, tc.set); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	e.waiting = waitRule(verbs.WaitHybrid, 0, false, 1) // a processor per rank: no wait yields
	if got := e.yieldAfterLocked(&Request{kind: reqRecv, peer: 1}, false, nil); got != neverYield {
		t.Errorf("unoversubscribed: %d, want never", got)
	}
}

// TestCardCPU: the affinity travels in the card, and the bound processor with it: -1
// for a set of several.
func TestCardCPU(t *testing.T) {
	for _, cpus := range [][]int{{0}, {7}, {1023}, {0, 1}, {3, 64, 1000}} {
		c := card{host: "h", cm: "x:1"}
		for _, i := range cpus {
			c.cpus.Set(i)
		}
		got, err := decodeCard(c.encode())
		want := int32(-1)
		if len(cpus) == 1 {
			want = int32(cpus[0])
		}
		if err != nil || got.cpus != c.cpus || got.cpu != want || got.host != "h" || got.cm != "x:1" {
			t.Errorf("cpus %v: got %v (cpu %d, host %q, cm %q), %v; want cpu %d", cpus, got.cpus, got.cpu, got.host, got.cm, err, want)
		}
	}
	if a := affinity(); a.Count() < 1 {
		t.Errorf("affinity() is empty")
	}
}
