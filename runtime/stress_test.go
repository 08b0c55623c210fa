package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// Adversarial tests of the point-to-point layer: more outstanding operations than slots,
// credits or fast box cells, in both directions at once; sizes at the fast box and eager
// limits; wildcards mixed with rendezvous offers and truncation; sends to self;
// cancellation; Dup'd worlds. Every message carries a payload derived from its identity,
// so a message delivered to the wrong receive, out of order or damaged is seen.

// fbLimit is the largest message a fast box carries (fastbox.go).
const fbLimit = 4096

// stamp fills b with bytes derived from id (and position): messages with different ids
// differ in every byte position with overwhelming likelihood.
func stamp(b []byte, id int) {
	x := uint32(id)*2654435761 + 0x9e3779b9
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
}

func checkStamp(b []byte, id int) error {
	x := uint32(id)*2654435761 + 0x9e3779b9
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		if b[i] != byte(x) {
			return fmt.Errorf("byte %d of %d is %#x, want %#x (message id %d)", i, len(b), b[i], byte(x), id)
		}
	}
	return nil
}

// stampBig is stamp for large buffers, cheap under the race detector: a stamped block of
// a prime length, repeated (so that a shifted copy still shows).
func stampBig(b []byte, id int) {
	blk := make([]byte, min(len(b), bigBlock))
	stamp(blk, id)
	for i := 0; i < len(b); i += len(blk) {
		copy(b[i:], blk)
	}
}

func checkStampBig(b []byte, id int) error {
	blk := make([]byte, min(len(b), bigBlock))
	stamp(blk, id)
	for i := 0; i < len(b); i += len(blk) {
		seg := b[i:min(i+len(blk), len(b))]
		if !bytes.Equal(seg, blk[:len(seg)]) {
			return fmt.Errorf("bytes %d..%d of %d differ (message id %d): %w", i, i+len(seg), len(b), id, checkStamp(seg, id))
		}
	}
	return nil
}

const bigBlock = 65521

// eagerLimit is the default eager limit towards rank r (the receiver's, same config).
func eagerLimit(w *runtime.World, r int) int {
	if w.Transport(r) == "tcp" {
		return runtime.DefaultEagerTCP
	}
	return runtime.DefaultEagerSHM
}

// limitSizes are message sizes around the fast box and eager limits, plus rendezvous.
func limitSizes(lim int) []int {
	return []int{0, 1, fbLimit - 1, fbLimit, fbLimit + 1, 4096, lim - 1, lim, lim + 1, 2*lim + 13, 0, 8}
}

func runEnv(t *testing.T, tr string, n int, env map[string]string, f func(ctx context.Context, w *runtime.World) error) {
	t.Helper()
	runtimetest.Run(t, n, runtimetest.Options{Transport: tr, Env: env, Timeout: 30 * time.Second}, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
		defer cancel()
		return f(ctx, w)
	})
}

// waitAll waits for every request and returns the first error, naming its index.
func waitAll(ctx context.Context, reqs []*runtime.Request) error {
	for i, r := range reqs {
		if _, err := r.Wait(ctx); err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
	}
	return nil
}

