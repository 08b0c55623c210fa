package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
	"github.com/gorma-hpc/gorma/window"
)

func main() {
	size := flag.Int("size", 0, "the World size every rank must see (0: any)")
	timeout := flag.Duration("timeout", time.Minute, "bound on the whole run")
	abort := flag.Int("abort", -1, "this rank calls Abort(3) once every rank finished Init; the others wait in a Barrier")
	kill := flag.Int("kill", -1, "under GORMA_FT=1: this rank SIGKILLs itself after Init; the others shrink their World and check it")
	teams := flag.Bool("teams", false, "run a Barrier and an Allreduce, print \"connections RANK N\" and end (the host's teams decide N)")
	allreduces := flag.Int("allreduces", 0, "run this many Allreduces of 8 B and of 64 KiB, checking each, print \"allreduces RANK N\" and end")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	w, err := runtime.Init(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pmiworld: init: %v\n", err)
		os.Exit(1)
	}
	if *abort >= 0 {
		abortJob(ctx, w, *abort)
	}
	if *teams {
		connections(ctx, w)
		return
	}
	if *allreduces > 0 {
		loop(ctx, w, *allreduces)
		return
	}
	if *kill >= 0 {
		w = survive(ctx, w, *kill)
		*size--
	}
	line, err := check(ctx, w, *size)
	if err == nil {
		err = w.Finalize(ctx)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "pmiworld: rank %d of %d: %v\n", w.Rank(), w.Size(), err)
		os.Exit(1)
	}
	if w.Rank() == 0 {
		fmt.Println(line)
	}
}

// check runs every check and returns rank 0's summary line.
func check(ctx context.Context, w *runtime.World, want int) (string, error) {
	me, size := w.Rank(), w.Size()
	if want > 0 && size != want {
		return "", fmt.Errorf("world size %d, want %d (one world per rank: was the PMI server not detected?)", size, want)
	}
	if err := checkRanks(ctx, w); err != nil {
		return "", err
	}
	if err := putRing(ctx, w); err != nil {
		return "", err
	}
	sum := []int64{0}
	if err := collectives.Allreduce(ctx, w, []int64{int64(me + 1)}, sum, collectives.Sum[int64]()); err != nil {
		return "", fmt.Errorf("allreduce: %w", err)
	}
	if got, exp := sum[0], int64(size*(size+1)/2); got != exp {
		return "", fmt.Errorf("allreduce of rank+1 gave %d, want %d", got, exp)
	}
	return summary(ctx, w)
}

// checkRanks checks that the ranks are 0..size-1, each once: every rank sets its bit of
// a bitmap, and a sum Allreduce of the bitmaps must have every bit exactly once.
func checkRanks(ctx context.Context, w *runtime.World) error {
	me, size := w.Rank(), w.Size()
	if me < 0 || me >= size {
		return fmt.Errorf("rank %d out of [0, %d)", me, size)
	}
	mine, bits := make([]int64, size), make([]int64, size)
	mine[me] = 1
	if err := collectives.Allreduce(ctx, w, mine, bits, collectives.Sum[int64]()); err != nil {
		return fmt.Errorf("allreduce of the rank bitmap: %w", err)
	}
	for r, n := range bits {
		if n != 1 {
			return fmt.Errorf("rank %d is held by %d processes, want 1", r, n)
		}
	}
	return nil
}

// putRing has every rank Put its rank into the next rank's window, Fence, and check what
// the previous rank put.
func putRing(ctx context.Context, w *runtime.World) error {
	me, size := w.Rank(), w.Size()
	win, err := window.Allocate[int64](ctx, w, 2)
	if err != nil {
		return fmt.Errorf("window: %w", err)
	}
	if err := win.Fence(ctx, 0); err != nil {
		return fmt.Errorf("window fence: %w", err)
	}
	next, prev := (me+1)%size, (me+size-1)%size
	if err := win.Put([]int64{int64(me), 1000 + int64(me)}, next, 0); err != nil {
		return fmt.Errorf("put to rank %d: %w", next, err)
	}
	if err := win.Fence(ctx, window.NoSucceed); err != nil {
		return fmt.Errorf("window fence: %w", err)
	}
	if got := win.Local(); got[0] != int64(prev) || got[1] != 1000+int64(prev) {
		return fmt.Errorf("window holds %v after the ring of Puts, want [%d %d] from rank %d", got, prev, 1000+prev, prev)
	}
	if err := win.Free(ctx); err != nil {
		return errors.Join(errors.New("window free"), err)
	}
	return nil
}

