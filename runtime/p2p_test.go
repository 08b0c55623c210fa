package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
)

// sizes covers every size class: empty, tiny, around both eager limits, rendezvous, and
// odd lengths.
var sizes = []int{0, 1, 8, 63, 100, 4096, 16<<10 - 1, 16 << 10, 16<<10 + 1, 64<<10 - 8, 64 << 10,
	64<<10 + 1, 200_003, 1 << 20, 4<<20 + 5}

func TestSendRecvSizes(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			for i, size := range sizes {
				buf := make([]byte, size)
				if w.Rank() == 0 {
					pattern(buf, i)
					if err := runtime.Send(ctx, w, buf, 1, i); err != nil {
						return fmt.Errorf("size %d: %w", size, err)
					}
					continue
				}
				st, err := runtime.Recv(ctx, w, buf, 0, i)
				if err != nil {
					return fmt.Errorf("size %d: %w", size, err)
				}
				if st.Source != 0 || st.Tag != i || st.Bytes != size || st.Count != size {
					return fmt.Errorf("size %d: status %+v", size, st)
				}
				if err := checkPattern(buf, i); err != nil {
					return fmt.Errorf("size %d: %w", size, err)
				}
			}
			return nil
		})
	})
}

// TestTypedElements checks Count for multi-byte elements, both protocols.
func TestTypedElements(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			for _, count := range []int{3, 100_000} {
				buf := make([]float64, count)
				if w.Rank() == 0 {
					for i := range buf {
						buf[i] = float64(i) * 0.5
					}
					if err := runtime.Send(ctx, w, buf, 1, 0); err != nil {
						return err
					}
					continue
				}
				big := make([]float64, count+10)
				st, err := runtime.Recv(ctx, w, big, 0, 0)
				if err != nil {
					return err
				}
				if st.Count != count || st.Bytes != 8*count {
					return fmt.Errorf("status %+v, want count %d", st, count)
				}
				for i := 0; i < count; i++ {
					if big[i] != float64(i)*0.5 {
						return fmt.Errorf("element %d is %v", i, big[i])
					}
				}
			}
			return nil
		})
	})
}

func TestAnySourceAnyTag(t *testing.T) {
	forEach(t, []int{3, 4}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			const per = 5
			if w.Rank() != 0 {
				for i := 0; i < per; i++ {
					size := 8
					if i == 2 {
						size = 100_000 // a rendezvous among the eager ones
					}
					buf := make([]int32, size/4)
					buf[0] = int32(w.Rank()*100 + i)
					if err := runtime.Send(ctx, w, buf, 0, w.Rank()*10+i); err != nil {
						return err
					}
				}
				return nil
			}
			seen := map[int]bool{}
			next := make([]int, n) // per source, the next expected i
			buf := make([]int32, 100_000/4)
			for k := 0; k < per*(n-1); k++ {
				st, err := runtime.Recv(ctx, w, buf, runtime.AnySource, runtime.AnyTag)
				if err != nil {
					return err
				}
				i := st.Tag - st.Source*10
				if seen[st.Tag] || i != next[st.Source] || int(buf[0]) != st.Source*100+i {
					return fmt.Errorf("message %+v (payload %d) out of order or repeated", st, buf[0])
				}
				seen[st.Tag] = true
				next[st.Source]++
			}
			return nil
		})
	})
}

