package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// ring sends this rank's number around w (tag) and checks what arrives from the previous
// rank, in w's numbering.
func ring(ctx context.Context, w *runtime.World, tag int, salt int64) error {
	n, r := w.Size(), w.Rank()
	if n == 1 {
		return nil
	}
	got := []int64{-1}
	st, err := runtime.Sendrecv(ctx, w, []int64{int64(r) + salt}, (r+1)%n, tag, got, runtime.AnySource, runtime.AnyTag)
	if err != nil {
		return err
	}
	prev := (r + n - 1) % n
	if st.Source != prev || st.Tag != tag || got[0] != int64(prev)+salt {
		return fmt.Errorf("ring: %d from %d tag %d, want %d from %d tag %d", got[0], st.Source, st.Tag, int64(prev)+salt, prev, tag)
	}
	return nil
}

// TestFreeDupReuse: Dup and Free far more Worlds than there are contexts (16383 Dups
// failed "too many Worlds derived" before Free existed), each carrying messages.
func TestFreeDupReuse(t *testing.T) {
	forEach(t, []int{1, 2, 3}, func(t *testing.T, tr string, n int) {
		rounds := 17000
		if tr == "tcp" || testing.Short() {
			rounds = 600 // the reuse itself is the same; the long loop runs over shm
		}
		run(t, tr, n, func(_ context.Context, w *runtime.World) error {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Minute))
			defer cancel()
			keep, err := w.Dup() // a live World below the reused ones
			if err != nil {
				return err
			}
			for i := range rounds {
				d, err := w.Dup()
				if err != nil {
					return fmt.Errorf("round %d: %w", i, err)
				}
				if i%97 == 0 || i == rounds-1 {
					if err := ring(ctx, d, i%1000, int64(i)); err != nil {
						return fmt.Errorf("round %d: %w", i, err)
					}
				}
				if err := d.Free(); err != nil {
					return fmt.Errorf("round %d: %w", i, err)
				}
			}
			return ring(ctx, keep, 1, 7)
		})
	})
}

