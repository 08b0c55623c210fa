package window_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/internal/testbudget"
	gorma "github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/window"
)

// The flag pattern: rank 0 writes a round's data into its window, then a flag; every
// other rank polls the flag with Lock(Shared)+Get+Unlock until it shows the round, reads
// the data, checks it, and acknowledges the round with a message to rank 0. Rank 0
// receives every acknowledgement before the next round. With the page cache on, the
// readers' copies of the data and flag pages are invalidated at every round.
//
// Rank 0 completes the data before it writes the flag (Sync, or the Unlock that ends its
// exclusive epoch), as MPI asks: a reader that finds the flag then reads the round's
// data, cached or not. Rank 0 then computes for pollWork without calling the runtime,
// while the readers poll and read: their passive-target operations must not wait for it.
// It waits for the acknowledgements in Recv, so that the waits are the runtime's and
// not the test's.
//
// A reader spins for a few polls, then sleeps between them (pollPause). A reader that
// polls with Lock(Shared) back to back keeps rank 0's lock word shared nearly all the
// time: a shared lock is granted whenever no exclusive holder is in, so rank 0's
// Lock(Exclusive) of itself waits until every reader happens to be between its epochs.

// Element offsets in rank 0's window (int64 elements, 4096-byte pages).
const (
	pollData  = 0   // pollDataN elements on page 0
	pollDataN = 64  // elements of a round's data
	pollFlag  = 512 // the round last published, on page 1
	pollElems = pollFlag + 1
	pollTag   = 73 // the tag of the acknowledgements
)

// pollWriter is how rank 0 publishes a round.
type pollWriter string

const (
	writeSync pollWriter = "sync" // stores data into Local, Sync, stores the flag, Sync
	writeLock pollWriter = "lock" // Lock(Exclusive) of itself, two Puts, Unlock
)

func pollValue(round int64, j int) int64 { return round<<8 | int64(j) }

// pollRounds runs rounds [first, first+n) of the flag pattern on win, whose World is w.
func pollRounds(ctx context.Context, w *gorma.World, win *window.Win[int64], first, n int64, how pollWriter) error {
	if win.Rank() == 0 {
		return pollWrite(ctx, w, win, first, n, how)
	}
	return pollRead(ctx, w, win, first, n)
}

func pollWrite(ctx context.Context, w *gorma.World, win *window.Win[int64], first, n int64, how pollWriter) error {
	loc := win.Local()
	data := make([]int64, pollDataN)
	ack := make([]int64, 1)
	for k := first; k < first+n; k++ {
		for j := range data {
			data[j] = pollValue(k, j)
		}
		switch how {
		case writeSync:
			copy(loc[pollData:], data)
			if err := win.Sync(ctx); err != nil {
				return err
			}
			atomic.StoreInt64(&loc[pollFlag], k)
			if err := win.Sync(ctx); err != nil {
				return err
			}
		case writeLock:
			if err := win.Lock(ctx, window.Exclusive, 0, 0); err != nil {
				return err
			}
			if err := win.Put(data, 0, pollData); err != nil {
				return err
			}
			if err := win.Put([]int64{k}, 0, pollFlag); err != nil {
				return err
			}
			if err := win.Unlock(ctx, 0); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unknown writer %q", how)
		}
		compute(pollWork)
		for r := 1; r < win.Size(); r++ {
			if _, err := gorma.Recv(ctx, w, ack, r, pollTag); err != nil {
				return fmt.Errorf("round %d: no acknowledgement from reader %d: %w", k, r, err)
			}
			if ack[0] != k {
				return fmt.Errorf("round %d: reader %d acknowledged round %d", k, r, ack[0])
			}
		}
	}
	return nil
}

