package attrset_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/gorma-hpc/gorma/internal/attrset"
)

// key is a key type as runtime's and window's are: a struct embedding Key.
type key struct {
	name string
	attrset.Key
}

func values(es []attrset.Entry[*key]) []string {
	var s []string
	for _, e := range es {
		s = append(s, fmt.Sprintf("%s=%v", e.Key.name, e.Value))
	}
	return s
}

// TestSetPutGetTake: Put adds a key last and replaces in place, returning the value it
// replaced; Take removes and returns; Get reads; a missing key reads as nil, false.
func TestSetPutGetTake(t *testing.T) {
	var s attrset.Set[*key]
	a, b, c := &key{name: "a"}, &key{name: "b"}, &key{name: "c"}
	if v, ok := s.Get(a); ok || v != nil {
		t.Fatalf("Get on an empty set = %v, %v; want nil, false", v, ok)
	}
	for _, p := range []struct {
		k    *key
		v    int
		old  any
		repl bool
	}{{a, 1, nil, false}, {b, 2, nil, false}, {c, 3, nil, false}, {a, 10, 1, true}} {
		old, repl, err := s.Put(p.k, p.v)
		if err != nil || old != p.old || repl != p.repl {
			t.Fatalf("Put(%s, %d) = %v, %v, %v; want %v, %v, nil", p.k.name, p.v, old, repl, err, p.old, p.repl)
		}
	}
	if v, ok := s.Get(a); !ok || v != 10 {
		t.Fatalf("Get(a) = %v, %v; want 10, true", v, ok)
	}
	if v, ok := s.Take(b); !ok || v != 2 {
		t.Fatalf("Take(b) = %v, %v; want 2, true", v, ok)
	}
	if v, ok := s.Take(b); ok || v != nil {
		t.Fatalf("second Take(b) = %v, %v; want nil, false", v, ok)
	}
	if _, _, err := s.Put(b, 20); err != nil {
		t.Fatal(err)
	}
	// The order is that of first setting: a's replacement kept its place, b went last.
	if got, want := values(s.TakeAll()), []string{"b=20", "c=3", "a=10"}; !slices.Equal(got, want) {
		t.Fatalf("TakeAll = %v, want %v", got, want)
	}
}

// TestSetTakeAllCloses: after TakeAll, Put fails with ErrClosed and the set is empty,
// while the name stays.
func TestSetTakeAllCloses(t *testing.T) {
	var s attrset.Set[*key]
	a := &key{name: "a"}
	s.SetName("w")
	if _, _, err := s.Put(a, 1); err != nil {
		t.Fatal(err)
	}
	if got := values(s.TakeAll()); !slices.Equal(got, []string{"a=1"}) {
		t.Fatalf("TakeAll = %v, want [a=1]", got)
	}
	if _, _, err := s.Put(a, 2); !errors.Is(err, attrset.ErrClosed) {
		t.Fatalf("Put after TakeAll: err = %v, want ErrClosed", err)
	}
	if v, ok := s.Get(a); ok {
		t.Fatalf("Get after TakeAll = %v, true; want none", v)
	}
	if _, ok := s.Take(a); ok {
		t.Fatal("Take after TakeAll found a value")
	}
	if got := s.TakeAll(); len(got) != 0 {
		t.Fatalf("second TakeAll = %v, want none", values(got))
	}
	if name, named := s.Name(); name != "w" || !named {
		t.Fatalf("Name after TakeAll = %q, %v; want \"w\", true", name, named)
	}
}

// TestSetName: Name reports whether SetName was called, so that "" set on purpose
// differs from no name.
func TestSetName(t *testing.T) {
	var s attrset.Set[*key]
	if name, named := s.Name(); name != "" || named {
		t.Fatalf("Name of a new set = %q, %v; want \"\", false", name, named)
	}
	s.SetName("")
	if name, named := s.Name(); name != "" || !named {
		t.Fatalf("Name after SetName(\"\") = %q, %v; want \"\", true", name, named)
	}
	s.SetName("x")
	if name, _ := s.Name(); name != "x" {
		t.Fatalf("Name = %q, want x", name)
	}
}