// TestNonOvertaking sends a stream of messages of mixed protocols with one tag; the
// receiver must get them in order, with a named source and with AnySource.
func TestNonOvertaking(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			const count = 200
			sizeOf := func(i int) int {
				switch i % 7 {
				case 3:
					return 80_000
				case 5:
					return 0
				}
				return 8 * (1 + i%5)
			}
			if w.Rank() == 0 {
				var reqs []*runtime.Request
				for i := 0; i < count; i++ {
					buf := make([]uint32, max(sizeOf(i)/4, 1))[:sizeOf(i)/4]
					if len(buf) > 0 {
						buf[0] = uint32(i)
					}
					r, err := runtime.Isend(w, buf, 1, 7)
					if err != nil {
						return err
					}
					reqs = append(reqs, r)
				}
				for _, r := range reqs {
					if _, err := r.Wait(ctx); err != nil {
						return err
					}
				}
				return nil
			}
			time.Sleep(20 * time.Millisecond) // let messages pile up as unexpected
			buf := make([]uint32, 80_000/4)
			for i := 0; i < count; i++ {
				src := 0
				if i%2 == 1 {
					src = runtime.AnySource
				}
				st, err := runtime.Recv(ctx, w, buf, src, 7)
				if err != nil {
					return err
				}
				if st.Bytes != sizeOf(i) || (st.Bytes > 0 && buf[0] != uint32(i)) {
					return fmt.Errorf("message %d: status %+v, first word %d", i, st, buf[0])
				}
			}
			return nil
		})
	})
}

func TestProbe(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			if w.Rank() == 0 {
				for _, size := range []int{24, 300_000} {
					if err := runtime.Send(ctx, w, make([]int64, size/8), 1, size); err != nil {
						return err
					}
				}
				return nil
			}
			ok, _, err := runtime.Iprobe(w, 0, 12345)
			if ok || err != nil {
				return fmt.Errorf("Iprobe of an unsent tag: %v %v", ok, err)
			}
			for _, size := range []int{24, 300_000} {
				st, err := runtime.Probe(ctx, w, runtime.AnySource, runtime.AnyTag)
				if err != nil {
					return err
				}
				if st.Source != 0 || st.Tag != size || st.Bytes != size || runtime.CountOf[int64](st) != size/8 {
					return fmt.Errorf("probe status %+v for size %d", st, size)
				}
				ok, st2, err := runtime.Iprobe(w, 0, size)
				if !ok || err != nil || st2 != st {
					return fmt.Errorf("Iprobe after Probe: %v %+v %v", ok, st2, err)
				}
				buf := make([]int64, runtime.CountOf[int64](st))
				if _, err := runtime.Recv(ctx, w, buf, st.Source, st.Tag); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

func TestIsendIrecvTestWait(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			peer := 1 - w.Rank()
			small := make([]byte, 100)
			big := make([]byte, 2<<20)
			rs, rb := make([]byte, 100), make([]byte, 2<<20)
			pattern(small, w.Rank())
			pattern(big, w.Rank()+10)
			r1, err := runtime.Irecv(w, rs, peer, 1)
			if err != nil {
				return err
			}
			r2, err := runtime.Irecv(w, rb, peer, 2)
			if err != nil {
				return err
			}
			if done, _, _ := r1.Test(); done && w.Rank() == 0 {
				// Possible in principle, but the peer has not sent yet in this order: fine.
				_ = done
			}
			s2, err := runtime.Isend(w, big, peer, 2)
			if err != nil {
				return err
			}
			s1, err := runtime.Isend(w, small, peer, 1)
			if err != nil {
				return err
			}
			deadline := time.Now().Add(testbudget.Scale(10 * time.Second))
			for {
				done, st, err := r2.Test()
				if err != nil {
					return err
				}
				if done {
					if st.Bytes != len(rb) || st.Tag != 2 {
						return fmt.Errorf("big status %+v", st)
					}
					break
				}
				if time.Now().After(deadline) {
					return errors.New("Test never reported the big receive done")
				}
			}
			for _, r := range []*runtime.Request{s1, s2, r1} {
				if _, err := r.Wait(ctx); err != nil {
					return err
				}
			}
			st, err := r1.Wait(ctx) // again: same outcome at once
			if err != nil || st.Bytes != 100 {
				return fmt.Errorf("second Wait: %+v %v", st, err)
			}
			if err := checkPattern(rs, peer); err != nil {
				return err
			}
			return checkPattern(rb, peer+10)
		})
	})
}

