package runtime_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/internal/testbudget"
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
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
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

// TestFastboxStalePayload plants, in the second cell of a two-cell message, the header of
// a record that would be valid one lap later at that cell (the seq word it would carry,
// this world's context, tag 77, no payload), then sends one-cell messages in lockstep
// until the receiver's position reaches that cell again, and a last message with tag 9.
// The receiver must get the real messages only: if the planted words survived the first
// message (the receiver must zero a later cell's seq word when it takes a record), the
// receiver takes them for a message of tag 77 or loses its place in the box.
func TestFastboxStalePayload(t *testing.T) {
	const cells, cellSize, recHdr = runtime.FastboxCells, runtime.FastboxCellSize, runtime.FastboxRecHdr
	opt := runtimetest.Options{Transport: "shm", Timeout: 30 * time.Second}
	runtimetest.Run(t, 2, opt, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
		defer cancel()
		one := []byte{1, 2, 3, 4, 5, 6, 7, 8}
		ack := []byte{0}
		if w.Rank() == 1 {
			buf := make([]byte, 2*cellSize)
			for i := 0; ; i++ {
				st, err := runtime.Recv(ctx, w, buf, 0, runtime.AnyTag)
				if err != nil {
					return err
				}
				if st.Tag == 9 {
					return nil
				}
				if st.Tag != 5 {
					return fmt.Errorf("message %d: tag %d (%d bytes), want 5: a stale record was taken", i, st.Tag, st.Bytes)
				}
				if err := runtime.Send(ctx, w, ack, 0, 6); err != nil {
					return err
				}
			}
		}
		send := func(b []byte, tag int) error {
			if err := runtime.Send(ctx, w, b, 1, tag); err != nil {
				return err
			}
			if tag == 9 {
				return nil
			}
			_, err := runtime.Recv(ctx, w, ack, 1, 6)
			return err
		}
		pos := runtime.FastboxSent(w, 1)
		if pos%cells == cells-1 { // the two-cell record must not need a pad
			if err := send(one, 5); err != nil {
				return err
			}
			pos++
		}
		long := make([]byte, cellSize) // two cells: the second starts at payload byte cellSize-recHdr
		h := long[cellSize-recHdr:]
		binary.LittleEndian.PutUint64(h[0:], pos+1+cells+1) // the seq of position pos+1+cells
		binary.LittleEndian.PutUint32(h[8:], 77)
		binary.LittleEndian.PutUint16(h[12:], 0)
		binary.LittleEndian.PutUint16(h[14:], runtime.Context(w))
		binary.LittleEndian.PutUint64(h[16:], 0)
		if err := send(long, 5); err != nil {
			return err
		}
		for runtime.FastboxSent(w, 1) < pos+1+cells {
			if err := send(one, 5); err != nil {
				return err
			}
		}
		if got := runtime.FastboxSent(w, 1); got != pos+1+cells {
			return fmt.Errorf("box position %d, want %d: the messages did not all take the box", got, pos+1+cells)
		}
		return send(one, 9)
	})
}

// TestFastboxPingPong sends small messages back and forth between four ranks on the fast
// boxes in block mode, where every message must wake a sleeping receiver.
func TestFastboxPingPong(t *testing.T) {
	opt := runtimetest.Options{Transport: "shm", Timeout: 30 * time.Second, Env: map[string]string{runtime.EnvProgress: "block"}}
	runtimetest.Run(t, 4, opt, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
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

// TestFastboxFreshUntouched: a box carved from fresh arena memory is not cleared, so the
// pages of cells that no message has reached are not faulted in. After one message each
// way the last page of cells of each box is still absent from its memfd (mincore).
func TestFastboxFreshUntouched(t *testing.T) {
	opt := runtimetest.Options{Transport: "shm", Timeout: 30 * time.Second}
	runtimetest.Run(t, 2, opt, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
		defer cancel()
		peer := w.Rank() ^ 1
		buf := []int64{int64(w.Rank())}
		if err := runtime.Send(ctx, w, buf, peer, 0); err != nil {
			return err
		}
		if _, err := runtime.Recv(ctx, w, buf, peer, 0); err != nil {
			return err
		}
		box, pos := runtime.FastboxIn(w, peer)
		if box == nil {
			return fmt.Errorf("no fast box from rank %d", peer)
		}
		pg := os.Getpagesize()
		base := uintptr(unsafe.Pointer(&box[0]))
		first := int((base+uintptr(len(box))-1)&^uintptr(pg-1) - base) // the box's last page
		if first <= runtime.FastboxHdrSize {
			return fmt.Errorf("box at %#x of %d bytes: its last page holds its first cell", base, len(box))
		}
		// The receiver reads one cell ahead of its position; a cell on the last page was
		// reached only if the position came within a cell of it.
		reached := uint64(first-runtime.FastboxHdrSize) / runtime.FastboxCellSize
		if pos+1 >= reached {
			return fmt.Errorf("%d cells of rank %d's box read before the check: too many to test", pos, peer)
		}
		vec := make([]byte, 1)
		last := box[first:]
		if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&last[0])), uintptr(len(last)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
			return fmt.Errorf("mincore: %w", errno)
		}
		if vec[0]&1 != 0 {
			return fmt.Errorf("the last page of rank %d's box is resident with %d cells read: the box was cleared", peer, pos)
		}
		return nil
	})
}

// TestFastboxIdleUntouched: two ranks connected but never sending to each other do not
// read each other's fast box while they wait, so no page of it is faulted in (fastbox.go,
// "Pages"). Ranks 0 and 2 connect and wait in receives that time out; rank 1 sends them
// nothing either. Then each checks the page holding the box's first cell (mincore).
func TestFastboxIdleUntouched(t *testing.T) {
	opt := runtimetest.Options{Transport: "shm", Timeout: 30 * time.Second}
	runtimetest.Run(t, 3, opt, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
		defer cancel()
		if w.Rank() == 1 {
			return nil
		}
		peer := 2 - w.Rank()
		if err := runtime.ConnectPeer(ctx, w, peer); err != nil {
			return err
		}
		box, _ := runtime.FastboxIn(w, peer)
		if box == nil {
			return fmt.Errorf("no fast box from rank %d", peer)
		}
		wait, stop := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err := runtime.Recv(wait, w, []int64{0}, peer, 0)
		stop()
		if err == nil {
			return fmt.Errorf("received a message that rank %d never sent", peer)
		}
		pg := os.Getpagesize()
		cell := box[runtime.FastboxHdrSize:]
		addr := uintptr(unsafe.Pointer(&cell[0])) &^ uintptr(pg-1)
		vec := []byte{0}
		if _, _, errno := unix.Syscall(unix.SYS_MINCORE, addr, uintptr(pg), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
			return fmt.Errorf("mincore: %w", errno)
		}
		if vec[0]&1 != 0 {
			return fmt.Errorf("rank %d's box, which it never wrote, is resident here: it was read", peer)
		}
		return nil
	})
}