func pollRead(ctx context.Context, w *gorma.World, win *window.Win[int64], first, n int64) error {
	flag := make([]int64, 1)
	data := make([]int64, pollDataN)
	for k := first; k < first+n; k++ {
		start := time.Now()
		for i := 0; flag[0] != k; i++ {
			if i > 0 {
				pollPause(start, i-1)
			}
			if err := sharedGet(ctx, win, flag, pollFlag); err != nil {
				return err
			}
			if flag[0] > k || (k > first && flag[0] < k-1) {
				return fmt.Errorf("round %d: the flag shows round %d", k, flag[0])
			}
		}
		if err := sharedGet(ctx, win, data, pollData); err != nil {
			return err
		}
		for j, v := range data {
			if v != pollValue(k, j) {
				return fmt.Errorf("round %d: element %d is %#x (of round %d), want %#x", k, j, v, v>>8, pollValue(k, j))
			}
		}
		if err := gorma.Send(ctx, w, []int64{k}, 0, pollTag); err != nil {
			return err
		}
	}
	return nil
}

// pollPause pauses a reader that started polling at start, after its i-th fruitless
// poll (from 0): a yield while it has polled for less than pollSpin, then a sleep that
// doubles from a microsecond up to pollSleepMax.
func pollPause(start time.Time, i int) {
	if time.Since(start) < pollSpin {
		runtime.Gosched()
		return
	}
	time.Sleep(min(time.Microsecond<<min(i, 16), pollSleepMax))
}

// compute keeps the processor busy for d without calling the runtime.
func compute(d time.Duration) {
	x := uint64(1)
	for start := time.Now(); time.Since(start) < d; {
		for range 64 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	computeSink.Store(x)
}

var computeSink atomic.Uint64

const (
	// pollWork is rank 0's computation in each round.
	pollWork = 100 * time.Microsecond
	// pollSpin covers the usual wait for the flag: the polls that overlap rank 0's
	// publication after the last acknowledgement. A sleep below a millisecond lasts a
	// good part of one on a busy machine, many round trips.
	pollSpin = 200 * time.Microsecond
	// pollSleepMax bounds a reader's sleep.
	pollSleepMax = 64 * time.Microsecond
)

// pollHosts places every rank on a pretend host of its own: every pair talks over tcp.
func pollHosts(n int) []string {
	h := make([]string, n)
	for i := range h {
		h[i] = fmt.Sprintf("h%d", i)
	}
	return h
}

// TestCachePollFlag runs the flag pattern with the page cache on and two readers: every
// reader reads every round's data, whichever way rank 0 publishes. The flag page, polled
// and written at every round, goes uncached at every reader (Bypassed). The data page,
// read once per round, is filled again after each round's write.
// A rank that fails ends the others' waits with its error.
func TestCachePollFlag(t *testing.T) {
	for _, how := range []pollWriter{writeSync, writeLock} {
		t.Run(string(how), func(t *testing.T) {
			const readers, rounds, budget = 2, 200, 60 * time.Second
			bctx, cancel := testbudget.Context(context.Background(), budget,
				fmt.Sprintf("%d rounds of the flag pattern with %d readers", rounds, readers))
			defer cancel()
			ctx, fail := context.WithCancelCause(bctx)
			defer fail(nil)
			// The ranks' own budget ends first, so that a failure names the wait.
			opt := runtimetest.Options{Hosts: pollHosts(1 + readers), Timeout: budget + 30*time.Second}
			runtimetest.Run(t, 1+readers, opt, func(w *gorma.World) error {
				err := pollFlagRank(ctx, t, w, rounds, how)
				if err != nil {
					fail(fmt.Errorf("rank %d: %w", w.Rank(), err)) // runtimetest names the rank of err
				}
				return err
			})
		})
	}
}

// pollFlagRank is a rank of TestCachePollFlag.
func pollFlagRank(ctx context.Context, t *testing.T, w *gorma.World, rounds int64, how pollWriter) error {
	win, err := window.Allocate[int64](ctx, w, pollElems)
	if err != nil {
		return err
	}
	if err := win.Fence(ctx, 0); err != nil {
		return err
	}
	if err := pollRounds(ctx, w, win, 1, rounds, how); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", err, context.Cause(ctx))
		}
		return err
	}
	st := win.CacheStats()
	t.Logf("rank %d: cache %+v", w.Rank(), st)
	if w.Rank() != 0 && st.Bypassed == 0 {
		return fmt.Errorf("read every page through the cache: %+v", st)
	}
	if err := gorma.Barrier(ctx, w); err != nil {
		return err
	}
	return win.Free(ctx)
}

