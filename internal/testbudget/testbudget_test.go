package testbudget

import (
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"
)

func TestEnvSlack(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"", 1, true},
		{" ", 1, true},
		{"1", 1, true},
		{"2.5", 2.5, true},
		{"30", 30, true},
		{"0.5", 0, false},
		{"0", 0, false},
		{"-3", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"x", 0, false},
	} {
		got, err := envSlack(tt.in)
		if (err == nil) != tt.ok || (tt.ok && got != tt.want) {
			t.Errorf("envSlack(%q) = %v, %v; want %v (ok %v)", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), EnvSlack) {
			t.Errorf("envSlack(%q): error %q does not name %s", tt.in, err, EnvSlack)
		}
	}
}

func TestLoadSlack(t *testing.T) {
	for _, tt := range []struct {
		load float64
		cpus int
		want float64
	}{
		{0, 2, 1},
		{1.5, 2, 1},
		{2, 2, 1},
		{30, 2, 15},
		{27, 2, 13.5},
		{1000, 2, MaxAutoSlack},
		{30, 0, 1},
	} {
		if got := loadSlack(tt.load, tt.cpus); got != tt.want {
			t.Errorf("loadSlack(%v, %d) = %v, want %v", tt.load, tt.cpus, got, tt.want)
		}
	}
}

func TestScaleFollowsEnv(t *testing.T) {
	t.Setenv(EnvSlack, "1000") // above any load factor
	if got, want := Scale(10*time.Millisecond), 10*time.Second; got != want {
		t.Errorf("Scale(10ms) at %s=1000 = %v, want %v", EnvSlack, got, want)
	}
	t.Setenv(EnvSlack, "1")
	if got := Scale(time.Second); got < time.Second || got > MaxAutoSlack*time.Second {
		t.Errorf("Scale(1s) at %s=1 = %v, want between 1s and %ds", EnvSlack, got, MaxAutoSlack)
	}
}

func TestSlackPanicsOnBadEnv(t *testing.T) {
	t.Setenv(EnvSlack, "0.1")
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(error).Error(), EnvSlack) {
			t.Errorf("Slack at %s=0.1: recovered %v, want a panic naming the variable", EnvSlack, r)
		}
	}()
	Slack()
}

func TestContextCause(t *testing.T) {
	t.Setenv(EnvSlack, "1")
	ctx, cancel := Context(context.Background(), time.Millisecond, "the answer")
	defer cancel()
	<-ctx.Done()
	cause := context.Cause(ctx)
	if !errors.Is(cause, context.DeadlineExceeded) || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("cause %v, err %v: want both to match context.DeadlineExceeded", cause, ctx.Err())
	}
	if msg := cause.Error(); !strings.HasPrefix(msg, "the answer had not happened within ") {
		t.Errorf("cause %q does not say what had not happened", msg)
	}
}

// The package timeout's clock follows the wall clock at slack 1 and runs slower by the
// slack of each read.
func TestClock(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := &clock{limit: 10 * time.Minute, start: t0, last: t0}
	if c.read(t0.Add(9*time.Minute), 1) {
		t.Fatal("expired after 9 minutes at slack 1")
	}
	// 5 minutes at slack 10 count as 30 seconds.
	if c.read(t0.Add(14*time.Minute), 10) || c.used != 9*time.Minute+30*time.Second {
		t.Fatalf("clock at %v, want 9m30s", c.used)
	}
	c = &clock{limit: 10 * time.Minute, start: t0, last: t0}
	if c.read(t0.Add(90*time.Minute), 10) {
		t.Fatal("expired after 90 minutes at slack 10 (9 minutes of clock time)")
	}
	if !c.read(t0.Add(100*time.Minute), 10) {
		t.Fatal("not expired after 100 minutes at slack 10")
	}
	// A slack under 1 counts as 1.
	c = &clock{limit: time.Minute, start: t0, last: t0}
	if c.read(t0.Add(30*time.Second), 0.5) || c.used != 30*time.Second {
		t.Fatalf("slack 0.5: clock at %v, want 30s", c.used)
	}
}

func TestTimeoutSetting(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	d := fs.Duration("test.timeout", 0, "")
	f := fs.Lookup("test.timeout")
	for _, tc := range []struct {
		flag time.Duration
		env  string
		want time.Duration
		bad  bool
	}{
		{0, "", 0, false},
		{0, "18m", 18 * time.Minute, false},
		{5 * time.Minute, "18m", 5 * time.Minute, false},
		{0, "soon", 0, true},
		{0, "-1m", 0, true},
	} {
		*d = tc.flag
		got, err := timeout(f, tc.env)
		if got != tc.want || (err != nil) != tc.bad {
			t.Errorf("flag %v env %q: %v, %v; want %v (error %v)", tc.flag, tc.env, got, err, tc.want, tc.bad)
		}
		if err != nil && !strings.Contains(err.Error(), EnvTimeout) {
			t.Errorf("error %q does not name %s", err, EnvTimeout)
		}
	}
}
