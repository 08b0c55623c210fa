package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	w, err := runtime.Init(ctx)
	if err != nil {
		return err
	}
	rank, size := w.Rank(), w.Size()
	next, prev := (rank+1)%size, (rank+size-1)%size
	fmt.Printf("hello from rank %d of %d on host %s (pid %d, local rank %d of %d, transport to the next rank: %s)\n",
		rank, size, w.Host(), os.Getpid(), w.LocalRank(), w.LocalSize(), w.Transport(next))

	token := []int64{0}
	if rank == 0 {
		if err := runtime.Send(ctx, w, token, next, 0); err != nil {
			return fmt.Errorf("send the token to rank %d: %w", next, err)
		}
	}
	if _, err := runtime.Recv(ctx, w, token, prev, 0); err != nil {
		return fmt.Errorf("receive the token from rank %d: %w", prev, err)
	}
	if rank != 0 {
		token[0] += int64(rank)
		if err := runtime.Send(ctx, w, token, next, 0); err != nil {
			return fmt.Errorf("send the token to rank %d: %w", next, err)
		}
	} else {
		want := int64(size) * int64(size-1) / 2
		fmt.Printf("token came back around the ring of %d ranks: %d (want %d)\n", size, token[0], want)
		if token[0] != want {
			return fmt.Errorf("token %d, want %d", token[0], want)
		}
	}
	if err := runtime.Barrier(ctx, w); err != nil {
		return err
	}
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return w.Finalize(fctx)
}