// TestSetCopyTo: CopyTo gives dst what keep keeps, with keep's values, in order,
// replacing what dst had and leaving s and dst's name alone; keep may use both sets.
func TestSetCopyTo(t *testing.T) {
	var src, dst attrset.Set[*key]
	a, b, c := &key{name: "a"}, &key{name: "b"}, &key{name: "c"}
	for i, k := range []*key{a, b, c} {
		if _, _, err := src.Put(k, i+1); err != nil {
			t.Fatal(err)
		}
	}
	dst.SetName("dst")
	if _, _, err := dst.Put(&key{name: "old"}, 0); err != nil {
		t.Fatal(err)
	}
	var seen []string
	src.CopyTo(&dst, func(k *key, v any) (any, bool) {
		seen = append(seen, k.name)
		src.Get(k) // no lock is held: keep may call either set
		dst.Get(k)
		if k == b {
			return nil, false
		}
		return v.(int) * 10, true
	})
	if !slices.Equal(seen, []string{"a", "b", "c"}) {
		t.Fatalf("keep saw %v, want [a b c]", seen)
	}
	if name, _ := dst.Name(); name != "dst" {
		t.Fatalf("dst's name = %q, want dst", name)
	}
	if got, want := values(dst.TakeAll()), []string{"c=30", "a=10"}; !slices.Equal(got, want) {
		t.Fatalf("dst = %v, want %v", got, want)
	}
	if got, want := values(src.TakeAll()), []string{"c=3", "b=2", "a=1"}; !slices.Equal(got, want) {
		t.Fatalf("src = %v, want %v", got, want)
	}
}

// TestKeyFree: the first Free of a Key reports true, later ones false; Freed follows.
func TestKeyFree(t *testing.T) {
	var k attrset.Key
	if k.Freed() {
		t.Fatal("a zero Key is freed")
	}
	if !k.Free() {
		t.Fatal("first Free reported false")
	}
	if !k.Freed() || k.Free() {
		t.Fatalf("after Free: Freed = %v, second Free = true; want true, false", k.Freed())
	}
}

// TestSetConcurrent: goroutines Put, Get, Take, rename and copy one set at once, each
// with a key of its own plus one shared key, and exactly one Free of the shared Key
// succeeds; run it with -race. At the end TakeAll returns each goroutine's last Put,
// and Put fails.
func TestSetConcurrent(t *testing.T) {
	const workers, rounds = 8, 200
	var s, copies attrset.Set[*key]
	shared := &key{name: "shared"}
	own := make([]*key, workers)
	var wg sync.WaitGroup
	var mu sync.Mutex
	freed := 0
	for g := range workers {
		own[g] = &key{name: fmt.Sprint(g)}
		wg.Go(func() {
			k := own[g]
			for i := range rounds {
				old, repl, err := s.Put(k, i)
				if err != nil {
					t.Errorf("worker %d: Put: %v", g, err)
					return
				}
				if i > 0 && (!repl || old != i-1) {
					t.Errorf("worker %d round %d: Put replaced %v, %v; want %d, true", g, i, old, repl, i-1)
					return
				}
				if v, ok := s.Get(k); !ok || v != i {
					t.Errorf("worker %d round %d: Get = %v, %v", g, i, v, ok)
					return
				}
				if i%3 == 0 {
					if v, ok := s.Take(k); !ok || v != i {
						t.Errorf("worker %d round %d: Take = %v, %v", g, i, v, ok)
						return
					}
					if _, _, err := s.Put(k, i); err != nil {
						t.Errorf("worker %d: Put: %v", g, err)
						return
					}
				}
				if _, _, err := s.Put(shared, g); err != nil {
					t.Errorf("worker %d: Put(shared): %v", g, err)
					return
				}
				s.Take(shared)
				s.SetName(k.name)
				s.Name()
				s.CopyTo(&copies, func(k *key, v any) (any, bool) { return v, k != shared })
			}
			if shared.Free() {
				mu.Lock()
				freed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if freed != 1 {
		t.Fatalf("%d Frees of one Key succeeded, want 1", freed)
	}
	s.Take(shared)
	got := s.TakeAll()
	if len(got) != workers {
		t.Fatalf("TakeAll returned %d entries, want %d: %v", len(got), workers, values(got))
	}
	for _, e := range got {
		if e.Value != rounds-1 {
			t.Errorf("key %s ends with %v, want %d", e.Key.name, e.Value, rounds-1)
		}
	}
	if _, _, err := s.Put(own[0], 0); !errors.Is(err, attrset.ErrClosed) {
		t.Fatalf("Put after TakeAll: err = %v, want ErrClosed", err)
	}
}

// Example: a key type embeds Key beside its delete function, and the caller runs the
// function on what Put and TakeAll return, with no lock held.
func Example() {
	type keyval struct {
		del func(v any)
		attrset.Key
	}
	var s attrset.Set[*keyval]
	k := &keyval{del: func(v any) { fmt.Println("deleted", v) }}
	if _, _, err := s.Put(k, "first"); err != nil {
		fmt.Println(err)
	}
	if old, replaced, err := s.Put(k, "second"); err == nil && replaced {
		k.del(old)
	}
	v, _ := s.Get(k)
	fmt.Println("value", v)
	for _, e := range s.TakeAll() { // the owner's Free
		e.Key.del(e.Value)
	}
	_, _, err := s.Put(k, "third")
	fmt.Println(err)
	// Output:
	// deleted first
	// value second
	// deleted second
	// attrset: the set is closed
}