// floodBothWays has both ranks Isend count messages to each other at once (more than
// the send slots, receive slots and fast box cells), sizes cycling over the limits, tags
// cycling over four, with half the receives posted before the sends and half after, by
// named source and by AnySource. The j-th receive of a tag must get the j-th message of
// that tag.
func floodBothWays(ctx context.Context, w *runtime.World, count int, sizes []int) error {
	peer := 1 - w.Rank()
	const tags = 4
	id := func(src, i int) int { return src<<20 | i }
	sizeOf := func(i int) int { return sizes[(i/tags)%len(sizes)] } // every tag sees every size
	maxSize := 0
	for _, s := range sizes {
		maxSize = max(maxSize, s)
	}
	in := make([][]byte, count)
	recvs := make([]*runtime.Request, count)
	post := func(i int) error {
		in[i] = make([]byte, sizeOf(i)+i%3) // some buffers longer than the message
		src := peer
		if i%5 == 2 {
			src = runtime.AnySource
		}
		r, err := runtime.Irecv(w, in[i], src, i%tags)
		recvs[i] = r
		return err
	}
	for i := 0; i < count/2; i++ {
		if err := post(i); err != nil {
			return err
		}
	}
	sends := make([]*runtime.Request, count)
	for i := range count {
		b := make([]byte, sizeOf(i))
		stamp(b, id(w.Rank(), i))
		r, err := runtime.Isend(w, b, peer, i%tags)
		if err != nil {
			return err
		}
		sends[i] = r
	}
	for i := count / 2; i < count; i++ {
		if err := post(i); err != nil {
			return err
		}
	}
	for i, r := range recvs {
		st, err := r.Wait(ctx)
		if err != nil {
			return fmt.Errorf("receive %d: %w", i, err)
		}
		if st.Source != peer || st.Tag != i%tags || st.Bytes != sizeOf(i) {
			return fmt.Errorf("receive %d (tag %d, %d bytes): status %+v", i, i%tags, sizeOf(i), st)
		}
		if err := checkStamp(in[i][:st.Bytes], id(peer, i)); err != nil {
			return fmt.Errorf("receive %d: %w", i, err)
		}
	}
	if err := waitAll(ctx, sends); err != nil {
		return err
	}
	// Progress is weak (doc.go): a rank whose requests are all complete may still hold a
	// FIN for its peer's last rendezvous send in its out queue, to be sent on its next
	// runtime call. Stay in the runtime until both ranks are done.
	return runtime.Barrier(ctx, w)
}

// TestStressFloodBothWays floods in both directions with every size class, in each
// progress mode.
func TestStressFloodBothWays(t *testing.T) {
	for _, mode := range []string{"hybrid", "block"} {
		for _, tr := range transports {
			t.Run(mode+"/"+tr, func(t *testing.T) {
				runEnv(t, tr, 2, map[string]string{runtime.EnvProgress: mode}, func(ctx context.Context, w *runtime.World) error {
					sizes := limitSizes(eagerLimit(w, 1-w.Rank()))
					return floodBothWays(ctx, w, 4*len(sizes)*5, sizes)
				})
			})
		}
	}
}

// TestStressFloodSmallEagerLimit floods with GORMA_EAGER_LIMIT at 0 and 100: every
// non-empty message (or every one above 100 bytes) is a rendezvous, and empty ones (or
// small ones) go through the fast box or the queue pair between them.
func TestStressFloodSmallEagerLimit(t *testing.T) {
	for _, lim := range []int{0, 100} {
		for _, tr := range transports {
			t.Run(fmt.Sprintf("%s/limit=%d", tr, lim), func(t *testing.T) {
				runEnv(t, tr, 2, map[string]string{runtime.EnvEagerLimit: fmt.Sprint(lim)}, func(ctx context.Context, w *runtime.World) error {
					sizes := []int{0, 1, lim, lim + 1, fbLimit, fbLimit + 1, 5000, 0}
					return floodBothWays(ctx, w, 160, sizes)
				})
			})
		}
	}
}

