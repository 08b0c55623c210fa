package matching

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// ref is the brute-force reference: both queues as slices, searched from the front.
type ref struct {
	posted []*item // receives, asking for want[id]
	ux     []*item // messages, carrying env[id]
	env    map[*item]Envelope
}

func (r *ref) arrive(m *item, env Envelope) *item {
	r.env[m] = env
	for i, p := range r.posted {
		if r.env[p].Takes(env) {
			r.posted = slices.Delete(r.posted, i, i+1)
			return p
		}
	}
	r.ux = append(r.ux, m)
	return nil
}

func (r *ref) post(p *item, want Envelope) *item {
	r.env[p] = want
	for i, m := range r.ux {
		if want.Takes(r.env[m]) {
			r.ux = slices.Delete(r.ux, i, i+1)
			return m
		}
	}
	r.posted = append(r.posted, p)
	return nil
}

// TestModel drives the queues with seeded random sequences of arrivals, posts and
// cancellations of posted receives, over few contexts, sources and tags so that
// wildcards and collisions are common, and checks every outcome and both queues'
// contents against the reference after every step. Messages carry a per-sender
// sequence number in their id, and the test also checks non-overtaking: a receive never
// gets a message of a sender while an older message of that sender it also takes
// still waits.
func TestModel(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, seed) })
	}
}

func runModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 32))
	var (
		posted Posted[item]
		ux     Unexpected[item]
		rf     = ref{env: map[*item]Envelope{}}
		next   int
	)
	pick := func(wild bool) (src int, tag int32) {
		src, tag = rng.IntN(3), int32(rng.IntN(3))
		if wild && rng.IntN(4) == 0 {
			src = AnySource
		}
		if wild && rng.IntN(4) == 0 {
			tag = AnyTag
		}
		return src, tag
	}
	for step := range 400 {
		it := &item{id: next}
		next++
		switch op := rng.IntN(10); {
		case op < 4: // a message arrives
			src, tag := pick(false)
			env := Envelope{Ctx: uint16(rng.IntN(2)), Src: src, Tag: tag}
			got := posted.Take(env)
			want := rf.arrive(it, env)
			if got != want {
				t.Fatalf("step %d: arrival %+v taken by %v, reference %v", step, env, got, want)
			}
			if got == nil {
				ux.Push(&it.link, it, env)
			}
		case op < 8: // a receive is posted
			src, tag := pick(true)
			want := Envelope{Ctx: uint16(rng.IntN(2)), Src: src, Tag: tag}
			if m := ux.Match(want); m != nil {
				for o := range ux.All() {
					if o == m {
						break
					}
					if rf.env[o].Src == rf.env[m].Src && want.Takes(rf.env[o]) {
						t.Fatalf("step %d: message %d overtook %d of the same sender", step, m.id, o.id)
					}
				}
			}
			got := ux.Take(want)
			ref := rf.post(it, want)
			if got != ref {
				t.Fatalf("step %d: receive %+v took %v, reference %v", step, want, got, ref)
			}
			if got == nil {
				posted.Push(&it.link, it, want)
			}
		default: // a posted receive is canceled
			if len(rf.posted) == 0 {
				continue
			}
			i := rng.IntN(len(rf.posted))
			victim := rf.posted[i]
			rf.posted = slices.Delete(rf.posted, i, i+1)
			if !posted.Remove(&victim.link) {
				t.Fatalf("step %d: Remove of posted receive %d failed", step, victim.id)
			}
		}
		same(t, step, "posted", posted.All(), posted.Len(), rf.posted)
		same(t, step, "unexpected", ux.All(), ux.Len(), rf.ux)
	}
}

func same(t *testing.T, step int, name string, all func(func(*item) bool), n int, want []*item) {
	t.Helper()
	var got []*item
	for it := range all {
		got = append(got, it)
	}
	if !slices.Equal(got, want) || n != len(want) {
		t.Fatalf("step %d: %s queue holds %d items (Len %d), reference %d", step, name, len(got), n, len(want))
	}
}
