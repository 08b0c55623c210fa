package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
)

// ringAndFinalize sends a token around the ranks' ring, runs a Barrier, and finalizes
// every World concurrently.
func ringAndFinalize(t *testing.T, ctx context.Context, worlds []*World) {
	t.Helper()
	n := len(worlds)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r, w := range worlds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = func() error {
				next, prev := (r+1)%n, (r+n-1)%n
				if err := Send(ctx, w, []int64{int64(r)}, next, 7); err != nil {
					return err
				}
				got := []int64{-1}
				if _, err := Recv(ctx, w, got, prev, 7); err != nil {
					return err
				}
				if got[0] != int64(prev) {
					return fmt.Errorf("got %d from rank %d", got[0], prev)
				}
				if err := Barrier(ctx, w); err != nil {
					return err
				}
				return w.Finalize(ctx)
			}()
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// checkTransports checks every rank's transport to every other against want(a, b), and
// that TransportBetween agrees everywhere.
func checkTransports(t *testing.T, worlds []*World, want func(a, b int) string) {
	t.Helper()
	for a, w := range worlds {
		for b := range worlds {
			if a == b {
				continue
			}
			if got := w.Transport(b); got != want(a, b) {
				t.Errorf("rank %d reaches rank %d over %q, want %q", a, b, got, want(a, b))
			}
			for c := range worlds {
				if got := (*subWorld)(worlds[c]).TransportBetween(a, b); c != a && got != want(a, b) {
					t.Errorf("rank %d says rank %d reaches rank %d over %q, want %q", c, a, b, got, want(a, b))
				}
			}
		}
	}
}

func wantFences(t *testing.T, pm testPM, n int, when string) {
	t.Helper()
	for r, got := range pm.barrierCounts() {
		if got != n {
			t.Errorf("rank %d entered %d PMI barriers %s, want %d", r, got, when, n)
		}
	}
}

// TestForeignOneNode: four ranks that PMI_process_mapping puts on one node connect over
// shm with one PMI barrier at Init (and one at Finalize).
func TestForeignOneNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	pm := newAgentPM(t, 4, "(vector,(0,1,4))")
	worlds := startFake(t, ctx, pm, make([]string, 4))
	wantFences(t, pm, 1, "in Init")
	for r, w := range worlds {
		if w.Rank() != r || w.Size() != 4 || w.LocalSize() != 4 || w.LocalRank() != r {
			t.Errorf("rank %d: World rank %d size %d, local %d of %d", r, w.Rank(), w.Size(), w.LocalRank(), w.LocalSize())
		}
	}
	checkTransports(t, worlds, func(a, b int) string { return "shm" })
	ringAndFinalize(t, ctx, worlds)
	wantFences(t, pm, 2, "after Finalize")
}

// TestForeignPutsPerRank: at 64 ranks on one node a rank still joins with one PMI put
// (values of at most vallen_max, 1024 here), one fence and at most three gets, and holds
// no connection when Init returns.
func TestForeignPutsPerRank(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	const n = 64
	pm := newAgentPM(t, n, fmt.Sprintf("(vector,(0,1,%d))", n))
	worlds := startFake(t, ctx, pm, make([]string, n))
	wantFences(t, pm, 1, "in Init")
	puts := pm.putCounts()
	t.Logf("PMI puts by rank: %v", puts)
	for r, p := range puts {
		if p != 1 {
			t.Errorf("rank %d made %d PMI puts at Init, want 1", r, p)
		}
	}
	if got := pm.getCount(); got > 3*n {
		t.Errorf("the ranks made %d PMI gets at Init, want at most %d", got, 3*n)
	}
	for r, w := range worlds {
		if c := (*subWorld)(w).Connections(); c != 0 {
			t.Errorf("rank %d holds %d connections after Init, want 0", r, c)
		}
	}
	ringAndFinalize(t, ctx, worlds)
}

// TestForeignPlacement: where PMI_process_mapping and the ranks' cards put the ranks,
// which transport each pair uses, and what Init costs. A rank's host stands for its host
// identity (its card): ranks with the same host use shm, the others tcp. Init fences
// once, on one node or several; with a map it makes at most two PMI gets (rank 0's value,
// the map) plus one for its node's first rank's card, and without one it reads every
// card.
func TestForeignPlacement(t *testing.T) {
	for _, tc := range []struct {
		name, mapping string
		hosts         []string
		maxGets       int // PMI gets of the whole job at Init
	}{
		{"two nodes", "(vector,(0,2,2))", []string{"a", "a", "b", "b"}, 3 * 4},
		{"one per node", "(vector,(0,3,1))", []string{"a", "b", "c"}, 3 * 3},
		{"no map", "", []string{"a", "a", "b"}, 3 * 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
			defer cancel()
			pm := newAgentPM(t, len(tc.hosts), tc.mapping)
			worlds := startFake(t, ctx, pm, tc.hosts)
			wantFences(t, pm, 1, "in Init")
			if got := pm.getCount(); got > tc.maxGets {
				t.Errorf("the ranks made %d PMI gets at Init, want at most %d", got, tc.maxGets)
			}
			checkTransports(t, worlds, func(a, b int) string {
				if tc.hosts[a] == tc.hosts[b] {
					return "shm"
				}
				return "tcp"
			})
			for r, w := range worlds {
				local := 0
				for _, h := range tc.hosts {
					if h == tc.hosts[r] {
						local++
					}
				}
				if w.LocalSize() != local {
					t.Errorf("rank %d's local size %d, want %d", r, w.LocalSize(), local)
				}
			}
			ringAndFinalize(t, ctx, worlds)
		})
	}
}

