package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// The pattern's sizes, as pattern.c has them.
const (
	ringBytes  = 1000
	ringRounds = 3
	ringTag    = 7
	reduceLen  = 256  // float64 elements
	winBytes   = 4096 // per rank
	putBytes   = 512
)

// step is one part of the pattern; it returns an error naming what differs.
type step struct {
	name string
	run  func(ctx context.Context, w *runtime.World) error
}

var steps = []step{{"ring", ring}, {"allreduce", allreduce}, {"alltoallv", alltoallv}, {"put", put}}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(2*time.Minute))
	defer cancel()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "profprog:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	w, err := runtime.Init(ctx)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if w.Size() < 2 {
		return fmt.Errorf("rank %d: %d rank(s): the pattern needs 2 or more", w.Rank(), w.Size())
	}
	for _, s := range steps {
		if err := s.run(ctx, w); err != nil {
			return fmt.Errorf("rank %d: %s: %w", w.Rank(), s.name, err)
		}
	}
	fmt.Printf("profprog ok rank %d of %d\n", w.Rank(), w.Size())
	if err := w.Finalize(ctx); err != nil {
		return fmt.Errorf("rank %d: finalize: %w", w.Rank(), err)
	}
	return nil
}

// fill returns n bytes that rank r sends in round k.
func fill(n, r, k int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r*31 + k*7 + i)
	}
	return b
}

// ring sends ringRounds messages of ringBytes to the right neighbour and receives as many
// from the left one.
func ring(ctx context.Context, w *runtime.World) error {
	me, n := w.Rank(), w.Size()
	right, left := (me+1)%n, (me+n-1)%n
	got := make([]byte, ringBytes)
	for k := range ringRounds {
		send := func() error { return runtime.Send(ctx, w, fill(ringBytes, me, k), right, ringTag) }
		recv := func() error {
			st, err := runtime.Recv(ctx, w, got, left, ringTag)
			if err != nil {
				return err
			}
			if st.Count != ringBytes || !bytes.Equal(got, fill(ringBytes, left, k)) {
				return fmt.Errorf("round %d: %d bytes from rank %d differ from what it sent", k, st.Count, left)
			}
			return nil
		}
		first, second := send, recv
		if me%2 == 1 {
			first, second = recv, send
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
	}
	return nil
}

// allreduce sums v[i] = rank + i over the ranks.
func allreduce(ctx context.Context, w *runtime.World) error {
	me, n := w.Rank(), w.Size()
	v, s := make([]float64, reduceLen), make([]float64, reduceLen)
	for i := range v {
		v[i] = float64(me + i)
	}
	if err := collectives.Allreduce(ctx, w, v, s, collectives.Sum[float64]()); err != nil {
		return err
	}
	for i, x := range s {
		if want := float64(n*(n-1)/2 + n*i); x != want {
			return fmt.Errorf("element %d is %v, want %v", i, x, want)
		}
	}
	return nil
}

// alltoallv sends 8(r+1)(d+1) bytes from rank r to rank d, block d filled with byte(r+d).
func alltoallv(ctx context.Context, w *runtime.World) error {
	me, n := w.Rank(), w.Size()
	sc, rc := make([]int, n), make([]int, n)
	var send []byte
	for d := range n {
		sc[d], rc[d] = 8*(me+1)*(d+1), 8*(d+1)*(me+1)
		send = append(send, bytes.Repeat([]byte{byte(me + d)}, sc[d])...)
	}
	recv := make([]byte, len(send))
	if err := collectives.Alltoallv(ctx, w, send, sc, recv, rc); err != nil {
		return err
	}
	at := 0
	for s := range n {
		if want := bytes.Repeat([]byte{byte(s + me)}, rc[s]); !bytes.Equal(recv[at:at+rc[s]], want) {
			return fmt.Errorf("the block from rank %d differs from what it sent", s)
		}
		at += rc[s]
	}
	return nil
}

// put puts putBytes into the right neighbour's window between two Fences and checks
// what the left one put.
func put(ctx context.Context, w *runtime.World) error {
	me, n := w.Rank(), w.Size()
	right, left := (me+1)%n, (me+n-1)%n
	win, err := window.Allocate[byte](ctx, w, winBytes)
	if err != nil {
		return err
	}
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	if err := win.Put(fill(putBytes, me, ringRounds), right, 0); err != nil {
		return err
	}
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	if !bytes.Equal(win.Local()[:putBytes], fill(putBytes, left, ringRounds)) {
		return fmt.Errorf("the %d bytes that rank %d put differ from what it sent", putBytes, left)
	}
	return win.Free(ctx)
}