// TestStressUnexpectedPileAnyTag piles up many unexpected messages of every size class
// (far more rendezvous offers than slots) before any receive is posted, then receives them
// with AnySource/AnyTag: they must come in the order sent. Some receive buffers are
// short (truncation of eager and rendezvous messages, which must not disturb the rest).
func TestStressUnexpectedPileAnyTag(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			sizes := limitSizes(eagerLimit(w, 1-w.Rank()))
			const count = 150
			sizeOf := func(i int) int { return sizes[i%len(sizes)] }
			if w.Rank() == 0 {
				reqs := make([]*runtime.Request, count)
				for i := range count {
					b := make([]byte, sizeOf(i))
					stamp(b, i)
					r, err := runtime.Isend(w, b, 1, 1000+i)
					if err != nil {
						return err
					}
					reqs[i] = r
				}
				if err := runtime.Send(ctx, w, []byte("go"), 1, 1); err != nil {
					return err
				}
				return waitAll(ctx, reqs)
			}
			// The marker is handled only after every message sent before it (per-peer
			// order across the fast box and the queue pair): everything is unexpected now.
			if _, err := runtime.Recv(ctx, w, make([]byte, 2), 0, 1); err != nil {
				return err
			}
			if _, ux, _ := runtime.Pending(w); ux != count {
				return fmt.Errorf("%d unexpected messages, want %d", ux, count)
			}
			for i := range count {
				want := sizeOf(i)
				blen := want
				if i%7 == 3 && want > 0 {
					blen = want / 2 // truncated
				}
				buf := make([]byte, blen)
				src, tag := runtime.AnySource, runtime.AnyTag
				if i%3 == 1 {
					src = 0
				}
				st, err := runtime.Recv(ctx, w, buf, src, tag)
				if blen < want {
					if !errors.Is(err, runtime.ErrTruncated) {
						return fmt.Errorf("message %d (%d bytes into %d): %v", i, want, blen, err)
					}
				} else if err != nil {
					return fmt.Errorf("message %d: %w", i, err)
				}
				if st.Source != 0 || st.Tag != 1000+i || st.Bytes != blen {
					return fmt.Errorf("message %d (%d bytes): status %+v", i, want, st)
				}
				if err := checkStamp(buf, i); err != nil {
					return fmt.Errorf("message %d: %w", i, err)
				}
			}
			if p, ux, table := runtime.Pending(w); p+ux+table != 0 {
				return fmt.Errorf("left over: %d posted, %d unexpected, %d table", p, ux, table)
			}
			return nil
		})
	})
}

// TestStressSelfAllSizes sends to this rank itself every size class, blocking and not,
// before and after the receive is posted, by name and wildcard, and with truncation.
func TestStressSelfAllSizes(t *testing.T) {
	run(t, "shm", 2, func(ctx context.Context, w *runtime.World) error {
		me := w.Rank()
		sizes := append(limitSizes(runtime.DefaultEagerTCP), 1<<20+3)
		for i, size := range sizes {
			out := make([]byte, size)
			stamp(out, i)
			// Unexpected first: blocking Send never blocks on self.
			if err := runtime.Send(ctx, w, out, me, i); err != nil {
				return fmt.Errorf("size %d: %w", size, err)
			}
			in := make([]byte, size+1)
			st, err := runtime.Recv(ctx, w, in, runtime.AnySource, runtime.AnyTag)
			if err != nil || st.Source != me || st.Tag != i || st.Bytes != size {
				return fmt.Errorf("size %d: %+v %v", size, st, err)
			}
			if err := checkStamp(in[:size], i); err != nil {
				return fmt.Errorf("size %d: %w", size, err)
			}
			// Posted first, then Isend.
			in = make([]byte, size)
			r, err := runtime.Irecv(w, in, me, i)
			if err != nil {
				return err
			}
			s, err := runtime.Isend(w, out, me, i)
			if err != nil {
				return err
			}
			if done, _, err := s.Test(); !done || err != nil {
				return fmt.Errorf("size %d: self Isend not complete at once: %v %v", size, done, err)
			}
			if st, err := r.Wait(ctx); err != nil || st.Bytes != size {
				return fmt.Errorf("size %d: %+v %v", size, st, err)
			}
			if err := checkStamp(in, i); err != nil {
				return fmt.Errorf("size %d: %w", size, err)
			}
			// Truncated.
			if size > 1 {
				if err := runtime.Send(ctx, w, out, me, i); err != nil {
					return err
				}
				in = make([]byte, size/2)
				st, err := runtime.Recv(ctx, w, in, me, i)
				if !errors.Is(err, runtime.ErrTruncated) || st.Bytes != size/2 {
					return fmt.Errorf("size %d into %d: %+v %v", size, size/2, st, err)
				}
				if err := checkStamp(in, i); err != nil {
					return fmt.Errorf("size %d truncated: %w", size, err)
				}
			}
		}
		// A stream to self with one tag keeps its order.
		var reqs []*runtime.Request
		for i, size := range sizes {
			out := make([]byte, size)
			stamp(out, 100+i)
			r, err := runtime.Isend(w, out, me, 5)
			if err != nil {
				return err
			}
			reqs = append(reqs, r)
		}
		if err := waitAll(ctx, reqs); err != nil {
			return err
		}
		for i, size := range sizes {
			in := make([]byte, 2<<20)
			st, err := runtime.Recv(ctx, w, in, runtime.AnySource, 5)
			if err != nil || st.Bytes != size {
				return fmt.Errorf("stream message %d: %+v %v, want %d bytes", i, st, err, size)
			}
			if err := checkStamp(in[:size], 100+i); err != nil {
				return fmt.Errorf("stream message %d: %w", i, err)
			}
		}
		if p, ux, table := runtime.Pending(w); p+ux+table != 0 {
			return fmt.Errorf("left over: %d posted, %d unexpected, %d table", p, ux, table)
		}
		return nil
	})
}

