package arena

import (
	"sync"
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// TestPinRacesRevoke hammers a slot with stale and live pins while it is revoked and
// republished: the pin count never goes negative, and a pin succeeds only with the key
// that was live at that moment.
func TestPinRacesRevoke(t *testing.T) {
	a := newArena(t, Config{Name: "t"})
	r, _ := a.Alloc(64, verbs.AccessAll)
	stale := r.Key
	a.Free(r)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	tab := a.Table()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, ok := tab.Pin(stale, 0, 8, verbs.RemoteRead); ok {
					t.Error("stale key pinned")
					return
				}
			}
		}()
	}
	for range 2000 {
		r, err := a.Alloc(64, verbs.AccessAll)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := tab.Pin(r.Key, 0, 8, verbs.RemoteRead); !ok {
			t.Fatal("live key refused")
		}
		tab.Unpin(r.Key)
		a.Free(r)
	}
	close(stop)
	wg.Wait()
	if w := tab.slots[KeySlot(stale)].state.Load(); w&pinMask != 0 || w>>pinBits != 0 {
		t.Fatalf("slot state after the race: %#x, want free and unpinned", w)
	}
}

// TestNote: a note under the live key sticks until the slot is published again; a stale
// key notes nothing.
func TestNote(t *testing.T) {
	a := newArena(t, Config{Name: "t"})
	tab := a.Table()
	r, _ := a.Alloc(64, verbs.AccessAll)
	if tab.Noted(r.Key) {
		t.Fatal("a fresh region is noted")
	}
	tab.Note(r.Key)
	if !tab.Noted(r.Key) {
		t.Fatal("a note under the live key did not stick")
	}
	stale := r.Key
	a.Free(r)
	r2, _ := a.Alloc(64, verbs.AccessAll)
	if KeySlot(r2.Key) != KeySlot(stale) {
		t.Fatalf("slot %d, want the freed slot %d again (free slots are reused last in, first out)", KeySlot(r2.Key), KeySlot(stale))
	}
	if tab.Noted(r2.Key) {
		t.Fatal("a republished slot kept its note")
	}
	tab.Note(stale)
	if tab.Noted(r2.Key) {
		t.Fatal("a stale key noted the slot's new region")
	}
	tab.Note(r2.Key)
	if !tab.Noted(r2.Key) {
		t.Fatal("a note under the new key did not stick")
	}
}