func TestTruncation(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			for i, size := range []int{100, 1 << 20} {
				if w.Rank() == 0 {
					buf := make([]byte, size)
					pattern(buf, i)
					if err := runtime.Send(ctx, w, buf, 1, 0); err != nil {
						return err
					}
					continue
				}
				buf := make([]byte, size/2)
				st, err := runtime.Recv(ctx, w, buf, 0, 0)
				if !errors.Is(err, runtime.ErrTruncated) {
					return fmt.Errorf("size %d into %d: err %v", size, len(buf), err)
				}
				if st.Bytes != size/2 {
					return fmt.Errorf("status %+v", st)
				}
				if err := checkPattern(buf, i); err != nil {
					return err
				}
			}
			// The connection is still fine afterwards.
			return runtime.Barrier(ctx, w)
		})
	})
}

func TestRecvContextCancel(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			if w.Rank() == 1 {
				short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
				defer cancel()
				buf := make([]byte, 8)
				_, err := runtime.Recv(short, w, buf, 0, 1)
				if !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("Recv with expired ctx: %v", err)
				}
				if p, _, _ := runtime.Pending(w); p != 0 {
					return fmt.Errorf("%d receives still posted after cancel", p)
				}
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if w.Rank() == 0 {
				return runtime.Send(ctx, w, []byte("8 bytes!"), 1, 1)
			}
			buf := make([]byte, 8)
			if _, err := runtime.Recv(ctx, w, buf, 0, 1); err != nil || string(buf) != "8 bytes!" {
				return fmt.Errorf("Recv after a cancelled one: %q %v", buf, err)
			}
			return nil
		})
	})
}

// TestSendContextCancel abandons a rendezvous Send; the message stays offered and is
// received intact later.
func TestSendContextCancel(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			big := make([]byte, 1<<20)
			// Connect first: a send canceled while its connection is still being made
			// never goes out, and this one's offer must stand.
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if w.Rank() == 0 {
				pattern(big, 3)
				short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
				defer cancel()
				if err := runtime.Send(short, w, big, 1, 9); !errors.Is(err, context.DeadlineExceeded) {
					return fmt.Errorf("Send with expired ctx: %v", err)
				}
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			if w.Rank() == 1 {
				if _, err := runtime.Recv(ctx, w, big, 0, 9); err != nil {
					return err
				}
				if err := checkPattern(big, 3); err != nil {
					return err
				}
			}
			return runtime.Barrier(ctx, w)
		})
	})
}

func TestInvalidArguments(t *testing.T) {
	run(t, "shm", 2, func(ctx context.Context, w *runtime.World) error {
		buf := make([]byte, 1)
		for _, c := range []struct {
			name string
			err  error
		}{
			{"send to rank 2", runtime.Send(ctx, w, buf, 2, 0)},
			{"send to -1", runtime.Send(ctx, w, buf, -1, 0)},
			{"send with AnyTag", runtime.Send(ctx, w, buf, 0, runtime.AnyTag)},
			{"send with tag > MaxTag", runtime.Send(ctx, w, buf, 0, runtime.MaxTag+1)},
			{"recv from 5", func() error { _, err := runtime.Recv(ctx, w, buf, 5, 0); return err }()},
			{"irecv with tag -2", func() error { _, err := runtime.Irecv(w, buf, 0, -2); return err }()},
		} {
			if !errors.Is(c.err, runtime.ErrInvalid) {
				return fmt.Errorf("%s: %v, want ErrInvalid", c.name, c.err)
			}
		}
		return nil
	})
}

// TestRendezvousCopyFallback runs rendezvous sizes over shm with the sender offering a
// private arena copy instead of its own memory. The pair connects first: the copy is
// forced on the peers connected so far.
func TestRendezvousCopyFallback(t *testing.T) {
	run(t, "shm", 2, func(ctx context.Context, w *runtime.World) error {
		if err := ringExchange(ctx, w, []int{8}, 1); err != nil {
			return err
		}
		runtime.ForceCopyRendezvous(w)
		if !runtime.CopyRendezvousForced(w) {
			return fmt.Errorf("rank %d: no connected peer offers a copy after ForceCopyRendezvous", w.Rank())
		}
		if err := ringExchange(ctx, w, []int{20_000, 1 << 20}, 5); err != nil {
			return err
		}
		_, _, table := runtime.Pending(w)
		if table != 0 {
			return fmt.Errorf("%d rendezvous table entries left", table)
		}
		return nil
	})
}

