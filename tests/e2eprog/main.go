package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	gorma "github.com/gorma-hpc/gorma/runtime"
)

// env is one rank's state for the whole sequence.
type env struct {
	ctx        context.Context
	w          *gorma.World
	rank, size int
	seed       uint64
	step       int
	rng        *rand.Rand // the shared generator: every rank draws the same numbers
	own        *rand.Rand // this rank's generator (GC points)
	gc         bool
	checked    atomic.Int64
	wins       []*winModel
	algs       []algWorld
}

func main() {
	seed := flag.Uint64("seed", 1, "seed of the shared random sequence")
	steps := flag.Int("steps", 60, "steps in the sequence")
	gc := flag.Bool("gc", false, "pressure the garbage collector")
	kill := flag.String("kill", "", "RANK@STEP: that rank SIGKILLs itself at that step")
	flag.Parse()
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(50*time.Second))
	defer cancel()
	victim, killAt := -1, -1
	if *kill != "" {
		r, s, ok := strings.Cut(*kill, "@")
		var err1, err2 error
		victim, err1 = strconv.Atoi(r)
		killAt, err2 = strconv.Atoi(s)
		if !ok || err1 != nil || err2 != nil {
			fatal("bad -kill %q", *kill)
		}
	}
	w, err := gorma.Init(ctx)
	if err != nil {
		fatal("init: %v", err)
	}
	e := &env{ctx: ctx, w: w, rank: w.Rank(), size: w.Size(), seed: *seed, gc: *gc,
		rng: rand.New(rand.NewPCG(*seed, 0x9e3779b97f4a7c15)),
		own: rand.New(rand.NewPCG(*seed, uint64(w.Rank())+1))}
	if *gc {
		stop := pressure()
		defer stop()
	}
	fmt.Printf("ready %d %d\n", e.rank, os.Getpid())
	if err := e.setup(); err != nil {
		e.fail("setup", err)
	}
	for e.step = 0; e.step < *steps; e.step++ {
		if e.step == killAt && e.rank == victim {
			fmt.Printf("dying %d %d\n", e.rank, os.Getpid())
			os.Stdout.Sync()
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Hour)
		}
		kind := e.rng.IntN(len(stepKinds))
		if err := stepKinds[kind].run(e); err != nil {
			e.fail(stepKinds[kind].name, err)
		}
		e.maybeGC()
	}
	if err := e.teardown(); err != nil {
		e.fail("teardown", err)
	}
	fmt.Printf("PASS rank %d steps %d checked %d\n", e.rank, *steps, e.checked.Load())
	if err := w.Finalize(ctx); err != nil {
		fatal("rank %d: finalize: %v", e.rank, err)
	}
}

// stepKinds are the kinds of step, drawn with equal chance.
var stepKinds = []struct {
	name string
	run  func(*env) error
}{
	{"p2p", (*env).p2p},
	{"p2p-bytes", (*env).p2pBytes},
	{"anysource", (*env).anySource},
	{"fence", (*env).fenceStep},
	{"pscw", (*env).pscwStep},
	{"lock", (*env).lockStep},
	{"lockall", (*env).lockAllStep},
	{"winchurn", (*env).winChurn},
	{"allreduce", (*env).allreduce},
	{"allreduce", (*env).allreduce},
	{"coll", (*env).collective},
	{"coll", (*env).collective},
}

// fail reports err and exits 1 (a failed peer's error names it).
func (e *env) fail(what string, err error) {
	var pe *gorma.ProcError
	extra := ""
	if errors.As(err, &pe) {
		extra = fmt.Sprintf(" [failed rank %d]", pe.Rank)
	}
	fatal("rank %d: step %d %s: %v%s", e.rank, e.step, what, err, extra)
}

func fatal(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "e2eprog: "+format+"\n", args...)
	os.Exit(1)
}

// errorf is a result mismatch at this rank.
func (e *env) errorf(format string, args ...any) error {
	return fmt.Errorf("rank %d step %d: MISMATCH: "+format, append([]any{e.rank, e.step}, args...)...)
}

// maybeGC runs a garbage collection at some points (with -gc).
func (e *env) maybeGC() {
	if e.gc && e.own.IntN(3) == 0 {
		goruntime.GC()
	}
}

// pressure starts two goroutines that allocate garbage until the returned stop is called.
func pressure() (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	var sink atomic.Pointer[[]byte]
	for g := range 2 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			var keep [][]byte
			for !done.Load() {
				b := make([]byte, 64+r.IntN(64<<10))
				b[len(b)-1] = 1
				keep = append(keep, b)
				if len(keep) > 64 {
					keep = keep[:0]
				}
				sink.Store(&b)
				if r.IntN(64) == 0 {
					time.Sleep(100 * time.Microsecond)
				}
			}
		})
	}
	return func() { done.Store(true); wg.Wait() }
}

// val is the value of element i of the item named by (step, a, b, c): a hash.
func (e *env) val(a, b, c, i int) int64 {
	h := e.seed ^ 0x243f6a8885a308d3
	for _, x := range [...]int{e.step, a, b, c, i} {
		h = mix(h ^ uint64(x))
	}
	return int64(h)
}

// mix is splitmix64's finalizer.
func mix(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// msgLen draws a message length in elements of elemSize bytes: fast-box sized, eager,
// rendezvous, or (rarely) a long rendezvous.
func (e *env) msgLen(elemSize int) int {
	var bytes int
	switch c := e.rng.IntN(20); {
	case c < 6:
		bytes = e.rng.IntN(233)
	case c < 12:
		bytes = 233 + e.rng.IntN(16<<10-233)
	case c < 19:
		bytes = 16<<10 + 1 + e.rng.IntN(200<<10)
	default:
		bytes = 256<<10 + e.rng.IntN(512<<10)
	}
	return bytes / elemSize
}
