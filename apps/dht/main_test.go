package main

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
		want func(o options) bool
	}{
		{nil, true, func(o options) bool { return o.cache == "both" && o.keys == 65536 && o.warmup == o.lookups/10 }},
		{[]string{"--workload", "read-mostly"}, true, func(o options) bool {
			return o.zipf == 1.1 && o.updateFrac == 0.001 && o.lookups == 50000 && o.build == "remote"
		}},
		{[]string{"--workload", "no-hit", "--lookups", "10"}, true, func(o options) bool {
			return o.zipf == 0 && o.pageSize == 512 && o.lookups == 10 && o.warmup == 1 && o.build == "local"
		}},
		{[]string{"--cache", "on", "--warmup", "0", "--json"}, true, func(o options) bool { return o.jsonFlag && o.warmup == 0 }},
		{[]string{"--json=out.json"}, true, func(o options) bool { return !o.jsonFlag && o.jsonOut == "out.json" }},
		{[]string{"--workload", "write-heavy"}, false, nil},
		{[]string{"--cache", "maybe"}, false, nil},
		{[]string{"--page-size", "1000"}, false, nil},
		{[]string{"--page-size", "256"}, false, nil},
		{[]string{"--update-frac", "1.5"}, false, nil},
		{[]string{"--zipf", "-1"}, false, nil},
		{[]string{"--keys", "0"}, false, nil},
		{[]string{"--build", "elsewhere"}, false, nil},
		{[]string{"extra"}, false, nil},
	} {
		o, err := parseFlags(tc.args)
		if (err == nil) != tc.ok {
			t.Errorf("parseFlags(%q): %v, want ok %v", tc.args, err, tc.ok)
			continue
		}
		if tc.ok && !tc.want(o) {
			t.Errorf("parseFlags(%q) = %+v", tc.args, o)
		}
	}
}

func TestSequence(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ops := sequence(rng, 20000, 1000, 1.2, 0.1)
	var first, updates int
	for _, op := range ops {
		k := op &^ updateBit
		if k < 1 || k > 1000 {
			t.Fatalf("key %d out of 1..1000", k)
		}
		if k == 1 {
			first++
		}
		if op&updateBit != 0 {
			updates++
		}
	}
	// Key 1 has weight 1/H(1000, 1.2), about 0.2; uniform would give 0.001.
	if first < 3000 || first > 5000 {
		t.Errorf("key 1 drawn %d times of 20000 at zipf 1.2, want about 4000", first)
	}
	if updates < 1500 || updates > 2500 {
		t.Errorf("%d updates of 20000 at fraction 0.1", updates)
	}
}

func TestBuckets(t *testing.T) {
	for _, tc := range []struct{ keys, ranks, want int }{{1, 1, 4}, {16, 4, 8}, {65536, 4, 32768}, {1000, 3, 1024}} {
		if got := bucketsPerShard(tc.keys, tc.ranks); got != tc.want {
			t.Errorf("bucketsPerShard(%d, %d) = %d, want %d", tc.keys, tc.ranks, got, tc.want)
		}
	}
}

// TestRun runs 4 ranks on two pretend hosts (shm within, tcp between): both cache
// settings, updates included; every lookup is verified, and the cache hits with hot keys.
func TestRun(t *testing.T) {
	o, err := parseFlags([]string{"--keys", "512", "--lookups", "400", "--zipf", "1.2", "--update-frac", "0.02", "--batch", "16"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(60*time.Second))
	defer cancel()
	var out bytes.Buffer
	var rep report
	runtimetest.Run(t, 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}, func(w *runtime.World) error {
		text := &bytes.Buffer{}
		if w.Rank() == 0 {
			text = &out
		}
		r, err := measure(ctx, w, o, text)
		if w.Rank() == 0 {
			rep = r
		}
		return err
	})
	if len(rep.Runs) != 2 || rep.Runs[0].Cache != "off" || rep.Runs[1].Cache != "on" {
		t.Fatalf("runs %+v, want off then on", rep.Runs)
	}
	for _, r := range rep.Runs {
		if r.Lookups+r.Updates != 4*400 || r.OpsPerS <= 0 || r.MedianUS <= 0 {
			t.Errorf("run %+v: want 1600 operations timed", r)
		}
	}
	if off := rep.Runs[0]; off.Hits+off.Misses != 0 {
		t.Errorf("cache off counted hits or misses: %+v", off)
	}
	if on := rep.Runs[1]; on.Hits == 0 || on.Updates == 0 {
		t.Errorf("cache on: %+v: want hits and updates", on)
	}
	if s := out.String(); !strings.Contains(s, "# speedup with the cache on") || !strings.Contains(s, "every lookup's value verified") {
		t.Errorf("output:\n%s", s)
	}
	t.Logf("\n%s", out.String())
}

// TestWrongValue: a lookup that finds a corrupted value or no key fails with errWrong.
func TestWrongValue(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	runtimetest.Run(t, 1, runtimetest.Options{}, func(w *runtime.World) error {
		tb, err := newTable(ctx, w, 64, 4096, true)
		if err != nil {
			return err
		}
		if err := tb.build(ctx, 0, 64, 8, false); err != nil {
			return err
		}
		if err := tb.win.LockAll(ctx, 0); err != nil {
			return err
		}
		if err := tb.lookup(ctx, 7); err != nil {
			t.Errorf("lookup of key 7 after the build: %v", err)
		}
		_, b, _, err := tb.find(ctx, 7)
		if err != nil {
			return err
		}
		tb.win.Local()[b*bucketElems+1] ^= 1
		var wrong *errWrong
		if err := tb.lookup(ctx, 7); !errors.As(err, &wrong) {
			t.Errorf("lookup of a corrupted key: %v, want errWrong", err)
		}
		if err := tb.lookup(ctx, 65); !errors.As(err, &wrong) {
			t.Errorf("lookup of a key never inserted: %v, want errWrong", err)
		}
		if err := tb.win.UnlockAll(ctx); err != nil {
			return err
		}
		return tb.win.Free(ctx)
	})
}