// TestStressZeroAmongRendezvous streams one tag of empty, fast box, eager and rendezvous
// messages, first pre-posted, then unexpected; each receive must get the message of its
// position (an empty one overtaking a rendezvous shows as a wrong length).
func TestStressZeroAmongRendezvous(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			lim := eagerLimit(w, 1-w.Rank())
			pat := []int{0, lim + 1, 0, 0, 3 * lim, 1, 0, lim, 0, fbLimit + 1, lim + 1, 0}
			const count = 144
			for phase := range 2 {
				if w.Rank() == 0 {
					if phase == 1 {
						if err := runtime.Barrier(ctx, w); err != nil { // receives not posted yet
							return err
						}
					}
					reqs := make([]*runtime.Request, count)
					for i := range count {
						b := make([]byte, pat[i%len(pat)])
						stamp(b, phase<<16|i)
						r, err := runtime.Isend(w, b, 1, 3)
						if err != nil {
							return err
						}
						reqs[i] = r
					}
					if err := waitAll(ctx, reqs); err != nil {
						return err
					}
					if phase == 0 {
						if err := runtime.Barrier(ctx, w); err != nil {
							return err
						}
					}
					continue
				}
				bufs := make([][]byte, count)
				reqs := make([]*runtime.Request, count)
				if phase == 1 {
					if err := runtime.Barrier(ctx, w); err != nil {
						return err
					}
					time.Sleep(20 * time.Millisecond) // let them pile up (order does not depend on it)
				}
				for i := range count {
					bufs[i] = make([]byte, 3*lim)
					src := 0
					if i%2 == 0 {
						src = runtime.AnySource
					}
					r, err := runtime.Irecv(w, bufs[i], src, 3)
					if err != nil {
						return err
					}
					reqs[i] = r
				}
				for i, r := range reqs {
					st, err := r.Wait(ctx)
					if err != nil {
						return fmt.Errorf("phase %d message %d: %w", phase, i, err)
					}
					if want := pat[i%len(pat)]; st.Bytes != want {
						return fmt.Errorf("phase %d message %d: %d bytes, want %d (overtaken)", phase, i, st.Bytes, want)
					}
					if err := checkStamp(bufs[i][:st.Bytes], phase<<16|i); err != nil {
						return fmt.Errorf("phase %d message %d: %w", phase, i, err)
					}
				}
				if phase == 0 {
					if err := runtime.Barrier(ctx, w); err != nil {
						return err
					}
				}
			}
			return nil
		})
	})
}

