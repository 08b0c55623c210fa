package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// TestAllocHostRegion: a host-local region is mapped by the rank on the same host, which
// sees its bytes, and a rank on another host (over tcp) cannot attach it: the error says
// the description has no tcp key. A rank without a shared-memory device cannot make one.
func TestAllocHostRegion(t *testing.T) {
	opt := runtimetest.Options{Hosts: []string{"a", "a", "b"}, Timeout: 30 * time.Second}
	runtimetest.Run(t, 3, opt, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
		defer cancel()
		desc := make([]byte, 256) // the owner's description: DescLen of its two devices
		if w.Rank() == 0 {
			r, err := substrate.AllocHostRegion(w, 4096)
			if err != nil {
				return err
			}
			defer r.Free()
			copy(r.Bytes(), "host-local")
			for peer := 1; peer <= 2; peer++ {
				if err := runtime.Send(ctx, w, r.AppendDesc(nil), peer, 1); err != nil {
					return err
				}
			}
			return runtime.Barrier(ctx, w)
		}
		st, err := runtime.Recv(ctx, w, desc, 0, 1)
		if err != nil {
			return err
		}
		rm, err := substrate.Attach(w, 0, desc[:st.Bytes])
		switch w.Rank() {
		case 1:
			if err != nil {
				return fmt.Errorf("the rank on the same host: %w", err)
			}
			if got := string(rm.Mapped()[:10]); got != "host-local" {
				return fmt.Errorf("the rank on the same host maps %q", got)
			}
			rm.Close()
		case 2:
			if err == nil || !errors.Is(err, runtime.ErrTransport) || !strings.Contains(err.Error(), "no tcp key") {
				return fmt.Errorf("the rank on another host attached a host-local region: %v", err)
			}
		}
		return runtime.Barrier(ctx, w)
	})
	runtimetest.Run(t, 2, runtimetest.Options{Transport: "tcp", Timeout: 30 * time.Second}, func(w *runtime.World) error {
		if _, err := substrate.AllocHostRegion(w, 64); !errors.Is(err, runtime.ErrTransport) || !strings.Contains(err.Error(), "shared-memory") {
			return fmt.Errorf("a tcp-only rank made a host-local region: %v", err)
		}
		return nil
	})
}

// TestRegionOnRemoteAtomic: a region's OnRemoteAtomic runs after each atomic that a peer
// over tcp makes on it, once the word changed, and no longer once removed; a peer on the
// same host (shm) changes the word with its own atomics, and nothing runs at the owner.
func TestRegionOnRemoteAtomic(t *testing.T) {
	// The steps, a Barrier after each: rank adds add to the owner's word (rank 0: checks).
	steps := []struct {
		rank int
		add  uint64
	}{{1, 1}, {2, 10}, {0, 0}, {2, 100}}
	opt := runtimetest.Options{Hosts: []string{"a", "a", "b"}, Timeout: 30 * time.Second}
	runtimetest.Run(t, 3, opt, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
		defer cancel()
		if w.Rank() != 0 {
			rm, c, done, err := attachFrom(ctx, w, 0)
			if err != nil {
				return err
			}
			defer done()
			res := make([]byte, 8)
			for _, s := range steps {
				if s.rank == w.Rank() {
					if err := rm.FetchAdd(c, 8, s.add, res); err != nil {
						return err
					}
					if err := c.Wait(ctx); err != nil {
						return err
					}
				}
				if err := runtime.Barrier(ctx, w); err != nil {
					return err
				}
			}
			return nil
		}
		r, err := substrate.AllocRegion(w, 64)
		if err != nil {
			return err
		}
		defer r.Free()
		word := (*atomic.Uint64)(unsafe.Pointer(&r.Bytes()[8]))
		word.Store(0)
		seen := make(chan uint64, 16)
		r.OnRemoteAtomic(func() { seen <- word.Load() })
		for peer := 1; peer <= 2; peer++ {
			if err := runtime.Send(ctx, w, r.AppendDesc(nil), peer, 1); err != nil {
				return err
			}
		}
		for i := range steps {
			if i == 2 { // after rank 1's (shm) and rank 2's (tcp) adds
				select {
				case v := <-seen:
					if v != 11 {
						return fmt.Errorf("the hook saw %d, want 11", v)
					}
				case <-ctx.Done():
					return errors.New("the hook did not run for the tcp peer's atomic")
				}
				r.OnRemoteAtomic(nil) // before rank 2 adds 100
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
		}
		if v := word.Load(); v != 111 || len(seen) != 0 {
			return fmt.Errorf("word %d (want 111), %d more hook calls (want none: removed, and shm calls none)", v, len(seen))
		}
		return nil
	})
}

// TestPollPeers: a rank that waits for a word of its region outside the runtime, calling
// only PollPeers in its spin, sees every remote atomic of a peer over tcp land: the
// requests are served by the spin (a connection a wait left idle) or by the connection's
// goroutine, never stranded. On a rank with no tcp, PollPeers serves nothing.
func TestPollPeers(t *testing.T) {
	for _, transport := range []string{"tcp", "shm"} {
		t.Run(transport, func(t *testing.T) {
			const adds = 200
			runtimetest.Run(t, 2, runtimetest.Options{Transport: transport}, func(w *runtime.World) error {
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
				defer cancel()
				if w.Rank() == 1 {
					rm, c, done, err := attachFrom(ctx, w, 0)
					if err != nil {
						return err
					}
					defer done()
					res := make([]byte, 8)
					for range adds {
						if err := rm.FetchAdd(c, 0, 1, res); err != nil {
							return err
						}
						if err := c.Wait(ctx); err != nil {
							return err
						}
					}
					return runtime.Barrier(ctx, w)
				}
				r, err := substrate.AllocRegion(w, 64)
				if err != nil {
					return err
				}
				defer r.Free()
				word := (*atomic.Uint64)(unsafe.Pointer(&r.Bytes()[0]))
				word.Store(0)
				if err := runtime.Send(ctx, w, r.AppendDesc(nil), 1, 1); err != nil {
					return err
				}
				served := 0
				for word.Load() != adds {
					if ctx.Err() != nil {
						return fmt.Errorf("the word reached %d of %d: a peer's atomic was stranded", word.Load(), adds)
					}
					if substrate.PollPeers(w) {
						served++
					}
				}
				if transport == "shm" && served != 0 {
					return fmt.Errorf("PollPeers served %d times on a rank without tcp", served)
				}
				t.Logf("%s: %d of %d adds found by PollPeers", transport, served, adds)
				return runtime.Barrier(ctx, w)
			})
		})
	}
}
