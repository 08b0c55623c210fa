package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/rpc"
	"os"
	"os/signal"
	goruntime "runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
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
//	rpc             rank 0 serves net/rpc on World.Listen("rpc"); every other rank dials
//	                it with World.Dial, calls Arith.Mul(rank, 7) and prints
//	                "rpc RANK RESULT"; all finalize
//	allreduce VICTIM MIB
//	                every rank prints "ready RANK PID", then all run Allreduces (Sum) of
//	                MIB MiB of float64 in a loop; after two of them rank VICTIM SIGKILLs
//	                itself a random 0-30 ms into the third. A rank whose Allreduce fails
//	                calls World.Abort(1, ERROR), as an MPI program's error handler would
//	                (apps/allreducebench does)
//	procs           every rank prints "procs RANK GOMAXPROCS LOCALSIZE HOSTCPUS" after Init
//	                (GORMA_PROCS applied) and finalizes
//	deadlock        rank 0 receives from rank 1, which calls Finalize: both wait for ever
//	mismatch        rank 0 calls window.Allocate, the others Allreduce: all wait for ever
//	mismatchroot N  Reduce of N float64s: rank 0 names root 0, the others root 1
//	mismatchgb N    the last rank calls Bcast of N float64s, the others Gather of N float64s,
//	                both with root 0
//	mismatchba N    rank 0 calls Bcast of N float64s with root 0, the others Allreduce (Sum)
//	                of N float64s
//	                In these three modes a rank prints "rtprog: rank R: MODE: the call
//	                returned: ERROR" when its call fails, then waits in runtime.Barrier and
//	                exits 1. A rank whose call returns nil calls collectives.Barrier next and
//	                prints "the call returned nil, the next: ERROR" in the same way. A rank
//	                prints "rtprog: rank R: MODE: buffer written" when its call wrote into
//	                its receive buffer (N float64s by default 1)
//	stranded        every rank prints "ready RANK PID"; rank 0 then sleeps, the others
//	                enter a Barrier (which cannot complete). A rank whose Barrier fails
//	                prints "rtprog: rank R: ERROR" on stderr and then waits for ever, as a
//	                program that does not exit on errors would: only a signal or the
//	                runtime itself ends it
//	panic VICTIM [KEEP]
//	                every rank prints "ready RANK PID"; rank VICTIM then panics
//	                ("rtprog: rank R panics on purpose"), the others block in Barrier.
//	                Rank KEEP (GOLAUNCH_RANK, read before Init) ignores SIGTERM, so that
//	                it outlives the abort's SIGTERM, which ends the others, and prints
//	                what its Barrier failed with
//	crash VICTIM HOW
//	                like panic, but rank VICTIM crashes HOW: panic (a panic), nilwrite (a
//	                write through a nil pointer), fault (a write to a read-only page: the
//	                runtime's "fatal error: fault") or unlock (a sync.Mutex unlocked twice: a
//	                program's fatal error)
//	gone VICTIM [dial]
//	                rank VICTIM exits with code 3 right after Init; every other rank sends
//	                it small messages until a send fails (or, with dial, dials its
//	                listener "gone", which it never opens), prints "rtprog: rank R: send:
//	                ERROR" (or "dial: ERROR") on stderr and exits 1
//	steps N         N steps of an Allreduce of 1 KiB and a Barrier; any error ends the rank
//	                with exit 1; then all finalize
//	busy SECONDS    every rank prints "ready RANK PID", then runs 8-byte Allreduces and
//	                collectives.Barrier for half of SECONDS, and Fence epochs with a Put to
//	                its right neighbour for the other half: on one host, all through shared
//	                memory, no message after the setup. It prints "busy RANK CALLS" and
//	                finalizes
//	ulfm WHAT [ORDER]
//	                under golaunch --ft: the ranks run WHAT until a rank is killed, then
//	                recover with Revoke, Agree and Shrink in ORDER (ulfm.go; by default
//	                agree-shrink)
//
// In barrier, recv and gone modes the ranks ignore SIGTERM and SIGINT: they end only when their
// blocked call fails (printing "rtprog: rank R: ERROR" on stderr and exiting 1), or by
// SIGKILL. A test with a long --grace thereby checks that the runtime itself noticed.
func main() {
	if len(os.Args) < 2 {
		fail("usage: rtprog MODE [ARGS]")
	}
	mode := os.Args[1]
	if mode == "barrier" || mode == "recv" || mode == "gone" {
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
	}
	if mode == "panic" && len(os.Args) > 3 && os.Args[3] == os.Getenv("GOLAUNCH_RANK") {
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
	}
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fail("init: %v", err)
	}
	rank, size := w.Rank(), w.Size()
	if mode != "ulfm" { // it says ready once its window is made
		fmt.Printf("ready %d %d\n", rank, os.Getpid())
	}
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
		fctx, cancel := context.WithTimeout(ctx, testbudget.Scale(30*time.Second))
		defer cancel()
		if err := w.Finalize(fctx); err != nil {
			fail("rank %d: finalize: %v", rank, err)
		}
	case "allreduce":
		if len(os.Args) < 4 {
			fail("usage: rtprog allreduce VICTIM MIB")
		}
		victim, _ := strconv.Atoi(os.Args[2])
		mib, _ := strconv.Atoi(os.Args[3])
		allreduceLoop(ctx, w, victim, mib)
	case "procs":
		fmt.Printf("procs %d %d %d %d\n", rank, goruntime.GOMAXPROCS(0), w.LocalSize(), w.HostCPUs())
		if err := w.Finalize(ctx); err != nil {
			fail("rank %d: finalize: %v", rank, err)
		}
	case "deadlock":
		// Rank 0 waits for a message rank 1 never sends; rank 1 waits in Finalize.
		if rank == 0 {
			_, err = runtime.Recv(ctx, w, make([]int64, 1), 1, 0)
			fail("rank 0: deadlock: Recv returned: %v", err)
		}
		err = w.Finalize(ctx)
		fail("rank %d: deadlock: Finalize returned: %v", rank, err)
	case "mismatch", "mismatchfirst":
		// Rank 0 allocates a window while the others call Allreduce. mismatch allocates
		// one at every rank first: the second's creation makes no collective call on w
		// and waits, while the first's fails at every rank with both calls named.
		if os.Args[1] == "mismatch" {
			if _, err := window.Allocate[int64](ctx, w, 8); err != nil {
				fail("rank %d: mismatch: the first window: %v", rank, err)
			}
		}
		if rank == 0 {
			_, err = window.Allocate[int64](ctx, w, 8)
		} else {
			err = collectives.Allreduce(ctx, w, []float64{1}, make([]float64, 1), collectives.Sum[float64]())
		}
		mismatched(ctx, w, fmt.Sprintf("rank %d: mismatch: the call returned: %v", rank, err), err)
	case "mismatchroot", "mismatchgb", "mismatchba":
		mismatchPair(ctx, w, mode)
	case "mismatchop":
		// The last rank reduces with Max while the others reduce with Sum.
		op := collectives.Sum[float64]()
		if rank == w.Size()-1 {
			op = collectives.Max[float64]()
		}
		err = collectives.Allreduce(ctx, w, []float64{1}, make([]float64, 1), op)
		mismatched(ctx, w, fmt.Sprintf("rank %d: mismatchop: the call returned: %v", rank, err), err)
	case "panic":
		if len(os.Args) < 3 {
			fail("usage: rtprog panic VICTIM")
		}
		victim, _ := strconv.Atoi(os.Args[2])
		if rank == victim {
			panic(fmt.Sprintf("rtprog: rank %d panics on purpose", rank))
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			fail("rank %d: %v", rank, err)
		}
		fail("rank %d: panic: Barrier returned without error", rank)
	case "crash":
		if len(os.Args) < 4 {
			fail("usage: rtprog crash VICTIM panic|nilwrite|fault|unlock")
		}
		if victim, _ := strconv.Atoi(os.Args[2]); rank == victim {
			crash(os.Args[3])
			fail("rank %d: crash %s: still alive", rank, os.Args[3])
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			fail("rank %d: %v", rank, err)
		}
		fail("rank %d: crash: Barrier returned without error", rank)
	case "gone":
		if len(os.Args) < 3 {
			fail("usage: rtprog gone VICTIM")
		}
		victim, _ := strconv.Atoi(os.Args[2])
		if rank == victim {
			os.Exit(3)
		}
		sctx, cancel := context.WithTimeout(ctx, testbudget.Scale(20*time.Second))
		defer cancel()
		if len(os.Args) > 3 && os.Args[3] == "dial" {
			_, err := w.Dial(sctx, victim, "gone")
			fail("rank %d: dial: %v", rank, err)
		}
		for {
			if err := runtime.Send(sctx, w, []byte("hello"), victim, 0); err != nil {
				fail("rank %d: send: %v", rank, err)
			}
		}
	case "stranded":
		if rank == 0 {
			time.Sleep(time.Hour)
			fail("rank 0 not killed")
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			fmt.Fprintf(os.Stderr, "rtprog: rank %d: %v\n", rank, err)
			select {}
		}
		fail("rank %d: stranded: Barrier returned without error", rank)
	case "busy":
		if len(os.Args) < 3 {
			fail("usage: rtprog busy SECONDS")
		}
		secs, _ := strconv.ParseFloat(os.Args[2], 64)
		busy(ctx, w, time.Duration(secs*float64(time.Second)))
	case "steps":
		if len(os.Args) < 3 {
			fail("usage: rtprog steps N")
		}
		n, _ := strconv.Atoi(os.Args[2])
		steps(ctx, w, n)
	case "ulfm":
		if len(os.Args) < 3 {
			fail("usage: rtprog ulfm allreduce|fence|anysource [ORDER]")
		}
		order := "agree-shrink"
		if len(os.Args) > 3 {
			order = os.Args[3]
		}
		ulfm(ctx, w, os.Args[2], order)
	case "rpc":
		if err := serveRPC(ctx, w); err != nil {
			fail("rank %d: rpc: %v", rank, err)
		}
		fctx, cancel := context.WithTimeout(ctx, testbudget.Scale(30*time.Second))
		defer cancel()
		if err := w.Finalize(fctx); err != nil {
			fail("rank %d: finalize: %v", rank, err)
		}
	default:
		fail("unknown mode %q", mode)
	}
}