// TestForeignMapContradicted: a map that puts on one node ranks whose cards cannot share
// memory fails Init at a rank that sees it (comparing its card with its node's first
// rank's), with an error that names the map and the rank; that rank's PMI abort ends
// the job.
func TestForeignMapContradicted(t *testing.T) {
	for _, tc := range []struct {
		name, mapping string
		hosts         []string
		bad, leader   int // the rank that fails, and its node's first rank
	}{
		{"map splits a node the cards split further", "(vector,(0,2,2))", []string{"a", "a", "b", "c"}, 3, 2},
		{"map says one node, a card says another host", "(vector,(0,1,4))", []string{"a", "a", "a", "b"}, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
			defer cancel()
			pm := newAgentPM(t, len(tc.hosts), tc.mapping)
			worlds := make([]*World, len(tc.hosts))
			errs := make([]error, len(tc.hosts))
			var wg sync.WaitGroup
			for r := range tc.hosts {
				env := pm.connect(r, nil)
				wg.Add(1)
				go func() {
					defer wg.Done()
					worlds[r], errs[r] = initWith(ctx, options{getenv: func(k string) string { return env[k] }, hostSalt: tc.hosts[r], exit: func(int) {}})
				}()
			}
			wg.Wait()
			for r, err := range errs {
				if r != tc.bad {
					if err != nil {
						t.Errorf("rank %d: %v", r, err)
					}
					continue
				}
				if err == nil {
					t.Fatalf("rank %d: Init succeeded", r)
				}
				for _, want := range []string{"PMI_process_mapping", fmt.Sprintf("rank %d", tc.leader), "share memory"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("rank %d's error %q does not say %q", r, err, want)
					}
				}
			}
			for deadline := time.Now().Add(testbudget.Scale(10 * time.Second)); !pm.aborted(); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the failing rank did not abort the job")
				}
			}
			for _, w := range worlds {
				if w != nil { // as the process manager ends them
					w.e.shutdown()
					w.e.pm.Close()
				}
			}
		})
	}
}

// TestForeignWorldOfOne: a one-rank job under a PMI server.
func TestForeignWorldOfOne(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	pm := newAgentPM(t, 1, "(vector,(0,1,1))")
	worlds := startFake(t, ctx, pm, []string{""})
	if worlds[0].Size() != 1 {
		t.Fatalf("size %d", worlds[0].Size())
	}
	ringAndFinalize(t, ctx, worlds)
}

// initBad runs Init for rank 0 of pm with the extra environment, bounded by a context
// of d scaled by the test slack, and returns its error; it fails the test if Init
// succeeds or outlives the context by far (a hang).
func initBad(t *testing.T, pm *fakePM, extra map[string]string, d time.Duration) error {
	t.Helper()
	env := pm.connect(0, extra)
	d = testbudget.Scale(d)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		w, err := initWith(ctx, options{getenv: func(k string) string { return env[k] }, exit: func(int) {}})
		if err == nil {
			w.Finalize(ctx)
			err = errors.New("Init succeeded")
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(d + testbudget.Scale(30*time.Second)):
		t.Fatalf("Init did not return within its context (%v) and %v more", d, testbudget.Scale(30*time.Second))
		return nil
	}
}

// wantErr checks that err names PMI and every one of words.
func wantErr(t *testing.T, err error, words ...string) {
	t.Helper()
	if err == nil || err.Error() == "Init succeeded" {
		t.Fatalf("Init: %v, want an error", err)
	}
	t.Logf("Init: %v", err)
	for _, w := range append([]string{"PMI"}, words...) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Init's error %q does not name %q", err, w)
		}
	}
}

