package trace

import (
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// Clock is the recorder's time source: a monotonic clock whose Stamp costs less than
// Go's. Where the processor's time-stamp counter is a clock (CounterUsable: the kernel
// keeps time by it, or offers it on a processor whose counter runs at a constant rate;
// on amd64), a stamp is the counter's reading since the clock's start. Elsewhere a stamp
// is nanoseconds of the monotonic clock. `go test -bench Clock
// ./internal/trace` measures both.
//
// Nanos converts a difference of stamps at the rate measured over calibrate when the
// clock was made; Exact measures the rate again over the whole life of the clock. A
// Clock is safe for use by any number of goroutines.
type Clock struct {
	origin  time.Time // the clock's zero
	counter bool      // stamps are counter readings, else nanoseconds since origin
	base    int64     // the counter at origin
	scale   float64   // nanoseconds per count, measured over calibrate
}

// calibrate is how long NewClock measures the counter's rate against the monotonic
// clock. The rate's error is about a read of both clocks over this interval.
const calibrate = 2 * time.Millisecond

// NewClock returns a clock that starts now. When it uses the time-stamp counter it
// sleeps for calibrate first.
func NewClock() *Clock {
	if !counterKeepsTime() {
		return &Clock{origin: time.Now(), scale: 1}
	}
	c := &Clock{counter: true}
	c.origin, c.base = sample()
	time.Sleep(calibrate)
	c.scale = c.rate()
	return c
}

// sample reads the monotonic clock and the counter at one moment: the counter's
// reading is the mean of one before and one after the clock's.
func sample() (time.Time, int64) {
	a := rdtsc()
	t := time.Now()
	b := rdtsc()
	return t, a + (b-a)/2
}

// rate returns nanoseconds per count from the clock's start to now.
func (c *Clock) rate() float64 {
	t, n := sample()
	if n -= c.base; n <= 0 {
		return 1
	}
	return float64(t.Sub(c.origin)) / float64(n)
}

// Stamp reads the clock.
func (c *Clock) Stamp() int64 {
	if c.counter {
		return rdtsc() - c.base
	}
	return int64(time.Since(c.origin))
}

// Now returns nanoseconds of the monotonic clock since the clock's start: the scale of
// Nanos and Exact, at the cost of Go's clock.
func (c *Clock) Now() int64 { return int64(time.Since(c.origin)) }

// Origin returns the clock's zero.
func (c *Clock) Origin() time.Time { return c.origin }

// Nanos converts d, a difference of two stamps, to nanoseconds.
func (c *Clock) Nanos(d int64) int64 {
	if !c.counter {
		return d
	}
	return int64(float64(d) * c.scale)
}

// Span returns how many stamps last at least d.
func (c *Clock) Span(d time.Duration) int64 {
	if !c.counter {
		return int64(d)
	}
	return int64(math.Ceil(float64(d) / c.scale))
}

// Exact returns a function that converts a stamp to nanoseconds since the clock's start,
// at the rate measured from the start to the call of Exact. It agrees with Now to within
// a read of both clocks over the clock's life.
func (c *Clock) Exact() func(stamp int64) int64 {
	if !c.counter {
		return func(s int64) int64 { return s }
	}
	scale := c.rate()
	return func(s int64) int64 { return int64(float64(s) * scale) }
}

// rateNow returns the rate Exact converts at: nanoseconds per stamp.
func (c *Clock) rateNow() float64 {
	if !c.counter {
		return 1
	}
	return c.rate()
}

// counterKeepsTime reports whether Stamp can read the time-stamp counter as a clock
// (CounterUsable on this machine's files).
var counterKeepsTime = sync.OnceValue(func() bool {
	if !haveCounter {
		return false
	}
	const dir = "/sys/devices/system/clocksource/clocksource0/"
	current, _ := os.ReadFile(dir + "current_clocksource")
	available, _ := os.ReadFile(dir + "available_clocksource")
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	return CounterUsable(string(current), string(available), cpuFlags(string(cpuinfo)))
})

// CounterUsable reports whether the time-stamp counter is a clock, from the kernel's
// current and available clock sources (the files current_clocksource and
// available_clocksource) and the processor's flags (/proc/cpuinfo's):
//
//   - the kernel keeps time by it (current is tsc); or
//   - the kernel offers it (tsc is among the available sources) and the processor says
//     that it runs at a constant rate, in every power state (constant_tsc and
//     nonstop_tsc). A virtual machine often keeps time by its hypervisor's clock
//     (kvm-clock) over such a counter.
//
// The kernel offers tsc only when the counters of all processors agree and its watchdog
// has not found the counter drifting: it withdraws an unstable counter.
func CounterUsable(current, available string, flags []string) bool {
	if strings.TrimSpace(current) == "tsc" {
		return true
	}
	return slices.Contains(strings.Fields(available), "tsc") &&
		slices.Contains(flags, "constant_tsc") && slices.Contains(flags, "nonstop_tsc")
}

// cpuFlags returns the flags of /proc/cpuinfo's first processor.
func cpuFlags(cpuinfo string) []string {
	for line := range strings.Lines(cpuinfo) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "flags" {
			return strings.Fields(v)
		}
	}
	return nil
}