// Arith is the net/rpc service of mode rpc.
type Arith struct{}

// Args are Arith.Mul's operands.
type Args struct{ A, B int }

// Mul multiplies.
func (Arith) Mul(a Args, reply *int) error {
	*reply = a.A * a.B
	return nil
}

// serveRPC runs mode rpc: rank 0 serves every other rank one connection of net/rpc
// until each has hung up; the others call Arith.Mul once and print the result.
func serveRPC(ctx context.Context, w *runtime.World) error {
	if w.Rank() != 0 {
		c, err := w.Dial(ctx, 0, "rpc")
		if err != nil {
			return err
		}
		client := rpc.NewClient(c)
		defer client.Close()
		var got int
		if err := client.Call("Arith.Mul", Args{w.Rank(), 7}, &got); err != nil {
			return err
		}
		fmt.Printf("rpc %d %d\n", w.Rank(), got)
		return nil
	}
	ln, err := w.Listen("rpc")
	if err != nil {
		return err
	}
	defer ln.Close()
	srv := rpc.NewServer()
	if err := srv.Register(Arith{}); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for range w.Size() - 1 {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv.ServeConn(c) // returns when the client hangs up
		}()
	}
	wg.Wait()
	return nil
}

// allreduceLoop runs mode allreduce: it returns only by exiting the process.
func allreduceLoop(ctx context.Context, w *runtime.World, victim, mib int) {
	n := max(1, mib) << 20 / 8
	send, recv := make([]float64, n), make([]float64, n)
	for i := range send {
		send[i] = float64(w.Rank() + 1)
	}
	for iter := 0; ; iter++ {
		if w.Rank() == victim && iter == 2 {
			go func() {
				time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}()
		}
		if err := collectives.Allreduce(ctx, w, send, recv, collectives.Sum[float64]()); err != nil {
			w.Abort(1, fmt.Sprintf("rtprog: rank %d: allreduce %d: %v", w.Rank(), iter, err))
		}
	}
}

