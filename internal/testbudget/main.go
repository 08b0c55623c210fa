package testbudget

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"testing"
	"time"
)

// EnvTimeout names the variable that sets a test binary's timeout, measured at slack 1,
// when go test's -timeout is 0 (`make test` runs so).
const EnvTimeout = "GORMA_TEST_TIMEOUT"

// tick is how often the package timeout's clock reads the slack.
const tick = time.Second

// Run runs m's tests under a package timeout that scales with Slack, as the tests' own
// budgets do, and returns the exit code for os.Exit. Each package's TestMain calls it:
//
//	func TestMain(m *testing.M) { os.Exit(testbudget.Run(m)) }
//
// The timeout is go test's -timeout, or GORMA_TEST_TIMEOUT when -timeout is 0, or none
// when both are unset. Run turns testing's own alarm off and keeps a clock instead that
// advances by tick/Slack() every tick: at slack 1 it follows the wall clock, and at slack
// 10 (a 2-core machine at load 20) a timeout of 18 minutes lasts three hours. When the
// clock reaches the timeout, Run prints every goroutine's stack and exits the binary
// with status 2, as testing's alarm does. go test itself kills a test binary a minute
// after a -timeout it was given, whatever the load, so a run that should scale passes
// -timeout 0 and sets GORMA_TEST_TIMEOUT.
func Run(m *testing.M) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	base, err := timeout(flag.Lookup("test.timeout"), os.Getenv(EnvTimeout))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if base <= 0 {
		return m.Run()
	}
	flag.Set("test.timeout", "0")
	stop := startClock(base, Slack, func(c clockState) {
		debug.SetTraceback("all")
		panic(fmt.Sprintf("test timed out: %v at slack 1 used up in %v of wall time (last slack %.3g; %s or -timeout sets the limit)",
			base, c.wall.Round(time.Second), c.slack, EnvTimeout))
	})
	defer stop()
	return m.Run()
}

// timeout returns the package timeout at slack 1: the -test.timeout flag's value when it
// is set and not 0, else env parsed as a duration, else 0.
func timeout(f *flag.Flag, env string) (time.Duration, error) {
	if f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			if d, ok := g.Get().(time.Duration); ok && d > 0 {
				return d, nil
			}
		}
	}
	if env == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(env)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s=%q: want a duration such as 18m", EnvTimeout, env)
	}
	return d, nil
}

// clock is the package timeout's clock: it advances by the wall time between two reads
// over the slack of the later one.
type clock struct {
	limit       time.Duration // the timeout at slack 1
	start, last time.Time
	used        time.Duration // clock time so far
	slack       float64       // the slack of the last read
}

// read advances c to now at slack s (at least 1) and reports whether it has reached its
// limit.
func (c *clock) read(now time.Time, s float64) bool {
	c.slack = max(s, 1)
	c.used += time.Duration(float64(now.Sub(c.last)) / c.slack)
	c.last = now
	return c.used >= c.limit
}

// clockState is the package timeout's clock when it runs out.
type clockState struct {
	wall  time.Duration // wall time since the clock started
	slack float64       // the slack of the last read
}

// startClock starts a clock of limit, read every tick at slack(), and calls expire once
// it reaches limit. stop stops it; expire is not called after stop returns.
func startClock(limit time.Duration, slack func() float64, expire func(clockState)) (stop func()) {
	done := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	stopped := false
	now := time.Now()
	c := &clock{limit: limit, start: now, last: now}
	go func() {
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				if !c.read(now, slack()) {
					continue
				}
				mu.Lock()
				if !stopped {
					expire(clockState{wall: now.Sub(c.start), slack: c.slack})
				}
				mu.Unlock()
				return
			}
		}
	}()
	return func() {
		once.Do(func() {
			mu.Lock()
			stopped = true
			mu.Unlock()
			close(done)
		})
	}
}
