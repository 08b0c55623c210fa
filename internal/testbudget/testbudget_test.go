package testbudget

import (
	"context"
	"errors"
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
