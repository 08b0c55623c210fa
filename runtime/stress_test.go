package runtime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

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
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
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

// TestStressRequestReuseAfterErrors reuses Requests that completed with ErrTruncated (eager,
// fast box and rendezvous) and one whose Wait ended with its context: the later operations
// on them must work as on new ones.
func TestStressRequestReuseAfterErrors(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			lim := eagerLimit(w, 1-w.Rank())
			sizes := []int{fbLimit, lim, 3 * lim}
			var rq, sq runtime.Request
			for round := range 3 {
				for i, size := range sizes {
					id := round<<8 | i
					if w.Rank() == 0 {
						for k := range 2 { // the first is truncated, the second is not
							b := make([]byte, size)
							stamp(b, id<<1|k)
							if err := runtime.IsendWith(&sq, w, b, 1, i); err != nil {
								return err
							}
							if _, err := sq.Wait(ctx); err != nil {
								return err
							}
						}
						continue
					}
					short := make([]byte, size/3)
					if err := runtime.IrecvWith(&rq, w, short, 0, i); err != nil {
						return err
					}
					st, err := rq.Wait(ctx)
					if !errors.Is(err, runtime.ErrTruncated) || st.Bytes != len(short) {
						return fmt.Errorf("size %d into %d: %+v %v", size, len(short), st, err)
					}
					if err := checkStamp(short, id<<1); err != nil {
						return err
					}
					full := make([]byte, size)
					if err := runtime.IrecvWith(&rq, w, full, runtime.AnySource, runtime.AnyTag); err != nil {
						return err
					}
					st, err = rq.Wait(ctx)
					if err != nil || st.Bytes != size || st.Tag != i {
						return fmt.Errorf("reused after truncation, size %d: %+v %v", size, st, err)
					}
					if err := checkStamp(full, id<<1|1); err != nil {
						return err
					}
				}
			}
			// A Request whose Wait ended with its context stays in use until it completes.
			buf := make([]byte, 3*lim)
			if w.Rank() == 1 {
				if err := runtime.IrecvWith(&rq, w, buf, 0, 77); err != nil {
					return err
				}
				short, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
				_, err := rq.Wait(short)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("Wait with an expired context: %v", err)
				}
				if err := runtime.IrecvWith(&rq, w, buf, 0, 77); !errors.Is(err, runtime.ErrInvalid) {
					return fmt.Errorf("reuse of a pending Request: %v", err)
				}
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if w.Rank() == 0 {
				stamp(buf, 4242)
				return runtime.Send(ctx, w, buf, 1, 77)
			}
			if st, err := rq.Wait(ctx); err != nil || st.Bytes != len(buf) {
				return fmt.Errorf("after the canceled Wait: %+v %v", st, err)
			}
			return checkStamp(buf, 4242)
		})
	})
}

// TestStressCancelMidRendezvous cancels blocking rendezvous receives and sends after
// varying delays, so that some end before the match, some during the read and some after;
// whatever happened, the message must be received intact exactly once, and the ranks must
// go on communicating correctly.
func TestStressCancelMidRendezvous(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			const size = 8 << 20
			buf := make([]byte, size)
			for round := range 8 {
				delay := time.Duration(round) * 250 * time.Microsecond
				if w.Rank() == 0 {
					stampBig(buf, round)
					short, cancel := context.WithTimeout(ctx, delay)
					err := runtime.Send(short, w, buf, 1, round)
					cancel()
					if err != nil && !errors.Is(err, context.DeadlineExceeded) {
						return fmt.Errorf("round %d: Send: %w", round, err)
					}
					// The offer stands: buf must stay as it is until the receiver says so.
					if _, err := runtime.Recv(ctx, w, make([]byte, 1), 1, 100+round); err != nil {
						return err
					}
					// The small messages after it must be fine too.
					small := make([]byte, 100)
					stamp(small, 1000+round)
					if err := runtime.Send(ctx, w, small, 1, round); err != nil {
						return err
					}
					continue
				}
				clear(buf)
				short, cancel := context.WithTimeout(ctx, delay)
				st, err := runtime.Recv(short, w, buf, 0, round)
				cancel()
				if errors.Is(err, context.DeadlineExceeded) {
					if p, _, _ := runtime.Pending(w); p != 0 {
						return fmt.Errorf("round %d: a canceled receive is still posted", round)
					}
					st, err = runtime.Recv(ctx, w, buf, 0, round)
				}
				if err != nil || st.Bytes != size {
					return fmt.Errorf("round %d: %+v %v", round, st, err)
				}
				if err := checkStampBig(buf, round); err != nil {
					return fmt.Errorf("round %d: %w", round, err)
				}
				if err := runtime.Send(ctx, w, []byte{1}, 0, 100+round); err != nil {
					return err
				}
				small := make([]byte, 100)
				if st, err := runtime.Recv(ctx, w, small, 0, round); err != nil || st.Bytes != 100 {
					return fmt.Errorf("round %d small: %+v %v", round, st, err)
				}
				if err := checkStamp(small, 1000+round); err != nil {
					return fmt.Errorf("round %d small: %w", round, err)
				}
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if _, _, table := runtime.Pending(w); table != 0 {
				return fmt.Errorf("%d rendezvous table entries left", table)
			}
			return nil
		})
	})
}