// TestRequestReuse runs windows of IsendWith/IrecvWith on reused Requests, checks that
// reuse of a pending Request is refused, and that a window allocates nothing.
func TestRequestReuse(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			const window = 40
			reqs := make([]runtime.Request, window)
			buf := make([]int64, 1)
			peer := 1 - w.Rank()
			round := func() error {
				for k := range reqs {
					var err error
					if w.Rank() == 0 {
						buf[0] = int64(k)
						err = runtime.IsendWith(&reqs[k], w, buf, peer, k)
					} else {
						err = runtime.IrecvWith(&reqs[k], w, buf, peer, k)
					}
					if err != nil {
						return err
					}
				}
				for k := range reqs {
					if _, err := reqs[k].Wait(ctx); err != nil {
						return err
					}
				}
				return runtime.Barrier(ctx, w)
			}
			for i := 0; i < 5; i++ {
				if err := round(); err != nil {
					return err
				}
			}
			var pending runtime.Request
			if err := runtime.IrecvWith(&pending, w, buf, peer, 999); err != nil {
				return err
			}
			if err := runtime.IrecvWith(&pending, w, buf, peer, 999); !errors.Is(err, runtime.ErrInvalid) {
				return fmt.Errorf("reuse of a pending Request: %v", err)
			}
			if err := runtime.Barrier(ctx, w); err != nil { // the peer sends tag 999 only now
				return err
			}
			if err := runtime.Send(ctx, w, buf, peer, 999); err != nil {
				return err
			}
			if _, err := pending.Wait(ctx); err != nil {
				return err
			}
			var failed error
			allocs := testing.AllocsPerRun(20, func() {
				if err := round(); err != nil {
					failed = err
				}
			})
			if failed != nil {
				return failed
			}
			if allocs != 0 && w.Rank() == 0 {
				t.Logf("%v allocations per window of %d (both ranks of the process count)", allocs, window)
			}
			return nil
		})
	})
}

// TestManyRendezvousInFlight keeps more rendezvous sends outstanding than the
// registration cache holds (64), each from its own segment of one buffer, and lets the
// receiver read them only once all are offered: the registrations of the first ones must
// still be valid then (they were evicted, and their reads failed with RemAccessErr).
func TestManyRendezvousInFlight(t *testing.T) {
	forEach(t, []int{2}, func(t *testing.T, tr string, n int) {
		run(t, tr, n, func(ctx context.Context, w *runtime.World) error {
			const count, seg = 100, 96 << 10 // above the eager limit
			buf := make([]byte, count*seg)
			if w.Rank() == 0 {
				reqs := make([]runtime.Request, count)
				for i := range count {
					b := buf[i*seg : (i+1)*seg]
					pattern(b, i)
					if err := runtime.IsendWith(&reqs[i], w, b, 1, 3); err != nil {
						return err
					}
				}
				if err := runtime.Send(ctx, w, []byte{1}, 1, 4); err != nil { // all offered
					return err
				}
				for i := range reqs {
					if _, err := reqs[i].Wait(ctx); err != nil {
						return fmt.Errorf("send %d: %w", i, err)
					}
				}
				return nil
			}
			if _, err := runtime.Recv(ctx, w, make([]byte, 1), 0, 4); err != nil {
				return err
			}
			for i := range count {
				b := buf[i*seg : (i+1)*seg]
				if _, err := runtime.Recv(ctx, w, b, 0, 3); err != nil {
					return fmt.Errorf("receive %d: %w", i, err)
				}
				if err := checkPattern(b, i); err != nil {
					return fmt.Errorf("message %d: %w", i, err)
				}
			}
			return nil
		})
	})
}
