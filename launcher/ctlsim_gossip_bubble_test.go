package launcher

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestGossipBubble runs the gossip simulation (ctlsim_gossip_test.go) in a synctest
// bubble. Virtual time stands still while any member computes, so no member misses a
// probe deadline however many share the machine's processors, and the race detector's
// slowdown changes nothing but the wall time. The network model gives every packet a
// one-way delay of gossipBubbleDelay, and a chance of loss where asked.
//
// It checks the protocol's outcomes: every member list becomes whole, every live member
// declares the member cut off dead, and no live member is declared dead without loss.
// The sizes and loss rates come from GORMA_GOSSIP_SIZES and GORMA_GOSSIP_LOSS (comma
// lists; 20 members and no loss by default), and each case logs its figures:
//
//	GORMA_GOSSIP_SIZES=100,1000 GORMA_GOSSIP_LOSS=0,0.01 \
//	    go test -run '^TestGossipBubble$' -v -timeout 0 ./launcher
func TestGossipBubble(t *testing.T) {
	sizes, err := envList("GORMA_GOSSIP_SIZES", []int{20}, "integers of at least 2", func(f string) (int, bool) {
		k, err := strconv.Atoi(f)
		return k, err == nil && k >= 2
	})
	if err != nil {
		t.Fatal(err)
	}
	losses, err := envList("GORMA_GOSSIP_LOSS", []float64{0}, "fractions from 0 up to 1", func(f string) (float64, bool) {
		x, err := strconv.ParseFloat(f, 64)
		return x, err == nil && x >= 0 && x < 1
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range sizes {
		for _, loss := range losses {
			t.Run(fmt.Sprintf("members=%d/loss=%g", n, loss), func(t *testing.T) {
				var res *gossipResult
				start := time.Now()
				synctest.Test(t, func(t *testing.T) {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // virtual time
					defer cancel()
					var err error
					res, err = runGossipSim(ctx, gossipSim{n: n, scale: 1, window: 5 * time.Second,
						delay: gossipBubbleDelay, loss: loss})
					// A member's probe in flight outlives its Shutdown until its timers fire.
					time.Sleep(time.Minute)
					if err != nil {
						t.Fatal(err)
					}
				})
				if res == nil {
					return
				}
				wall := time.Since(start)
				t.Logf("members %d, loss %g: join %v, converge %v, first verdict %v, all %v; "+
					"false suspicions %d, false verdicts %d; per member %.1f packets/s, %.0f B/s, %.2f streams/s; "+
					"%d packets dropped or lost; wall %v",
					n, loss, res.Join, res.Converge, res.Detect, res.Spread,
					res.FalseSuspicions, res.FalseVerdicts, res.PacketsPerSec, res.BytesPerSec, res.StreamsPerSec,
					res.Dropped, wall.Round(time.Millisecond))
				if res.Detect <= 0 || res.Spread < res.Detect {
					t.Errorf("detection %v, spread %v", res.Detect, res.Spread)
				}
				if loss == 0 && res.FalseVerdicts > 0 {
					t.Errorf("%d death verdicts on live members, with no packet lost and no member late", res.FalseVerdicts)
				}
			})
		}
	}
}

// gossipBubbleDelay is a packet's one-way delay in the bubble: a loaded data-centre LAN.
const gossipBubbleDelay = time.Millisecond

// envList reads a comma list from the environment variable name with parse, which
// refuses a bad element; def when the variable is unset.
func envList[T any](name string, def []T, want string, parse func(string) (T, bool)) ([]T, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	var out []T
	for _, f := range strings.Split(v, ",") {
		x, ok := parse(strings.TrimSpace(f))
		if !ok {
			return nil, fmt.Errorf("%s=%q: want a comma list of %s", name, v, want)
		}
		out = append(out, x)
	}
	return out, nil
}
