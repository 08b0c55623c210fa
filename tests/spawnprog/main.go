package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/pmi"
	"github.com/gorma-hpc/gorma/runtime"
)

// Flags:
//
//	--spawn N       the job's ranks spawn N ranks (default 2)
//	--refused       the spawn must fail: rank 0 prints "spawnprog: refused: ERROR", every
//	                rank checks that it failed too, and all finalize
//	--retry K       a spawn refused for want of free slots is tried again up to K times,
//	                100 ms apart (an agent that just joined may not be in golaunch's
//	                member list yet)
//	--wait-stdin    rank 0 waits for a line on its stdin before the spawn (a test starts an
//	                agent meanwhile)
//	--children-exit C
//	                a spawned rank exits with code C before Init (it finds GOLAUNCH_SPAWN
//	                set), which fails the spawn
//
// Every rank prints "spawnprog: rank R of M, parent|child, host H" with its rank in the
// merged World, and rank 0 of the merged World "PASS spawnprog M ranks" once its
// Allreduce (the sum of every rank's merged rank plus one) was right. A rank whose call
// fails prints "spawnprog: rank R: ERROR" on stderr and exits 1.
func main() {
	n := flag.Int("spawn", 2, "ranks to spawn")
	refused := flag.Bool("refused", false, "the spawn must fail")
	retry := flag.Int("retry", 0, "retry a spawn refused for want of free slots this many times")
	waitStdin := flag.Bool("wait-stdin", false, "rank 0 waits for a line on stdin first")
	childExit := flag.Int("children-exit", 0, "spawned ranks exit with this code before Init")
	flag.Parse()
	if *childExit != 0 && os.Getenv(pmi.EnvSpawn) != "" {
		os.Exit(*childExit)
	}
	ctx := context.Background()
	w, err := runtime.Init(ctx)
	if err != nil {
		fail(-1, "init: %v", err)
	}
	var merged *runtime.World
	role := "child"
	if p := w.Parent(); p != nil {
		if merged, err = p.Merge(ctx, true); err != nil {
			fail(w.Rank(), "merge with the parents: %v", err)
		}
	} else {
		role = "parent"
		if *waitStdin && w.Rank() == 0 {
			bufio.NewReader(os.Stdin).ReadString('\n')
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			fail(w.Rank(), "barrier: %v", err)
		}
		inter, err := spawn(ctx, w, *n, *retry)
		if *refused {
			if err == nil {
				fail(w.Rank(), "the spawn of %d ranks succeeded; want it refused", *n)
			}
			if w.Rank() == 0 {
				fmt.Printf("spawnprog: refused: %v\n", err)
			}
			finalize(ctx, w)
			return
		}
		if err != nil {
			fail(w.Rank(), "%v", err)
		}
		if merged, err = inter.Merge(ctx, false); err != nil {
			fail(w.Rank(), "merge with the children: %v", err)
		}
	}
	size := merged.Size()
	fmt.Printf("spawnprog: rank %d of %d, %s, host %s\n", merged.Rank(), size, role, merged.Host())
	sum := []int64{int64(merged.Rank() + 1)}
	if err := collectives.Allreduce(ctx, merged, nil, sum, collectives.Sum[int64]()); err != nil {
		fail(merged.Rank(), "allreduce over the merged World: %v", err)
	}
	if want := int64(size * (size + 1) / 2); sum[0] != want {
		fail(merged.Rank(), "allreduce over the merged World of %d: sum %d, want %d", size, sum[0], want)
	}
	if err := runtime.Barrier(ctx, merged); err != nil {
		fail(merged.Rank(), "barrier over the merged World: %v", err)
	}
	if merged.Rank() == 0 {
		fmt.Printf("PASS spawnprog %d ranks\n", size)
	}
	finalize(ctx, w)
}

// spawn is w.Spawn, tried again up to retry times while golaunch finds no free slots.
// Every rank of w gets the same answer, so all retry together.
func spawn(ctx context.Context, w *runtime.World, n, retry int) (*runtime.World, error) {
	for try := 0; ; try++ {
		inter, err := w.Spawn(ctx, n)
		if err == nil || !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "no free slots") || try == retry {
			return inter, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func finalize(ctx context.Context, w *runtime.World) {
	if err := w.Finalize(ctx); err != nil {
		fail(w.Rank(), "finalize: %v", err)
	}
}

func fail(rank int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "spawnprog: rank %d: %s\n", rank, fmt.Sprintf(format, args...))
	os.Exit(1)
}
