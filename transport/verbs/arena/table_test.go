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