// crash makes the Go runtime end the process the way how names.
func crash(how string) {
	switch how {
	case "panic":
		panic("rtprog: crash on purpose")
	case "nilwrite":
		*nilTarget() = 1
	case "fault":
		page, err := syscall.Mmap(-1, 0, os.Getpagesize(), syscall.PROT_READ, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			fail("crash fault: mmap: %v", err)
		}
		page[0] = 1
	case "unlock":
		var mu sync.Mutex
		mu.Lock()
		mu.Unlock()
		mu.Unlock()
	default:
		fail("crash: unknown way %q", how)
	}
}

// nilTarget returns a nil pointer that the compiler cannot see is nil.
//
//go:noinline
func nilTarget() *int { return nil }

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "rtprog: "+format+"\n", args...)
	os.Exit(1)
}

// mismatchPair runs mode mismatchroot, mismatchgb or mismatchba (see the list of
// behaviours). Every buffer the call may write starts as NaN, and a call that does not
// match must leave it so.
func mismatchPair(ctx context.Context, w *runtime.World, mode string) {
	n := 1
	if len(os.Args) > 2 {
		n, _ = strconv.Atoi(os.Args[2])
	}
	rank, size := w.Rank(), w.Size()
	var recv []float64 // what the call may write
	var err error
	switch {
	case mode == "mismatchgb" && rank == size-1 || mode == "mismatchba" && rank == 0:
		buf := nanSlice(n)
		if rank == 0 { // the root's buffer is its data
			buf = make([]float64, n)
		} else {
			recv = buf
		}
		err = collectives.Bcast(ctx, w, buf, 0)
	case mode == "mismatchgb":
		if rank == 0 {
			recv = nanSlice(n * size)
		}
		err = collectives.Gather(ctx, w, make([]float64, n), recv, 0)
	case mode == "mismatchroot":
		root := min(rank, 1)
		recv = nanSlice(n)
		err = collectives.Reduce(ctx, w, make([]float64, n), recv, collectives.Sum[float64](), root)
	default:
		recv = nanSlice(n)
		err = collectives.Allreduce(ctx, w, make([]float64, n), recv, collectives.Sum[float64]())
	}
	for _, v := range recv {
		if !math.IsNaN(v) {
			fmt.Fprintf(os.Stderr, "rtprog: rank %d: %s: buffer written\n", rank, mode)
			break
		}
	}
	if err != nil {
		mismatched(ctx, w, fmt.Sprintf("rank %d: %s: the call returned: %v", rank, mode, err), err)
	}
	err = collectives.Barrier(ctx, w)
	mismatched(ctx, w, fmt.Sprintf("rank %d: %s: the call returned nil, the next: %v", rank, mode, err), err)
}

// nanSlice returns n NaNs.
func nanSlice(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}

// mismatched prints msg and exits 1. When err is a mismatch that every rank found
// (GORMA_CHECK=1) it waits, between the two, until every rank has printed: the World
// still works after a mismatch, and no rank's exit ends the job before the others have
// said theirs.
func mismatched(ctx context.Context, w *runtime.World, msg string, err error) {
	fmt.Fprintf(os.Stderr, "rtprog: %s\n", msg)
	if errors.Is(err, runtime.ErrMismatch) {
		if berr := runtime.Barrier(ctx, w); berr != nil {
			fail("rank %d: Barrier after the mismatch: %v", w.Rank(), berr)
		}
	}
	os.Exit(1)
}
