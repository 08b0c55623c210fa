package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
)

// Behaviours (argument 1):
//
//	barrier VICTIM  every rank prints "ready RANK PID"; rank VICTIM then sleeps, the others
//	                block in Barrier
//	recv VICTIM     like barrier, but the others block in Recv of a 4 MiB message: even
//	                ranks from VICTIM, odd ranks from AnySource
//	serve           every rank prints "ready RANK PID"; rank 0 waits for a line on its
//	                stdin, then all meet in a Barrier, pass a token around the ring,
//	                print "done RANK" and finalize
//
// In barrier and recv modes the ranks ignore SIGTERM and SIGINT: they end only when their
// blocked call fails (printing "rtprog: rank R: ERROR" on stderr and exiting 1), or by
// SIGKILL. A test with a long --grace thereby checks that the runtime itself noticed.
func main() {
	if len(os.Args) < 2 {
		fail("usage: rtprog MODE [ARGS]")
	}
	mode := os.Args[1]
	if mode == "barrier" || mode == "recv" {
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
	}
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fail("init: %v", err)
	}
	rank, size := w.Rank(), w.Size()
	fmt.Printf("ready %d %d\n", rank, os.Getpid())
	switch mode {
	case "barrier", "recv":
		if len(os.Args) < 3 {
			fail("usage: rtprog %s VICTIM", mode)
		}
		victim, _ := strconv.Atoi(os.Args[2])
		if rank == victim {
			time.Sleep(time.Hour)
			fail("victim not killed")
		}
		if mode == "barrier" {
			err = runtime.Barrier(ctx, w)
		} else {
			src := victim
			if rank%2 == 1 {
				src = runtime.AnySource
			}
			_, err = runtime.Recv(ctx, w, make([]byte, 4<<20), src, 0)
		}
		if err != nil {
			fail("rank %d: %v", rank, err)
		}
		fail("rank %d: %s returned without error", rank, mode)
	case "serve":
		if rank == 0 {
			if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
				fail("rank 0: stdin: %v", err)
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			fail("rank %d: barrier: %v", rank, err)
		}
		token := []int64{0}
		next, prev := (rank+1)%size, (rank+size-1)%size
		if rank == 0 {
			if err := runtime.Send(ctx, w, token, next, 0); err != nil {
				fail("rank 0: send: %v", err)
			}
		}
		if _, err := runtime.Recv(ctx, w, token, prev, 0); err != nil {
			fail("rank %d: recv: %v", rank, err)
		}
		if rank != 0 {
			token[0] += int64(rank)
			if err := runtime.Send(ctx, w, token, next, 0); err != nil {
				fail("rank %d: send: %v", rank, err)
			}
		} else if want := int64(size) * int64(size-1) / 2; token[0] != want {
			fail("rank 0: token %d, want %d", token[0], want)
		}
		fmt.Printf("done %d\n", rank)
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := w.Finalize(fctx); err != nil {
			fail("rank %d: finalize: %v", rank, err)
		}
	default:
		fail("unknown mode %q", mode)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rtprog: "+format+"\n", args...)
	os.Exit(1)
}