// TestStressIrecvWaitCancelMidRead ends Wait's context on a rendezvous Irecv at varying
// points, waits again, and checks the data; meanwhile the other direction carries a stream.
func TestStressIrecvWaitCancelMidRead(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			const size = 4 << 20
			peer := 1 - w.Rank()
			out, in := make([]byte, size), make([]byte, size)
			for round := range 6 {
				stampBig(out, w.Rank()<<8|round)
				clear(in)
				r, err := runtime.Irecv(w, in, peer, round)
				if err != nil {
					return err
				}
				s, err := runtime.Isend(w, out, peer, round)
				if err != nil {
					return err
				}
				short, cancel := context.WithTimeout(ctx, time.Duration(round)*200*time.Microsecond)
				_, err = r.Wait(short)
				cancel()
				if err != nil && !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("round %d: %w", round, err)
				}
				st, err := r.Wait(ctx)
				if err != nil || st.Bytes != size || st.Source != peer {
					return fmt.Errorf("round %d: %+v %v", round, st, err)
				}
				if err := checkStampBig(in, peer<<8|round); err != nil {
					return fmt.Errorf("round %d: %w", round, err)
				}
				if _, err := s.Wait(ctx); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// TestStressConcurrentGoroutines has four goroutines per rank exchange with the peer, each
// on its own tag and World, mixing every size class and blocking and non-blocking calls
// (MPI_THREAD_MULTIPLE): the poller role passes between them.
func TestStressConcurrentGoroutines(t *testing.T) {
	for _, mode := range []string{"hybrid", "block", "spin"} {
		for _, tr := range transports {
			t.Run(mode+"/"+tr, func(t *testing.T) {
				runEnv(t, tr, 2, map[string]string{runtime.EnvProgress: mode}, func(ctx context.Context, w *runtime.World) error {
					peer := 1 - w.Rank()
					sizes := limitSizes(eagerLimit(w, peer))
					const gs, rounds = 4, 24
					worlds := []*runtime.World{w, w}
					for range 2 {
						d, err := w.Dup()
						if err != nil {
							return err
						}
						worlds = append(worlds, d)
					}
					errs := make([]error, gs)
					var wg sync.WaitGroup
					for g := range gs {
						wg.Add(1)
						go func() {
							defer wg.Done()
							x := worlds[g]
							for k := range rounds {
								size := sizes[(k+g)%len(sizes)]
								out, in := make([]byte, size), make([]byte, size)
								stamp(out, w.Rank()<<16|g<<8|k)
								var err error
								if k%2 == 0 {
									var r *runtime.Request
									if r, err = runtime.Irecv(x, in, peer, g); err == nil {
										if err = runtime.Send(ctx, x, out, peer, g); err == nil {
											_, err = r.Wait(ctx)
										}
									}
								} else if w.Rank() == 0 {
									if err = runtime.Send(ctx, x, out, peer, g); err == nil {
										_, err = runtime.Recv(ctx, x, in, peer, g)
									}
								} else {
									if _, err = runtime.Recv(ctx, x, in, runtime.AnySource, g); err == nil {
										err = runtime.Send(ctx, x, out, peer, g)
									}
								}
								if err == nil {
									err = checkStamp(in, peer<<16|g<<8|k)
								}
								if err != nil {
									errs[g] = fmt.Errorf("goroutine %d round %d (%d bytes): %w", g, k, size, err)
									return
								}
							}
						}()
					}
					wg.Wait()
					return errors.Join(errs...)
				})
			})
		}
	}
}

// TestStressWaitOneRequestFromManyGoroutines has several goroutines Wait for one Request
// (a Request is safe for use by several goroutines) while another goroutine holds the
// poller role waiting for a message that comes only after every one of those Waits has
// returned: each of them must be woken when the Request completes, not only one.
func TestStressWaitOneRequestFromManyGoroutines(t *testing.T) {
	for _, mode := range []string{"hybrid", "block"} {
		for _, tr := range transports {
			t.Run(mode+"/"+tr, func(t *testing.T) {
				runEnv(t, tr, 2, map[string]string{runtime.EnvProgress: mode}, func(ctx context.Context, w *runtime.World) error {
					// A waiter left parked wakes only when its context ends (and then
					// returns the Request's outcome): the poller's Recv fails then.
					ctx, cancel := context.WithTimeout(ctx, 8*time.Second)
					defer cancel()
					if w.Rank() == 0 {
						if _, err := runtime.Recv(ctx, w, make([]byte, 1), 1, 2); err != nil { // ready
							return err
						}
						msg := make([]byte, 64)
						stamp(msg, 1)
						if err := runtime.Send(ctx, w, msg, 1, 1); err != nil {
							return err
						}
						if _, err := runtime.Recv(ctx, w, make([]byte, 1), 1, 4); err != nil { // all woke
							return err
						}
						return runtime.Send(ctx, w, []byte{3}, 1, 3)
					}
					in := make([]byte, 64)
					r, err := runtime.Irecv(w, in, 0, 1)
					if err != nil {
						return err
					}
					// The poller: waits for tag 3, sent once every Wait below has returned.
					poller := result(func() error {
						_, err := runtime.Recv(ctx, w, make([]byte, 1), 0, 3)
						return err
					})
					time.Sleep(20 * time.Millisecond) // let it take the poller role
					const waiters = 3
					errs := make([]error, waiters)
					var wg sync.WaitGroup
					for i := range waiters {
						wg.Add(1)
						go func() {
							defer wg.Done()
							st, err := r.Wait(ctx)
							if err == nil && st.Bytes != len(in) {
								err = fmt.Errorf("status %+v", st)
							}
							errs[i] = err
						}()
					}
					time.Sleep(20 * time.Millisecond) // let them park
					if err := runtime.Send(ctx, w, []byte{2}, 0, 2); err != nil {
						return err
					}
					wg.Wait()
					if err := errors.Join(errs...); err != nil {
						return fmt.Errorf("concurrent Waits for one Request: %w", err)
					}
					if err := checkStamp(in, 1); err != nil {
						return err
					}
					if err := runtime.Send(ctx, w, []byte{4}, 0, 4); err != nil {
						return err
					}
					return <-poller
				})
			})
		}
	}
}

// TestStressCounterWaitHandsOff has a goroutine wait in Counter.Wait for a large one-sided
// read, holding the poller role, while another goroutine blocks in Recv and parks behind
// it; the message for the Recv arrives only after Counter.Wait has returned and nothing
// else of the rank calls the runtime. Counter.Wait must hand the poller role over when it
// leaves, or the Recv sleeps until its context ends.
func TestStressCounterWaitHandsOff(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			ctx, cancel := context.WithTimeout(ctx, 8*time.Second)
			defer cancel()
			const size = 32 << 20
			if w.Rank() == 0 {
				reg, err := w.AllocRegion(size)
				if err != nil {
					return err
				}
				defer reg.Free()
				stampBig(reg.Bytes(), 7)
				if err := runtime.Send(ctx, w, reg.AppendDesc(nil), 1, 1); err != nil {
					return err
				}
				for range 3 {
					if _, err := runtime.Recv(ctx, w, make([]byte, 1), 1, 2); err != nil { // go
						return err
					}
					time.Sleep(100 * time.Millisecond) // after the reader's Counter.Wait (not for correctness)
					if err := runtime.Send(ctx, w, []byte("late"), 1, 3); err != nil {
						return err
					}
				}
				return runtime.Barrier(ctx, w)
			}
			rm, c, done, err := attachFrom(ctx, w, 0)
			if err != nil {
				return err
			}
			defer done()
			dst := make([]byte, size)
			for round := range 3 {
				if err := runtime.Send(ctx, w, []byte{1}, 0, 2); err != nil {
					return err
				}
				clear(dst)
				if err := rm.Read(c, 0, dst); err != nil {
					return err
				}
				read := result(func() error { return c.Wait(ctx) })
				time.Sleep(time.Millisecond) // let it take the poller role (not for correctness)
				late := result(func() error {
					buf := make([]byte, 4)
					if _, err := runtime.Recv(ctx, w, buf, 0, 3); err != nil {
						return err
					}
					if string(buf) != "late" {
						return fmt.Errorf("got %q", buf)
					}
					return nil
				})
				if err := <-read; err != nil {
					return fmt.Errorf("round %d: read: %w", round, err)
				}
				if err := checkStampBig(dst, 7); err != nil {
					return fmt.Errorf("round %d: read: %w", round, err)
				}
				if err := <-late; err != nil {
					return fmt.Errorf("round %d: Recv parked behind Counter.Wait: %w", round, err)
				}
			}
			return runtime.Barrier(ctx, w)
		})
	})
}