// The flag pattern as a golaunch job, each rank a process running this test binary:
// TestCachePollRank is the rank program (skipped unless -cachepoll is given).
var (
	pollAsRank  = flag.Bool("cachepoll", false, "run TestCachePollRank as a rank of a golaunch job")
	pollRoundsN = flag.Int("cachepoll.rounds", 1000, "TestCachePollRank: rounds per sample")
	pollSamples = flag.Int("cachepoll.samples", 5, "TestCachePollRank: samples of each setting")
	pollHow     = flag.String("cachepoll.writer", string(writeSync), "TestCachePollRank: sync or lock")
	pollBudget  = flag.Duration("cachepoll.budget", 10*time.Minute, "TestCachePollRank: budget of the whole run, scaled by the test slack")
)

// TestCachePollRank times the flag pattern with the page cache and with NoCache, each on
// a window of its own, samples times; a sample runs the two in turn, the cache first in
// odd samples and last in even ones. Rank 0 prints each sample and the medians, with the
// readers' cache counts summed:
//
//	cachepoll: writer sync, 1 readers, 1000 rounds: cache 812.3 ms nocache 790.1 ms (medians of 5) ratio 1.03; cache {...}
func TestCachePollRank(t *testing.T) {
	if !*pollAsRank {
		t.Skip("the rank program of TestLaunchCachePoll and BenchmarkCachePoll (-cachepoll)")
	}
	how, rounds := pollWriter(*pollHow), int64(*pollRoundsN)
	ctx, cancel := testbudget.Context(context.Background(), *pollBudget,
		fmt.Sprintf("%d samples of %d rounds with writer %s", *pollSamples, rounds, how))
	defer cancel()
	w, err := gorma.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ms [2][]float64 // by setting: NoCache, cache
	var st window.CacheStats
	next := int64(1)
	for s := 0; s < *pollSamples; s++ {
		for _, cache := range []bool{s%2 == 0, s%2 == 1} {
			var opts []window.Option
			if !cache {
				opts = append(opts, window.NoCache())
			}
			win, err := window.Allocate[int64](ctx, w, pollElems, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if err := gorma.Barrier(ctx, w); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := pollRounds(ctx, w, win, next, rounds, how); err != nil {
				if ctx.Err() != nil {
					err = fmt.Errorf("%w (%v)", err, context.Cause(ctx))
				}
				t.Fatalf("rank %d: %v", w.Rank(), err)
			}
			d := float64(time.Since(start)) / 1e6
			next += rounds
			if cache {
				ms[1] = append(ms[1], d)
				c := win.CacheStats()
				sum := []int64{c.Hits, c.Misses, c.Installs, c.Invalidations, c.Bypassed}
				if err := collectives.Allreduce(ctx, w, slices.Clone(sum), sum, collectives.Sum[int64]()); err != nil {
					t.Fatal(err)
				}
				st.Hits, st.Misses, st.Installs = st.Hits+sum[0], st.Misses+sum[1], st.Installs+sum[2]
				st.Invalidations, st.Bypassed = st.Invalidations+sum[3], st.Bypassed+sum[4]
			} else {
				ms[0] = append(ms[0], d)
			}
			if err := win.Free(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if w.Rank() == 0 {
			fmt.Printf("cachepoll sample %d: cache %.1f ms nocache %.1f ms\n", s+1, ms[1][s], ms[0][s])
		}
	}
	if w.Rank() == 0 {
		on, off := median(ms[1]), median(ms[0])
		fmt.Printf("cachepoll: writer %s, %d readers, %d rounds: cache %.1f ms nocache %.1f ms (medians of %d) ratio %.2f; cache %+v\n",
			how, w.Size()-1, rounds, on, off, len(ms[0]), on/off, st)
	}
	if err := w.Finalize(ctx); err != nil {
		t.Fatal(err)
	}
}

func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

var pollLine = regexp.MustCompile(`cachepoll: .* cache ([0-9.]+) ms nocache ([0-9.]+) ms \(medians of [0-9]+\) ratio ([0-9.]+).*`)

// runPollJob runs TestCachePollRank as a golaunch job of 1+readers ranks over tcp and
// returns rank 0's summary line and its figures, and logs rank 0's lines.
func runPollJob(tb testing.TB, golaunch string, readers, rounds, samples int, how pollWriter, budget time.Duration) []string {
	tb.Helper()
	self, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	// The ranks' budget ends first, then golaunch's, then this wait's: the first failure
	// names what had not happened.
	args := []string{"-n", strconv.Itoa(1 + readers), "--transport", "tcp", "--timeout", testbudget.Scale(budget + 15*time.Second).String(),
		self, "-test.run", "^TestCachePollRank$", "-cachepoll", "-cachepoll.rounds", strconv.Itoa(rounds),
		"-cachepoll.samples", strconv.Itoa(samples), "-cachepoll.writer", string(how), "-cachepoll.budget", budget.String()}
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(budget+30*time.Second))
	defer cancel()
	out, err := runCmd(ctx, golaunch, args)
	if err != nil {
		tb.Fatalf("golaunch %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	m := pollLine.FindStringSubmatch(out)
	if m == nil {
		tb.Fatalf("golaunch %s: no cachepoll summary\n%s", strings.Join(args, " "), out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "cachepoll") {
			tb.Log(l)
		}
	}
	return m
}

// TestLaunchCachePoll runs the flag pattern through golaunch over tcp, each rank a
// process, with both writers: every reader checks every round's data. It asserts no
// timing.
func TestLaunchCachePoll(t *testing.T) {
	if testing.Short() {
		t.Skip("builds golaunch and runs jobs of processes")
	}
	golaunch, _ := buildLaunchBins(t)
	for _, how := range []pollWriter{writeSync, writeLock} {
		t.Run(string(how), func(t *testing.T) {
			runPollJob(t, golaunch, 2, 50, 1, how, 60*time.Second)
		})
	}
}

// BenchmarkCachePoll times 1000 rounds of the flag pattern over tcp, each rank a process,
// with the cache and with NoCache on windows of their own, alternating, b.N times; it
// reports the medians and their ratio:
//
//	go test -run '^$' -bench CachePoll -benchtime 5x ./window
func BenchmarkCachePoll(b *testing.B) {
	golaunch := filepath.Join(b.TempDir(), "golaunch")
	if out, err := runCmd(context.Background(), "go", []string{"build", "-o", golaunch, "../launcher/cmd/golaunch"}); err != nil {
		b.Fatalf("go build golaunch: %v\n%s", err, out)
	}
	for _, how := range []pollWriter{writeSync, writeLock} {
		for readers := 1; readers <= 3; readers++ {
			b.Run(fmt.Sprintf("%s/readers=%d", how, readers), func(b *testing.B) {
				m := runPollJob(b, golaunch, readers, 1000, b.N, how, 10*time.Minute)
				for i, unit := range []string{"ms-cache/1000rounds", "ms-nocache/1000rounds", "ratio"} {
					v, _ := strconv.ParseFloat(m[i+1], 64)
					b.ReportMetric(v, unit)
				}
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// runCmd runs name with args and returns its output, stdout and stderr together.
func runCmd(ctx context.Context, name string, args []string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (it had not exited when its time ran out)", err)
	}
	return string(out), err
}

// sharedGet reads dst from rank 0's window at element off in an epoch of its own:
// Lock(Shared), Get, Unlock.
func sharedGet(ctx context.Context, win *window.Win[int64], dst []int64, off int) error {
	if err := win.Lock(ctx, window.Shared, 0, 0); err != nil {
		return err
	}
	if err := win.Get(dst, 0, off); err != nil {
		return err
	}
	return win.Unlock(ctx, 0)
}