// TestStressAllToAllTags has every rank send to every other rank (and itself) many
// messages over many tags at once; receives are posted per (source, tag) in a shuffled
// order of sources and tags, and must each get the message of their position.
func TestStressAllToAllTags(t *testing.T) {
	forEach(t, []int{3, 4}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			const tags, per = 7, 6
			me := w.Rank()
			sizeOf := func(src, dst, tag, k int) int {
				lim := eagerLimit(w, (me+1)%n) // same device kind for every peer here
				switch (src + dst + tag + k) % 6 {
				case 0:
					return 0
				case 1:
					return fbLimit
				case 2:
					return fbLimit + 1
				case 3:
					return lim
				case 4:
					return lim + 1
				}
				return 40_000 + src
			}
			id := func(src, dst, tag, k int) int { return src<<24 | dst<<16 | tag<<8 | k }
			type rx struct {
				src, tag, k int
				buf         []byte
				r           *runtime.Request
			}
			var rxs []*rx
			post := func(src, tag, k int) error {
				x := &rx{src: src, tag: tag, k: k, buf: make([]byte, sizeOf(src, me, tag, k))}
				var err error
				x.r, err = runtime.Irecv(w, x.buf, src, tag)
				rxs = append(rxs, x)
				return err
			}
			// Half the receives first, in an order that differs per rank.
			for k := 0; k < per/2; k++ {
				for j := range n * tags {
					j = (j*5 + me) % (n * tags)
					if err := post(j%n, j/n, k); err != nil {
						return err
					}
				}
			}
			var sends []*runtime.Request
			for k := range per {
				for tag := range tags {
					for d := range n {
						dst := (me + d + 1) % n
						b := make([]byte, sizeOf(me, dst, tag, k))
						stamp(b, id(me, dst, tag, k))
						r, err := runtime.Isend(w, b, dst, tag)
						if err != nil {
							return err
						}
						sends = append(sends, r)
					}
				}
			}
			for k := per / 2; k < per; k++ {
				for tag := tags - 1; tag >= 0; tag-- {
					for src := n - 1; src >= 0; src-- {
						if err := post(src, tag, k); err != nil {
							return err
						}
					}
				}
			}
			for _, x := range rxs {
				st, err := x.r.Wait(ctx)
				if err != nil {
					return fmt.Errorf("from %d tag %d #%d: %w", x.src, x.tag, x.k, err)
				}
				if st.Source != x.src || st.Tag != x.tag || st.Bytes != len(x.buf) {
					return fmt.Errorf("from %d tag %d #%d: status %+v", x.src, x.tag, x.k, st)
				}
				if err := checkStamp(x.buf, id(x.src, me, x.tag, x.k)); err != nil {
					return fmt.Errorf("from %d tag %d #%d: %w", x.src, x.tag, x.k, err)
				}
			}
			return waitAll(ctx, sends)
		})
	})
}

// TestStressDupInterleave sends the same tags on a World and two Dups of it, interleaved,
// and receives them world by world in reverse: each World gets only its own messages, in
// order, whatever the size.
func TestStressDupInterleave(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			d1, err := w.Dup()
			if err != nil {
				return err
			}
			d2, err := d1.Dup()
			if err != nil {
				return err
			}
			worlds := []*runtime.World{w, d1, d2}
			lim := eagerLimit(w, 1-w.Rank())
			sizes := []int{0, 9, lim + 1, fbLimit + 1, lim, 0}
			const per = 24
			if w.Rank() == 0 {
				var reqs []*runtime.Request
				for k := range per {
					for wi, x := range worlds {
						b := make([]byte, sizes[(k+wi)%len(sizes)])
						stamp(b, wi<<8|k)
						r, err := runtime.Isend(x, b, 1, k%2)
						if err != nil {
							return err
						}
						reqs = append(reqs, r)
					}
				}
				if err := waitAll(ctx, reqs); err != nil {
					return err
				}
				return runtime.Barrier(ctx, d1)
			}
			// Probe on d2 sees only d2's first message.
			st, err := runtime.Probe(ctx, d2, 0, 0)
			if err != nil || st.Bytes != sizes[2%len(sizes)] || st.Tag != 0 {
				return fmt.Errorf("probe on the second Dup: %+v %v", st, err)
			}
			for wi := len(worlds) - 1; wi >= 0; wi-- {
				for tag := 1; tag >= 0; tag-- {
					for k := tag; k < per; k += 2 {
						buf := make([]byte, lim+1)
						src := 0
						if k%3 == 0 {
							src = runtime.AnySource
						}
						st, err := runtime.Recv(ctx, worlds[wi], buf, src, tag)
						if err != nil {
							return fmt.Errorf("world %d message %d: %w", wi, k, err)
						}
						want := sizes[(k+wi)%len(sizes)]
						if st.Bytes != want || st.Tag != tag {
							return fmt.Errorf("world %d message %d: status %+v, want %d bytes", wi, k, st, want)
						}
						if err := checkStamp(buf[:want], wi<<8|k); err != nil {
							return fmt.Errorf("world %d message %d: %w", wi, k, err)
						}
					}
				}
			}
			return runtime.Barrier(ctx, d1)
		})
	})
}