// TestStressEdgeReceives receives messages of every class into an empty buffer (all of
// it truncated, the sender still completes) and uses the largest tag with AnyTag.
func TestStressEdgeReceives(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			lim := eagerLimit(w, 1-w.Rank())
			small := []int{1, fbLimit, fbLimit + 1, lim, lim + 1, 5 * lim}
			if w.Rank() == 0 {
				for i, size := range small {
					b := make([]byte, size)
					stamp(b, i)
					if err := runtime.Send(ctx, w, b, 1, runtime.MaxTag); err != nil {
						return fmt.Errorf("size %d: %w", size, err)
					}
				}
				return runtime.Barrier(ctx, w)
			}
			for i, size := range small {
				st, err := runtime.Recv(ctx, w, []byte{}, 0, runtime.AnyTag)
				if !errors.Is(err, runtime.ErrTruncated) || st.Bytes != 0 || st.Tag != runtime.MaxTag || st.Source != 0 {
					return fmt.Errorf("message %d of %d bytes into an empty buffer: %+v %v", i, size, st, err)
				}
			}
			return runtime.Barrier(ctx, w)
		})
	})
}

// TestStressAboveReadChunk sends a message above the rendezvous read chunk (64 MiB) into a
// buffer 3 bytes shorter than it: two RDMA reads, the second of 2 bytes, and truncation.
func TestStressAboveReadChunk(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			const huge = 64<<20 + 5
			big := make([]byte, huge)
			if w.Rank() == 0 {
				stampBig(big, 99)
				return runtime.Send(ctx, w, big, 1, 0)
			}
			st, err := runtime.Recv(ctx, w, big[:huge-3], 0, 0)
			if !errors.Is(err, runtime.ErrTruncated) || st.Bytes != huge-3 {
				return fmt.Errorf("%d bytes into %d: %+v %v", huge, huge-3, st, err)
			}
			if big[huge-3] != 0 {
				return errors.New("a truncated receive wrote past its buffer")
			}
			return checkStampBig(big[:huge-3], 99)
		})
	})
}

