package launcher

import (
	"io"
	"log"
	"net"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

func TestUnprobed(t *testing.T) {
	now := time.Unix(1000, 0)
	never := time.Time{}
	long := now.Add(-2 * unprobedAfter)
	recent := now.Add(-unprobedAfter / 2)
	tests := []struct {
		name                 string
		peersSince, lastPing time.Time
		want                 bool
	}{
		{"no peers", never, never, false},
		{"no peers, probed long ago", never, long, false},
		{"peers for long, never probed", long, never, true},
		{"peers for long, probed long ago", long, long, true},
		{"peers for long, probed recently", long, recent, false},
		{"peers recently, never probed", recent, never, false},
		{"peers and last probe just at the bound", now.Add(-unprobedAfter), now.Add(-unprobedAfter), true},
	}
	for _, tt := range tests {
		if got := unprobed(now, tt.peersSince, tt.lastPing); got != tt.want {
			t.Errorf("%s: unprobed = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A departure is delivered to the subscriptions that watch its name, and again at once
// to a later subscription; a subscription to other names gets nothing.
func TestWatchLeavesReplays(t *testing.T) {
	key := randomKey(t)
	a := testAgent(t, "a", 1, key)
	b := testAgent(t, "b", 1, key)
	c := testAgent(t, "c", 1, key)
	for _, m := range []*Agent{b, c} {
		if err := m.cl.join([]string{a.cl.addr()}); err != nil {
			t.Fatal(err)
		}
	}
	watch, stop := a.cl.watchLeaves("b", "c")
	defer stop()
	b.close() // says goodbye
	want := leaveEvent{Name: "b", Left: true}
	select {
	case ev := <-watch:
		if ev != want {
			t.Fatalf("got %+v, want %+v", ev, want)
		}
	case <-time.After(testbudget.Scale(5 * time.Second)):
		t.Fatalf("b's leave not seen within %v", testbudget.Scale(5*time.Second))
	}
	late, stop2 := a.cl.watchLeaves("b")
	defer stop2()
	select {
	case ev := <-late:
		if ev != want {
			t.Errorf("replayed %+v, want %+v", ev, want)
		}
	default:
		t.Error("a departure before the subscription was not replayed")
	}
	other, stop3 := a.cl.watchLeaves("c", "a")
	defer stop3()
	select {
	case ev := <-other:
		t.Errorf("a subscription to c and a got %+v", ev)
	default:
	}
}

// The seed (a, no --join) is replaced at its address by a new process while b, which
// joined it, runs the rejoin loop. b joins the new seed by itself, whether the old one
// said goodbye, was declared dead first, or vanished and was replaced at once (the new
// one answers the old one's probes: b sees its new boot id in the acks). Both then see
// each other, b with the new seed's control address.
func TestRejoinRestartedSeed(t *testing.T) {
	for _, how := range []string{"left", "dead", "at-once"} {
		t.Run(how, func(t *testing.T) {
			key := randomKey(t)
			a, err := startAgent(agentConfig{Name: "a", Bind: "127.0.0.1:0", Slots: 1, Key: key})
			if err != nil {
				t.Fatal(err)
			}
			seed := a.cl.addr()
			b := testAgent(t, "b", 1, key)
			if err := b.cl.join([]string{seed}); err != nil {
				t.Fatal(err)
			}
			b.cl.keepJoined([]string{seed}, log.New(io.Discard, "", 0))
			leaves, stop := b.cl.watchLeaves("a")
			defer stop()
			if how == "left" {
				a.close()
			} else {
				a.cl.vanish()
				a.close()
			}
			if how != "at-once" {
				select {
				case <-leaves:
				case <-time.After(testbudget.Scale(5 * time.Second)):
					t.Fatalf("a's departure not seen within %v", testbudget.Scale(5*time.Second))
				}
			}
			start := time.Now()
			_, port, _ := net.SplitHostPort(seed)
			var a2 *Agent
			for a2 == nil { // the port may take a moment to be free
				if a2, err = startAgent(agentConfig{Name: "a", Bind: "127.0.0.1:" + port, Slots: 1, Key: key}); err != nil {
					if time.Since(start) > testbudget.Scale(5*time.Second) {
						t.Fatal(err)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			t.Cleanup(a2.close)
			for {
				seen := false
				for _, m := range b.cl.members() {
					seen = seen || m.Name == "a" && m.Meta.Control == a2.controlAddr()
				}
				if seen && len(a2.cl.members()) == 2 {
					break
				}
				if time.Since(start) > testbudget.Scale(10*time.Second) {
					t.Fatalf("not healed %v after the seed restarted: b sees %+v, a sees %+v", testbudget.Scale(10*time.Second), b.cl.members(), a2.cl.members())
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Logf("healed %v after the seed restarted", time.Since(start))
		})
	}
}