// TestForeignBadServer: a PMI server that answers garbage, closes the connection in the
// fence, never answers, or disagrees with PMI_SIZE makes Init fail, naming PMI and what
// was wrong, within its context.
func TestForeignBadServer(t *testing.T) {
	t.Run("garbage", func(t *testing.T) {
		pm := newFakePM(t, 2, "(vector,(0,1,2))")
		pm.onLine = func(int, string, map[string]string) (string, bool, bool) {
			return "\x00\x01 this is not PMI \xff\n", true, false
		}
		wantErr(t, initBad(t, pm, nil, 5*time.Second))
	})
	t.Run("close-in-fence", func(t *testing.T) {
		pm := newFakePM(t, 2, "(vector,(0,1,2))")
		pm.onLine = func(_ int, cmd string, _ map[string]string) (string, bool, bool) {
			return "", false, cmd == "barrier_in"
		}
		err := initBad(t, pm, nil, 5*time.Second)
		wantErr(t, err, "fence")
	})
	t.Run("silent", func(t *testing.T) {
		pm := newFakePM(t, 2, "(vector,(0,1,2))")
		pm.onLine = func(int, string, map[string]string) (string, bool, bool) { return "", true, false }
		err := initBad(t, pm, nil, 2*time.Second)
		wantErr(t, err)
		// The session's socket deadline is the context's, and may fire first.
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("Init's error %q wraps neither the context's nor the socket deadline's", err)
		}
	})
	t.Run("short-size", func(t *testing.T) {
		// PMI_SIZE says 3; the server's process map places 4 ranks.
		pm := newFakePM(t, 4, "(vector,(0,1,4))")
		err := initBad(t, pm, map[string]string{"PMI_SIZE": "3"}, 5*time.Second)
		wantErr(t, err, "PMI_SIZE")
	})
	t.Run("short-size-pmi2", func(t *testing.T) {
		pm := newFakePM(t, 4, "")
		pm.onLine = pmi2Fullinit(4)
		err := initBad(t, pm, map[string]string{"PMI_SIZE": "3", "GORMA_PMI": "2"}, 5*time.Second)
		wantErr(t, err, "PMI_SIZE=3")
	})
}

// pmi2Fullinit answers a PMI-2 client's init line and fullinit frame with a job of size
// ranks (Slurm's answer), and nothing else.
func pmi2Fullinit(size int) func(int, string, map[string]string) (string, bool, bool) {
	return func(rank int, cmd string, kv map[string]string) (string, bool, bool) {
		if cmd == "init" {
			return "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n", true, false
		}
		body := fmt.Sprintf("cmd=fullinit-response;pmi-version=2;pmi-subversion=0;rank=%d;size=%d;appnum=0;debugged=FALSE;pmiverbose=FALSE;rc=0;", rank, size)
		return fmt.Sprintf("%-6d%s", len(body), body), true, false
	}
}

// TestWireRoundTrip: a wire value keeps the card and the secret; junk fails with
// errPMIValue and never panics.
func TestWireRoundTrip(t *testing.T) {
	for _, secret := range [][]byte{nil, []byte("secret")} {
		b := encodeWire([]byte("card"), secret)
		w, err := decodeWire(b)
		if err != nil || string(w.card) != "card" || !slices.Equal(w.secret, secret) {
			t.Errorf("decode: %+v, %v", w, err)
		}
		for i := range len(b) {
			if _, err := decodeWire(b[:i]); err == nil || !errors.Is(err, errPMIValue) {
				t.Errorf("decode of %d of %d bytes: %v", i, len(b), err)
			}
		}
		if _, err := decodeWire(append(b, 0)); err == nil || !errors.Is(err, errPMIValue) {
			t.Errorf("decode with a trailing byte: %v", err)
		}
	}
}

// FuzzDecodeWire: a value under a gorma PMI key never makes decodeWire panic, and what
// it accepts survives encoding and decoding again.
func FuzzDecodeWire(f *testing.F) {
	f.Add(encodeWire([]byte("card"), []byte("secret")))
	f.Add([]byte("GRMW\x02\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := decodeWire(b)
		if err != nil {
			return
		}
		again, err := decodeWire(encodeWire(w.card, w.secret))
		if err != nil || !bytes.Equal(again.card, w.card) || !bytes.Equal(again.secret, w.secret) {
			t.Fatalf("%x decodes to %+v, which does not survive a round trip: %+v, %v", b, w, again, err)
		}
	})
}

// TestForeignContractFirst: golaunch's contract wins over a PMI server in the same
// environment (golaunch gives its ranks PMI_FD too, for MPI programs): a broken
// contract is reported as such, and the PMI server hears nothing.
func TestForeignContractFirst(t *testing.T) {
	pm := newFakePM(t, 2, "(vector,(0,1,2))")
	heard := make(chan string, 1)
	pm.onLine = func(_ int, cmd string, _ map[string]string) (string, bool, bool) {
		select {
		case heard <- cmd:
		default:
		}
		return "", false, false
	}
	err := initBad(t, pm, map[string]string{"GOLAUNCH_RANK": "0"}, 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "GOLAUNCH_") {
		t.Errorf("Init: %v, want the launch contract's error", err)
	}
	select {
	case cmd := <-heard:
		t.Errorf("the PMI server heard cmd=%s", cmd)
	default:
	}
}