// TestStressRequestReuseAfterPeerFailure reuses Requests that failed because their peer
// died (a posted rendezvous receive, a rendezvous send awaiting FIN, an eager send queued
// behind it) for traffic with a live peer, of every size class.
func TestStressRequestReuseAfterPeerFailure(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j := start(t, tr, 3)
			w0, w1, w2 := j.Worlds[0], j.Worlds[1], j.Worlds[2]
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
			defer cancel()
			lim := eagerLimit(w1, 2)
			var rx, tx, tx2 runtime.Request
			if err := runtime.IrecvWith(&rx, w1, make([]byte, 3*lim), 0, 1); err != nil {
				t.Fatal(err)
			}
			if err := runtime.IsendWith(&tx, w1, make([]byte, 3*lim), 0, 1); err != nil {
				t.Fatal(err)
			}
			if err := runtime.IsendWith(&tx2, w1, make([]byte, 10), 0, 1); err != nil {
				t.Fatal(err)
			}
			runtime.KillTransport(w0)
			for name, r := range map[string]*runtime.Request{"receive": &rx, "send": &tx} {
				if _, err := r.Wait(ctx); !errors.Is(err, runtime.ErrProcFailed) {
					t.Fatalf("%s from the dead rank: %v", name, err)
				}
			}
			if _, err := tx2.Wait(ctx); err != nil && !errors.Is(err, runtime.ErrProcFailed) {
				t.Fatalf("eager send to the dead rank: %v", err)
			}
			done := result(func() error {
				for i, size := range limitSizes(lim) {
					b := make([]byte, size)
					stamp(b, i)
					if err := runtime.Send(ctx, w2, b, 1, i); err != nil {
						return err
					}
					if _, err := runtime.Recv(ctx, w2, b, 1, i); err != nil {
						return err
					}
					if err := checkStamp(b, 1000+i); err != nil {
						return fmt.Errorf("echo %d: %w", i, err)
					}
				}
				return nil
			})
			for i, size := range limitSizes(lim) {
				in := make([]byte, size)
				if err := runtime.IrecvWith(&rx, w1, in, 2, i); err != nil {
					t.Fatal(err)
				}
				if st, err := rx.Wait(ctx); err != nil || st.Bytes != size || st.Source != 2 {
					t.Fatalf("size %d on a reused Request: %+v %v", size, st, err)
				}
				if err := checkStamp(in, i); err != nil {
					t.Fatal(err)
				}
				stamp(in, 1000+i)
				if err := runtime.IsendWith(&tx, w1, in, 2, i); err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Wait(ctx); err != nil {
					t.Fatalf("size %d: send on a reused Request: %v", size, err)
				}
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}