// summary counts the hosts and the transports this rank uses, for rank 0's line.
func summary(ctx context.Context, w *runtime.World) (string, error) {
	hosts := map[string]bool{}
	count := map[string]int{}
	for r := range w.Size() {
		hosts[w.HostOf(r)] = true
		if r != w.Rank() {
			count[w.Transport(r)]++
		}
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return "", fmt.Errorf("barrier: %w", err)
	}
	return fmt.Sprintf("pmiworld: ok: %d ranks, %d hosts, transports shm=%d tcp=%d, local size %d, connections %d",
		w.Size(), len(hosts), count["shm"], count["tcp"], w.LocalSize(), substrate.Connections(w)), nil
}

// abortJob has rank r Abort the job with code 3 while the others wait in a Barrier,
// which the abort must end (the process manager kills them, or the Barrier fails). A
// first Barrier makes sure every rank finished Init: a rank still mapping rank r's
// memory when r exits would fail its own Init and race the abort for the job's code.
func abortJob(ctx context.Context, w *runtime.World, r int) {
	if err := runtime.Barrier(ctx, w); err != nil {
		fmt.Fprintf(os.Stderr, "pmiworld: rank %d: barrier before the abort: %v\n", w.Rank(), err)
		os.Exit(1)
	}
	if w.Rank() == r {
		w.Abort(3, fmt.Sprintf("pmiworld: rank %d aborts on purpose", r))
	}
	err := runtime.Barrier(ctx, w)
	fmt.Fprintf(os.Stderr, "pmiworld: rank %d: barrier after rank %d's Abort returned %v\n", w.Rank(), r, err)
	os.Exit(1)
}

// survive has rank r SIGKILL itself while the others wait in a Barrier, which fails. A
// foreign process manager tells no rank of the death, so a rank whose Barrier saw it
// revokes the World, which ends the others' Barrier too. They then shrink Init's World
// as a ULFM program does and return the shrunk World.
func survive(ctx context.Context, w *runtime.World, r int) *runtime.World {
	// A first Barrier over every rank: the victim has no request to its process manager
	// under way when it dies (Hydra's proxy fails on an answer it cannot deliver). A rank
	// may still see the death in it, when the victim left it first.
	err := runtime.Barrier(ctx, w)
	if err == nil && w.Rank() == r {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	if err == nil {
		err = runtime.Barrier(ctx, w)
	}
	if !errors.Is(err, runtime.ErrProcFailed) && !errors.Is(err, runtime.ErrRevoked) {
		fmt.Fprintf(os.Stderr, "pmiworld: rank %d: Barrier across rank %d's death: %v, want ErrProcFailed or ErrRevoked\n", w.Rank(), r, err)
		os.Exit(1)
	}
	w.Revoke()
	s, err := w.Shrink(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pmiworld: rank %d: shrink: %v\n", w.Rank(), err)
		os.Exit(1)
	}
	return s
}

// connections runs a Barrier and an Allreduce, prints how many ranks this rank connected
// to, and finalizes: a rank of a host run in teams connects only to its team and, as a
// head, to the other heads.
// loop runs n Allreduces of 1 and of 8192 float64s, checks every sum, prints
// "allreduces RANK N" and finalizes.
func loop(ctx context.Context, w *runtime.World, n int) {
	err := func() error {
		size := float64(w.Size())
		for _, count := range []int{1, 8192} {
			v, sum := make([]float64, count), make([]float64, count)
			for i := range n {
				for j := range v {
					v[j] = float64(w.Rank() + i + j)
				}
				if err := collectives.Allreduce(ctx, w, v, sum, collectives.Sum[float64]()); err != nil {
					return err
				}
				for j, got := range sum {
					if want := size*(size-1)/2 + size*float64(i+j); got != want {
						return fmt.Errorf("allreduce %d of %d elements: element %d is %v, want %v", i, count, j, got, want)
					}
				}
			}
		}
		fmt.Printf("allreduces %d %d\n", w.Rank(), n)
		return w.Finalize(ctx)
	}()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pmiworld: rank %d: %v\n", w.Rank(), err)
		os.Exit(1)
	}
}

func connections(ctx context.Context, w *runtime.World) {
	v, sum := []float64{float64(w.Rank())}, []float64{0}
	err := collectives.Barrier(ctx, w)
	if err == nil {
		err = collectives.Allreduce(ctx, w, v, sum, collectives.Sum[float64]())
	}
	if n := float64(w.Size()); err == nil && sum[0] != n*(n-1)/2 {
		err = fmt.Errorf("the Allreduce of the ranks gave %v, want %v", sum[0], n*(n-1)/2)
	}
	if err == nil {
		fmt.Printf("connections %d %d\n", w.Rank(), substrate.Connections(w))
		err = w.Finalize(ctx)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "pmiworld: rank %d: %v\n", w.Rank(), err)
		os.Exit(1)
	}
}