// TestFreeSplitReuse: Split and Free more often than Split has blocks (about 2047 Splits
// failed before), with groups of changing membership, each group used and Dup'd.
func TestFreeSplitReuse(t *testing.T) {
	forEach(t, []int{1, 3, 4}, func(t *testing.T, tr string, n int) {
		rounds := 2100
		if tr == "tcp" || testing.Short() {
			rounds = 150
		}
		run(t, tr, n, func(_ context.Context, w *runtime.World) error {
			ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Minute))
			defer cancel()
			r := w.Rank()
			for i := range rounds {
				g, err := w.Split(ctx, (r+i)%2, -r)
				if err != nil {
					return fmt.Errorf("round %d: %w", i, err)
				}
				d, err := g.Dup()
				if err != nil {
					return fmt.Errorf("round %d: %w", i, err)
				}
				if i%50 == 0 || i == rounds-1 {
					if err := ring(ctx, g, 3, int64(i)); err != nil {
						return fmt.Errorf("round %d: %w", i, err)
					}
					if err := ring(ctx, d, 4, int64(-i)); err != nil {
						return fmt.Errorf("round %d: dup: %w", i, err)
					}
				}
				if err := d.Free(); err != nil {
					return err
				}
				if err := g.Free(); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// TestFreeDiscardsStale: a message sent on a World and never received is discarded at
// Free (eager) or released (rendezvous: its sender completes), and never reaches the
// World that reuses the contexts.
func TestFreeDiscardsStale(t *testing.T) {
	forEach(t, []int{2, 3}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			r := w.Rank()
			big := make([]byte, 1<<20) // above the eager limit: a rendezvous offer
			for round := range 3 {
				d, err := w.Dup()
				if err != nil {
					return err
				}
				if r == 0 {
					if err := runtime.Send(ctx, d, []int64{-1}, 1, 9); err != nil {
						return err
					}
					req, err := runtime.Isend(d, big, 1, 10)
					if err != nil {
						return err
					}
					// The offer is released when rank 1 frees the World (or when it
					// arrives there after that): the send completes without being read.
					if _, err := req.Wait(ctx); err != nil {
						return fmt.Errorf("round %d: stale rendezvous send: %w", round, err)
					}
				}
				if r == 1 && round == 1 {
					// Let the messages arrive before Free, this round; in the others
					// they may arrive before or after.
					if _, err := runtime.Probe(ctx, d, 0, 10); err != nil {
						return err
					}
				}
				if err := d.Free(); err != nil {
					return fmt.Errorf("round %d: %w", round, err)
				}
				// The next Dup reuses d's contexts: only its own messages arrive on it.
				d2, err := w.Dup()
				if err != nil {
					return err
				}
				if r == 0 {
					if err := runtime.Send(ctx, d2, []int64{int64(100 + round)}, 1, 11); err != nil {
						return err
					}
				}
				if r == 1 {
					got := []int64{0}
					st, err := runtime.Recv(ctx, d2, got, runtime.AnySource, runtime.AnyTag)
					if err != nil {
						return err
					}
					if st.Tag != 11 || got[0] != int64(100+round) {
						return fmt.Errorf("round %d: the reused World received tag %d value %d: a stale message of the freed one", round, st.Tag, got[0])
					}
					if ok, st, err := runtime.Iprobe(d2, runtime.AnySource, runtime.AnyTag); err != nil || ok {
						return fmt.Errorf("round %d: a further message on the reused World: %v %+v %v", round, ok, st, err)
					}
				}
				if err := runtime.Barrier(ctx, d2); err != nil {
					return err
				}
				if err := d2.Free(); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// TestFreeErrors: what cannot be freed, a receive under way completing after Free,
// and every call on a freed World (and its sibling) failing with ErrInvalid.
func TestFreeErrors(t *testing.T) {
	run(t, "shm", 2, func(ctx context.Context, w *runtime.World) error {
		wantInvalid := func(what string, err error, frag string) error {
			if !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), frag) {
				return fmt.Errorf("%s: %v, want ErrInvalid mentioning %q", what, err, frag)
			}
			return nil
		}
		if err := wantInvalid("Free of Init's World", w.Free(), "Init's World"); err != nil {
			return err
		}
		var nilW *runtime.World
		if err := wantInvalid("Free of nil", nilW.Free(), "nil World"); err != nil {
			return err
		}
		d, err := w.Dup()
		if err != nil {
			return err
		}
		sib, err := substrate.Sibling(d)
		if err != nil {
			return err
		}
		if err := wantInvalid("Free of a sibling", sib.Free(), "sibling"); err != nil {
			return err
		}

		// A receive posted when Free is called completes normally (MPI_Comm_free): rank
		// 0 frees the World with its receive posted, then rank 1 sends on it and frees it.
		r := d.Rank()
		buf := []int64{0}
		ran := 0
		if err := substrate.OnFree(d, func() { ran++ }); err != nil {
			return err
		}
		if r == 0 {
			req, err := runtime.Irecv(d, buf, 1, 3)
			if err != nil {
				return err
			}
			if err := d.Free(); err != nil {
				return fmt.Errorf("Free with a receive posted: %w", err)
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if _, err := req.Wait(ctx); err != nil || buf[0] != 5 {
				return fmt.Errorf("receive posted before Free: %v %v", buf, err)
			}
		} else {
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if err := runtime.Send(ctx, d, []int64{5}, 0, 3); err != nil {
				return err
			}
			if err := d.Free(); err != nil {
				return err
			}
		}
		if ran != 1 {
			return fmt.Errorf("OnFree function ran %d times", ran)
		}
		if err := wantInvalid("second Free", d.Free(), "freed already"); err != nil {
			return err
		}

		// Every call on the freed World and its sibling.
		_, _, ipErr := runtime.Iprobe(d, 0, 0)
		calls := map[string]error{
			"Send":         runtime.Send(ctx, d, buf, 0, 0),
			"Barrier":      runtime.Barrier(ctx, d),
			"sibling Send": runtime.Send(ctx, sib, buf, 0, 0),
			"Iprobe":       ipErr,
			"OnFree":       substrate.OnFree(d, func() {}),
			"Revoke":       d.Revoke(),
		}
		_, calls["Recv"] = runtime.Recv(ctx, d, buf, 0, 0)
		_, calls["Isend"] = runtime.Isend(d, buf, 0, 0)
		_, calls["Irecv"] = runtime.Irecv(d, buf, 0, 0)
		_, calls["Probe"] = runtime.Probe(ctx, d, 0, 0)
		_, calls["Sendrecv"] = runtime.Sendrecv(ctx, d, buf, 0, 0, buf, 0, 0)
		_, calls["Dup"] = d.Dup()
		_, calls["Sibling"] = substrate.Sibling(d)
		_, calls["Split"] = d.Split(ctx, 0, 0)
		_, calls["sibling Recv"] = runtime.Recv(ctx, sib, buf, 0, 0)
		_, calls["Attach"] = substrate.Attach(d, 1-r, nil)
		_, calls["Agree"] = d.Agree(ctx, 1)
		_, calls["Shrink"] = d.Shrink(ctx)
		for name, err := range calls {
			if err := wantInvalid(name+" on a freed World", err, "freed"); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestFreedErr: FreedErr reports a freed World and its sibling, and only those.
func TestFreedErr(t *testing.T) {
	run(t, "shm", 1, func(ctx context.Context, w *runtime.World) error {
		d, err := w.Dup()
		if err != nil {
			return err
		}
		sib, err := substrate.Sibling(d)
		if err != nil {
			return err
		}
		if substrate.FreedErr(w) != nil || substrate.FreedErr(d) != nil || substrate.FreedErr(sib) != nil {
			return errors.New("FreedErr before Free")
		}
		if err := d.Free(); err != nil {
			return err
		}
		if !errors.Is(substrate.FreedErr(d), runtime.ErrInvalid) || !errors.Is(substrate.FreedErr(sib), runtime.ErrInvalid) || substrate.FreedErr(w) != nil {
			return fmt.Errorf("FreedErr after Free: %v %v %v", substrate.FreedErr(d), substrate.FreedErr(sib), substrate.FreedErr(w))
		}
		return nil
	})
}

// TestFreeSplitReuseDisjoint: a Split block that one group freed is reused by a Split
// among that group's ranks while another group, on other ranks, still lives on the same
// block; traffic on both stays apart. A Split over all ranks passes the block over while
// any rank still uses it.
func TestFreeSplitReuseDisjoint(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			run(t, tr, 4, func(ctx context.Context, w *runtime.World) error {
				r := w.Rank()
				half := r / 2                   // 0 for ranks 0, 1; 1 for ranks 2, 3
				g, err := w.Split(ctx, half, r) // both groups on one block
				if err != nil {
					return err
				}
				if err := ring(ctx, g, 1, int64(100*half)); err != nil {
					return err
				}
				if half == 0 {
					if err := g.Free(); err != nil { // group 0 is done with the block
						return err
					}
				}
				// A World of ranks 0 and 1 only, and a Split of it: only they report, and
				// they freed the block, so it is reused while ranks 2, 3 still use it.
				sub, err := w.Split(ctx, map[bool]int{true: 0, false: runtime.NoColor}[half == 0], r)
				if err != nil {
					return err
				}
				// A Split over all four ranks must not take the block group 1 still uses.
				all, err := w.Split(ctx, 0, r)
				if err != nil {
					return err
				}
				var again *runtime.World
				if half == 0 {
					if again, err = sub.Split(ctx, 0, -r); err != nil {
						return err
					}
					if runtime.Context(again) != runtime.Context(g) {
						return fmt.Errorf("the Split among ranks 0, 1 took context %d, not %d, the block they freed (still live at ranks 2, 3)",
							runtime.Context(again), runtime.Context(g))
					}
				}
				if runtime.Context(all) == runtime.Context(g) || (sub != nil && runtime.Context(sub) == runtime.Context(g)) {
					return fmt.Errorf("a Split over ranks 2, 3 took the block they still use (%d)", runtime.Context(g))
				}
				// Traffic on all of them at once, each with its own values.
				for round := range 20 {
					if half == 0 {
						if err := ring(ctx, again, 2, int64(1000+round)); err != nil {
							return fmt.Errorf("reused block: %w", err)
						}
					} else if err := ring(ctx, g, 2, int64(2000+round)); err != nil {
						return fmt.Errorf("live group: %w", err)
					}
					if err := ring(ctx, all, 2, int64(3000+round)); err != nil {
						return fmt.Errorf("all ranks: %w", err)
					}
				}
				if half == 0 {
					if err := again.Free(); err != nil {
						return err
					}
					if err := sub.Free(); err != nil {
						return err
					}
				} else if err := g.Free(); err != nil {
					return err
				}
				return all.Free()
			})
		})
	}
}

// TestFreeLate: a World freed with a receive posted stays alive for it: the receive gets
// its message, a second message sent on the World is discarded once the receive has
// completed, and a Dup made afterwards (which may reuse the contexts) sees neither.
func TestFreeLate(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			for round := range 3 {
				d, err := w.Dup()
				if err != nil {
					return err
				}
				if w.Rank() == 0 {
					got := []int64{0}
					req, err := runtime.Irecv(d, got, 1, 3)
					if err != nil {
						return err
					}
					if err := d.Free(); err != nil {
						return fmt.Errorf("round %d: Free with a receive posted: %w", round, err)
					}
					if err := runtime.Barrier(ctx, w); err != nil {
						return err
					}
					if _, err := req.Wait(ctx); err != nil || got[0] != 5 {
						return fmt.Errorf("round %d: the receive posted before Free got %v, %v", round, got, err)
					}
				} else {
					if err := runtime.Barrier(ctx, w); err != nil {
						return err
					}
					for _, v := range []int64{5, 6} { // 6 is never received
						if err := runtime.Send(ctx, d, []int64{v}, 0, 3); err != nil {
							return err
						}
					}
					if err := d.Free(); err != nil {
						return err
					}
				}
				e, err := w.Dup()
				if err != nil {
					return err
				}
				if w.Rank() == 0 {
					got := []int64{0}
					st, err := runtime.Recv(ctx, e, got, runtime.AnySource, runtime.AnyTag)
					if err != nil || got[0] != 7 || st.Tag != 4 {
						return fmt.Errorf("round %d: the Dup after the freed World received %v (tag %d), %v; want 7 with tag 4", round, got, st.Tag, err)
					}
				} else if err := runtime.Send(ctx, e, []int64{7}, 0, 4); err != nil {
					return err
				}
				if err := e.Free(); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// TestFreeReuseFamily: a World made by Split, and an intercommunicator, can be Dup'ed
// and freed far more often than their blocks have room for Worlds alive at once: a Dup
// takes a freed World's contexts. A Dup freed with a receive still posted at one rank
// (released when the receive completes) is reused only after that, so the receive gets
// its own message and the new World's messages stay apart.
func TestFreeReuseFamily(t *testing.T) {
	forEach(t, []int{4}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			half, err := w.Split(ctx, w.Rank()%2, w.Rank())
			if err != nil {
				return err
			}
			ic, err := half.CreateIntercomm(ctx, 0, w, 1-w.Rank()%2, 5)
			if err != nil {
				return err
			}
			for _, c := range []*runtime.World{half, ic} {
				for round := range 20 {
					d, err := c.Dup()
					if err != nil {
						return fmt.Errorf("round %d: %w", round, err)
					}
					// Rank 0 posts a receive from rank 1 (on an intercommunicator: each
					// group's rank 0 from the other's) and frees d with it posted; the
					// message is sent before its sender's Free.
					var req *runtime.Request
					got := []int64{-1}
					from, to := 1, -1
					switch {
					case d.IsInter() && d.Rank() == 0:
						from, to = 0, 0
					case !d.IsInter() && d.Rank() == 1:
						to = 0
					}
					if d.Rank() == 0 {
						if req, err = runtime.Irecv(d, got, from, 7); err != nil {
							return err
						}
					}
					if to >= 0 {
						if err := runtime.Send(ctx, d, []int64{int64(round)}, to, 7); err != nil {
							return err
						}
					}
					if err := d.Free(); err != nil {
						return err
					}
					if req != nil {
						if _, err := req.Wait(ctx); err != nil || got[0] != int64(round) {
							return fmt.Errorf("round %d: the receive posted before Free got %d, %v", round, got[0], err)
						}
					}
				}
				if err := runtime.Barrier(ctx, c); err != nil {
					return err
				}
			}
			return errors.Join(ic.Free(), half.Free())
		})
	})
}
