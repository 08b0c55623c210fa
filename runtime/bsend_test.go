package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// TestBsendSizing: a buffer sized by MPI's rule (each message's bytes plus BsendOverhead)
// holds a message of every length from 0 to 17 bytes, and the messages of lengths 1 to
// 17 all at once; a further message does not fit. The eager limit is 0, so that every
// buffered message but an empty one stays in flight until its receive is posted. It runs on the World, a
// split World and an intercommunicator.
func TestBsendSizing(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			opt := runtimetest.Options{Transport: tr, Timeout: 30 * time.Second, Env: map[string]string{runtime.EnvEagerLimit: "0"}}
			runtimetest.Run(t, 4, opt, func(w *runtime.World) error {
				ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(20*time.Second))
				defer cancel()
				ic, local, _, err := parityIntercomm(ctx, w)
				if err != nil {
					return err
				}
				ring := func(c *runtime.World) (to, from int) {
					return (c.Rank() + 1) % c.Size(), (c.Rank() + c.Size() - 1) % c.Size()
				}
				lt, lf := ring(local)
				wt, wf := ring(w)
				for _, k := range []struct {
					name     string
					c        *runtime.World
					to, from int
				}{
					{"world", w, wt, wf},
					{"split", local, lt, lf},
					{"inter", ic, ic.Rank(), ic.Rank()}, // the parity groups are equally large
				} {
					if err := checkBsendSizing(ctx, k.c, k.to, k.from); err != nil {
						return fmt.Errorf("%s, rank %d: %w", k.name, k.c.Rank(), err)
					}
				}
				return errors.Join(ic.Free(), local.Free())
			})
		})
	}
}

// message is the n-byte message with tag i.
func message(n, i int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i*31 + j)
	}
	return b
}

// checkBsendSizing Bsends to rank to of c and receives from rank from.
func checkBsendSizing(ctx context.Context, c *runtime.World, to, from int) error {
	recvAll := func(lens []int) error {
		for i, n := range lens {
			got := make([]byte, n+1)
			st, err := runtime.Recv(ctx, c, got, from, i)
			if err != nil {
				return err
			}
			if want := message(n, i); st.Bytes != n || string(got[:n]) != string(want) {
				return fmt.Errorf("message %d: %d bytes %v, want %v", i, st.Bytes, got[:st.Bytes], want)
			}
		}
		return nil
	}
	full := func(what string) error {
		err := runtime.Bsend(c, []byte{1}, to, 99)
		if !errors.Is(err, runtime.ErrInvalid) {
			return fmt.Errorf("%s: a further 1-byte message: %v, want ErrInvalid (the buffer is full)", what, err)
		}
		return nil
	}

	// One message of each length in a buffer of its length plus BsendOverhead.
	for n := range 18 {
		if err := runtime.BufferAttach(c, make([]byte, n+runtime.BsendOverhead)); err != nil {
			return err
		}
		if err := runtime.Bsend(c, message(n, 0), to, 0); err != nil {
			return fmt.Errorf("a %d-byte Bsend into %d+BsendOverhead bytes: %w", n, n, err)
		}
		if n > 0 { // an empty message is eager: its send has completed
			if err := full(fmt.Sprintf("after %d bytes", n)); err != nil {
				return err
			}
		}
		if err := recvAll([]int{n}); err != nil {
			return err
		}
		if _, err := runtime.BufferDetach(ctx, c); err != nil {
			return err
		}
	}

	// The messages of 1 to 17 bytes at once, in a buffer sized for them; the space left
	// (their lengths' remainders modulo 8: 57 bytes) holds no further message.
	var lens []int
	size := 0
	for n := 1; n <= 17; n++ {
		lens = append(lens, n)
		size += n + runtime.BsendOverhead
	}
	if err := runtime.BufferAttach(c, make([]byte, size)); err != nil {
		return err
	}
	for i, n := range lens {
		if err := runtime.Bsend(c, message(n, i), to, i); err != nil {
			return fmt.Errorf("message %d of %d bytes into a buffer for all %d: %w", i, n, len(lens), err)
		}
	}
	if err := full("after 17 messages"); err != nil {
		return err
	}
	if err := recvAll(lens); err != nil {
		return err
	}
	_, err := runtime.BufferDetach(ctx, c)
	return err
}
