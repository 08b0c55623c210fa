package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/transport/sockets"
)

// Arith is the net/rpc service of TestWorldRPC.
type Arith struct{ rank int }

// Args are Arith.Mul's arguments.
type Args struct{ A, B int }

// Mul multiplies, and says which rank did.
func (a *Arith) Mul(args Args, reply *string) error {
	*reply = fmt.Sprintf("%d by rank %d", args.A*args.B, a.rank)
	return nil
}

// TestWorldRPC: rank 0 serves net/rpc on a rank listener; the other ranks, on its host
// (over shm) and on another (over tcp), dial it (before it listens, too) and call it,
// unchanged net/rpc code.
func TestWorldRPC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	pm := newAgentPM(t, 3, "(vector,(0,1,2),(1,1,1))")
	worlds := startFake(t, ctx, pm, []string{"a", "a", "b"})
	runAll(t, worlds, func(w *World) error {
		if w.Rank() == 0 {
			time.Sleep(20 * time.Millisecond) // the others dial before the listener exists
			ln, err := w.Listen("rpc")
			if err != nil {
				return err
			}
			srv := rpc.NewServer()
			if err := srv.Register(&Arith{rank: 0}); err != nil {
				return err
			}
			for range 2 {
				c, err := ln.Accept()
				if err != nil {
					return err
				}
				go srv.ServeConn(c)
			}
			return ln.Close()
		}
		c, err := w.Dial(ctx, 0, "rpc")
		if err != nil {
			return err
		}
		_, shm := c.(*sockets.Conn)
		if want := w.Rank() == 1; shm != want {
			return fmt.Errorf("a %T to rank 0, want shm %v", c, want)
		}
		client := rpc.NewClient(c)
		defer client.Close()
		var got string
		if err := client.Call("Arith.Mul", Args{w.Rank(), 7}, &got); err != nil {
			return err
		}
		if want := fmt.Sprintf("%d by rank 0", 7*w.Rank()); got != want {
			return fmt.Errorf("got %q, want %q", got, want)
		}
		return nil
	})
	runAll(t, worlds, func(w *World) error { return w.Finalize(ctx) })
}

// TestWorldStreamSemantics: a stream carries bytes both ways with half-close and
// deadlines; a closed listener's Accept fails with net.ErrClosed; a second listener of
// the same name, a bad name and a missing listener are clear errors.
func TestWorldStreamSemantics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	pm := newAgentPM(t, 2, "(vector,(0,1,2))")
	worlds := startFake(t, ctx, pm, make([]string, 2))
	w0, w1 := worlds[0], worlds[1]
	ln, err := w0.Listen("echo")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w0.Listen("echo"); !errors.Is(err, ErrInvalid) {
		t.Errorf("second Listen of one name: %v, want ErrInvalid", err)
	}
	if _, err := w0.Listen("two words"); !errors.Is(err, ErrInvalid) {
		t.Errorf("Listen with a space in the name: %v, want ErrInvalid", err)
	}
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, err = io.Copy(c, c) // echo until the dialer's half-close
			c.Close()
		}
		done <- err
	}()
	c, err := w1.Dial(ctx, 0, "echo")
	if err != nil {
		t.Fatal(err)
	}
	if got := ln.Addr().String(); got != "rank 0/echo" {
		t.Errorf("listener address %q", got)
	}
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read past its deadline: %v", err)
	}
	c.SetReadDeadline(time.Time{})
	msg := strings.Repeat("gorma ", 100_000)
	go func() {
		io.WriteString(c, msg)
		c.(interface{ CloseWrite() error }).CloseWrite()
	}()
	back, err := io.ReadAll(c)
	if err != nil || string(back) != msg {
		t.Errorf("echo: %d bytes back of %d, %v", len(back), len(msg), err)
	}
	if err := <-done; err != nil {
		t.Errorf("echo server: %v", err)
	}
	c.Close()
	ln.Close()
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
	short, scancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = w1.Dial(short, 0, "nobody")
	scancel()
	if err == nil || !strings.Contains(err.Error(), `no listener named "nobody"`) {
		t.Errorf("dial of a missing listener: %v", err)
	}
	ringAndFinalize(t, ctx, worlds)
}
