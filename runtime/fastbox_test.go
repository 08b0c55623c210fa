package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestFastboxOrder mixes messages that travel through the fast box (up to 4096 bytes, while
// it has room: one cell up to 296 bytes, several above, with pad records where a record
// would pass the box's last cell) with eager messages through the queue pair (4097 bytes
// and more) and rendezvous offers, on one tag, in every progress mode, with the receiver first late (the
// box fills and later small messages take the queue pair) and then keeping up. Every
// message must arrive intact and in the order it was sent, by name and from AnySource.
func TestFastboxOrder(t *testing.T) {
	sizes := []int{8, 296, 297, 1000, 0, 16, 70_000, 100, 295, 4096, 256, 4097, 2000, 616}
	const count = 600
	sizeOf := func(i int) int { return sizes[(i*7+i/len(sizes))%len(sizes)] }
	for _, mode := range []string{"spin", "hybrid", "block"} {
		t.Run(mode, func(t *testing.T) {
			opt := runtimetest.Options{Transport: "shm", Timeout: 30 * time.Second, Env: map[string]string{runtime.EnvProgress: mode}}
			runtimetest.Run(t, 2, opt, func(w *runtime.World) error {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				if w.Rank() == 0 {
					for round := 0; round < 2; round++ {
						var reqs []*runtime.Request
						for i := 0; i < count; i++ {
							buf := make([]byte, sizeOf(i))
							pattern(buf, i+round)
							r, err := runtime.Isend(w, buf, 1, 5)
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
						if err := runtime.Barrier(ctx, w); err != nil {
							return err
						}
					}
					if n := runtime.FastboxSent(w, 1); n == 0 {
						return fmt.Errorf("no message went through the fast box")
					}
					return nil
				}
				buf := make([]byte, 70_000)
				for round := 0; round < 2; round++ {
					if round == 0 {
						time.Sleep(20 * time.Millisecond) // the box fills up
					}
					for i := 0; i < count; i++ {
						src := 0
						if i%3 == 1 {
							src = runtime.AnySource
						}
						st, err := runtime.Recv(ctx, w, buf, src, runtime.AnyTag)
						if err != nil {
							return err
						}
						if st.Bytes != sizeOf(i) || st.Tag != 5 || st.Source != 0 {
							return fmt.Errorf("round %d, message %d: status %+v, want %d bytes", round, i, st, sizeOf(i))
						}
						if err := checkPattern(buf[:st.Bytes], i+round); err != nil {
							return fmt.Errorf("round %d, message %d: %w", round, i, err)
						}
					}
					if err := runtime.Barrier(ctx, w); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}

// TestFastboxPingPong sends small messages back and forth between four ranks on the fast
// boxes in block mode, where every message must wake a sleeping receiver.
func TestFastboxPingPong(t *testing.T) {
	opt := runtimetest.Options{Transport: "shm", Timeout: 30 * time.Second, Env: map[string]string{runtime.EnvProgress: "block"}}
	runtimetest.Run(t, 4, opt, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		peer := w.Rank() ^ 1
		buf := []int64{0}
		for i := int64(0); i < 300; i++ {
			if w.Rank()&1 == 0 {
				buf[0] = i
				if err := runtime.Send(ctx, w, buf, peer, 0); err != nil {
					return err
				}
				if _, err := runtime.Recv(ctx, w, buf, peer, 0); err != nil {
					return err
				}
				if buf[0] != -i {
					return fmt.Errorf("round %d: got %d back", i, buf[0])
				}
				continue
			}
			if _, err := runtime.Recv(ctx, w, buf, peer, 0); err != nil {
				return err
			}
			if buf[0] != i {
				return fmt.Errorf("round %d: got %d", i, buf[0])
			}
			buf[0] = -i
			if err := runtime.Send(ctx, w, buf, peer, 0); err != nil {
				return err
			}
		}
		if runtime.FastboxSent(w, peer) < 300 {
			return fmt.Errorf("only %d of 300 messages went through the fast box", runtime.FastboxSent(w, peer))
		}
		return nil
	})
}
