package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

func main() {
	timeout := 2 * time.Minute
	if len(os.Args) > 1 && os.Args[1] == "fill" {
		timeout = 30 * time.Minute // 64 ranks on two cores, under --trace
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "obsprog:", err)
		os.Exit(1)
	}
	mode := run
	switch {
	case len(os.Args) > 1 && os.Args[1] == "ft":
		mode = ft
	case len(os.Args) > 2 && os.Args[1] == "fill":
		rounds, err := strconv.Atoi(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, "obsprog: fill ROUNDS:", err)
			os.Exit(2)
		}
		mode = func(ctx context.Context, w *runtime.World) error { return fill(ctx, w, rounds) }
	case len(os.Args) > 3 && os.Args[1] == "crash":
		victim, err := strconv.Atoi(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, "obsprog: crash VICTIM HOW:", err)
			os.Exit(2)
		}
		mode = func(ctx context.Context, w *runtime.World) error { return crash(ctx, w, victim, os.Args[3]) }
	case len(os.Args) > 2 && os.Args[1] == "untilgone":
		mode = func(ctx context.Context, w *runtime.World) error { return untilGone(ctx, w, os.Args[2]) }
	}
	if err := mode(ctx, w); err != nil {
		fmt.Fprintf(os.Stderr, "obsprog: rank %d: %v\n", w.Rank(), err)
		w.Abort(1, err.Error())
	}
	start := time.Now()
	if err := w.Finalize(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "obsprog: rank %d: finalize: %v\n", w.Rank(), err)
		os.Exit(1)
	}
	if len(os.Args) > 2 && os.Args[1] == "fill" {
		fmt.Printf("fill %d %.3f\n", w.Rank(), time.Since(start).Seconds())
	}
	fmt.Printf("obsprog: rank %d finalized\n", w.Rank())
	if w.Rank() == 0 {
		fmt.Println("obsprog: ok")
	}
}

func run(ctx context.Context, w *runtime.World) error {
	me, n := w.Rank(), w.Size()
	right, left := (me+1)%n, (me+n-1)%n
	if len(os.Args) > 1 && os.Args[1] == "deadlock" {
		// Every rank sends right by rendezvous before any receives: none returns.
		if err := runtime.Send(ctx, w, []byte("ok"), right, 7); err != nil {
			return err
		}
		return runtime.Send(ctx, w, make([]byte, 1<<20), right, 7)
	}
	small := make([]byte, 100)
	for _, tag := range []int{3, 2, 1} {
		small[0] = byte(tag)
		if err := runtime.Send(ctx, w, small, right, tag); err != nil {
			return err
		}
	}
	for _, tag := range []int{1, 2, 3} {
		if _, err := runtime.Recv(ctx, w, small, left, tag); err != nil {
			return err
		}
		if small[0] != byte(tag) {
			return fmt.Errorf("tag %d carried %d", tag, small[0])
		}
	}
	big, got := make([]byte, 1<<20), make([]byte, 1<<20)
	r, err := runtime.Irecv(w, got, runtime.AnySource, 4)
	if err != nil {
		return err
	}
	if err := runtime.Send(ctx, w, big, right, 4); err != nil {
		return err
	}
	if _, err := r.Wait(ctx); err != nil {
		return err
	}
	out, in := make([]int64, 2), make([]int64, 2)
	var rs []*runtime.Request
	for i, peer := range []int{right, left} {
		r, err := runtime.Irecv(w, in[i:i+1], peer, 5)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	for i, peer := range []int{right, left} {
		r, err := runtime.Isend(w, out[i:i+1], peer, 5)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	if err := runtime.WaitAll(ctx, rs, nil); err != nil {
		return err
	}
	pair := []int32{int32(me)}
	if _, err := runtime.Sendrecv(ctx, w, pair, right, 8, pair, left, 8); err != nil {
		return err
	}
	sr, err := runtime.Irecv(w, pair, left, 9)
	if err != nil {
		return err
	}
	if err := runtime.Ssend(ctx, w, []int32{int32(me)}, right, 9); err != nil {
		return err
	}
	if _, err := sr.Wait(ctx); err != nil {
		return err
	}
	self := make([]byte, 16)
	if err := runtime.Send(ctx, w, self, me, 6); err != nil {
		return err
	}
	if _, err := runtime.Recv(ctx, w, self, me, 6); err != nil {
		return err
	}
	x, sum := make([]float64, 256), make([]float64, 256)
	end := runtime.TraceRegion(ctx, w, "reduce phase")
	err = collectives.Allreduce(ctx, w, x, sum, collectives.Sum[float64]())
	end()
	if err != nil {
		return err
	}
	win, err := window.Allocate[byte](ctx, w, 512)
	if err != nil {
		return err
	}
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	if err := win.Put(make([]byte, 512), right, 0); err != nil {
		return err
	}
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	if err := win.Free(ctx); err != nil {
		return err
	}
	half, err := w.Split(ctx, me%2, me)
	if err != nil {
		return err
	}
	if err := runtime.Barrier(ctx, half); err != nil {
		return err
	}
	if err := half.Free(); err != nil {
		return err
	}
	return runtime.Barrier(ctx, w) // numbered after the Free's marks
}
