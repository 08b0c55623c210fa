package testbudget

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// EnvSlack names the variable that sets the least slack factor, a number of at least 1.
const EnvSlack = "GORMA_TEST_SLACK"

// MaxAutoSlack bounds the factor derived from the load average.
const MaxAutoSlack = 20

// loadavgFile holds the load averages on Linux; elsewhere it is absent and the automatic
// factor is 1.
const loadavgFile = "/proc/loadavg"

// Slack returns the factor by which tests scale their budgets: the larger of
// GORMA_TEST_SLACK and the load factor (the 1-minute load average over the usable CPUs,
// between 1 and MaxAutoSlack). It panics on a GORMA_TEST_SLACK that is not a number of
// at least 1.
func Slack() float64 {
	f, err := envSlack(os.Getenv(EnvSlack))
	if err != nil {
		panic(err)
	}
	return max(f, loadSlack(readLoad(), runtime.NumCPU()))
}

// Scale returns the budget d times Slack, rounded to a millisecond.
func Scale(d time.Duration) time.Duration { return scale(d, Slack()) }

func scale(d time.Duration, slack float64) time.Duration {
	return time.Duration(float64(d) * slack).Round(time.Millisecond)
}

// Context returns a context that parent's end or Scale(d) ends, whichever comes first.
// Its cause ([context.Cause]) at the budget's end says that what had not happened.
func Context(parent context.Context, d time.Duration, what string) (context.Context, context.CancelFunc) {
	s := Slack()
	e := &ExceededError{What: what, Base: d, Slack: s, Budget: scale(d, s)}
	return context.WithTimeoutCause(parent, e.Budget, e)
}

// ExceededError is the cause of a Context whose budget ran out.
type ExceededError struct {
	What   string        // what the test waited for
	Base   time.Duration // the budget as the test gave it
	Slack  float64       // the factor applied
	Budget time.Duration // Base scaled by Slack
}

func (e *ExceededError) Error() string {
	return fmt.Sprintf("%s had not happened within %v (a budget of %v at slack %.3g; %s raises the slack)",
		e.What, e.Budget, e.Base, e.Slack, EnvSlack)
}

// Unwrap makes the error match context.DeadlineExceeded.
func (e *ExceededError) Unwrap() error { return context.DeadlineExceeded }

// envSlack parses the value of GORMA_TEST_SLACK; empty means 1.
func envSlack(v string) (float64, error) {
	if v = strings.TrimSpace(v); v == "" {
		return 1, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f >= 1) || f > 1e6 {
		return 0, fmt.Errorf("%s=%q: want a number of at least 1 (and at most 1e6)", EnvSlack, v)
	}
	return f, nil
}

// loadSlack returns the load factor of a 1-minute load average over cpus CPUs.
func loadSlack(load float64, cpus int) float64 {
	if cpus < 1 || !(load > float64(cpus)) {
		return 1
	}
	return min(load/float64(cpus), MaxAutoSlack)
}

// readLoad returns the 1-minute load average, or 0 where the system does not say.
func readLoad() float64 {
	b, err := os.ReadFile(loadavgFile)
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), " ")
	f, err := strconv.ParseFloat(first, 64)
	if err != nil {
		return 0
	}
	return f
}
