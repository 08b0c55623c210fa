package main

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

func TestParseFlagsErrors(t *testing.T) {
	tests := []struct {
		args []string
		want []string // substrings of the error
	}{
		{[]string{"--provider", "ib"}, []string{`"ib"`, "shm", "tcp", "all"}},
		{[]string{"--provider", "shm,verbs"}, []string{`"verbs"`, "shm, tcp or all"}},
		{[]string{"--test", "write_latency"}, []string{`"write_latency"`, "write_lat", "flag_pp"}},
		{[]string{"--wait", "poll"}, []string{`"poll"`, "spin, hybrid or block"}},
		{[]string{"--wait", ""}, []string{"spin, hybrid or block"}},
		{[]string{"--min-size", "4"}, []string{"--min-size 4", "multiple of 8"}},
		{[]string{"--min-size", "12"}, []string{"multiple of 8"}},
		{[]string{"--min-size", "1M", "--max-size", "64K"}, []string{"larger than --max-size"}},
		{[]string{"--max-size", "1G"}, []string{"at most"}},
		{[]string{"--max-size", "lots"}, []string{"--max-size", "bad size"}},
		{[]string{"--iters", "-1"}, []string{"--iters"}},
		{[]string{"--window", "0"}, []string{"--window 0", "1..128"}},
		{[]string{"--window", "129"}, []string{"1..128"}},
		{[]string{"--timeout", "0s"}, []string{"--timeout"}},
		{[]string{"extra"}, []string{`"extra"`}},
		{[]string{"--no-such-flag"}, []string{"no-such-flag"}},
	}
	for _, tc := range tests {
		_, err := parseFlags(tc.args, io.Discard)
		if err == nil {
			t.Errorf("parseFlags(%q) succeeded, want an error", tc.args)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("parseFlags(%q) = %q, want it to mention %q", tc.args, err, w)
			}
		}
	}
}

func TestParseFlagsDefaults(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.providers, []string{"shm", "tcp"}) {
		t.Errorf("providers = %v", o.providers)
	}
	if !slices.Equal(o.tests, slices.Concat(floorTests, providerTests)) {
		t.Errorf("tests = %v", o.tests)
	}
	if o.minSize != 8 || o.maxSize != 64<<20 || o.wait != verbs.WaitHybrid || o.jsonOut != "" || o.peer {
		t.Errorf("defaults = %+v", o)
	}
	sizes := o.sizes()
	if len(sizes) != 24 || sizes[0] != 8 || sizes[len(sizes)-1] != 64<<20 {
		t.Errorf("sizes = %v", sizes)
	}
}

func TestParseFlagsValues(t *testing.T) {
	o, err := parseFlags([]string{"--provider=tcp", "--test", "bw, read_lat,memcpy", "--min-size", "1K",
		"--max-size", "64KiB", "--wait", "spin", "--json", "--quick"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.providers, []string{"tcp"}) {
		t.Errorf("providers = %v", o.providers)
	}
	if want := []string{"memcpy", "read_lat", "write_bw", "read_bw"}; !slices.Equal(o.tests, want) {
		t.Errorf("tests = %v, want %v", o.tests, want)
	}
	if o.jsonOut != "-" || o.wait != verbs.WaitSpin {
		t.Errorf("json %q wait %v", o.jsonOut, o.wait)
	}
	if want := []int{4 << 10, 64 << 10}; !slices.Equal(o.sizes(), want) {
		t.Errorf("quick sizes = %v, want %v", o.sizes(), want)
	}
	o, err = parseFlags([]string{"--json=out.json", "--test", "floors", "--peer"}, io.Discard)
	if err != nil || o.jsonOut != "out.json" || !o.peer {
		t.Errorf("--json=out.json --peer: %+v, %v", o, err)
	}
	if _, err := parseFlags([]string{"--help"}, io.Discard); !errors.Is(err, errHelp) {
		t.Errorf("--help: %v", err)
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int
		ok   bool
	}{
		{"8", 8, true}, {"4096", 4096, true}, {"64K", 64 << 10, true}, {"64k", 64 << 10, true},
		{"1M", 1 << 20, true}, {"64MiB", 64 << 20, true}, {"2MB", 2 << 20, true}, {"16B", 16, true},
		{" 1G ", 1 << 30, true}, {"", 0, false}, {"K", 0, false}, {"-8", 0, false}, {"1.5M", 0, false},
		{"99999999999999G", 0, false},
	}
	for _, tc := range tests {
		got, err := parseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestSizesAndIters(t *testing.T) {
	o := &options{minSize: 24, maxSize: 200}
	if got, want := o.sizes(), []int{24, 32, 64, 128}; !slices.Equal(got, want) {
		t.Errorf("sizes = %v, want %v", got, want)
	}
	o = &options{minSize: 8, maxSize: 64 << 20}
	if w, n := o.latIters(8); n != 10000 || w != 1000 {
		t.Errorf("latIters(8) = %d, %d", w, n)
	}
	if _, n := o.latIters(64 << 20); n != 20 {
		t.Errorf("latIters(64M) = %d, want the floor 20", n)
	}
	if _, n := o.latIters(1 << 20); n != 156 {
		t.Errorf("latIters(1M) = %d", n)
	}
	if n, reps := o.bwIters(1 << 20); n != 256 || reps != 3 {
		t.Errorf("bwIters(1M) = %d, %d", n, reps)
	}
	o.quick, o.iters = true, 7
	if w, n := o.latIters(8); n != 7 || w != 3 {
		t.Errorf("quick latIters(8) with --iters 7 = %d, %d", w, n)
	}
	if n, reps := o.bwIters(8); n != 7 || reps != 1 {
		t.Errorf("quick bwIters(8) with --iters 7 = %d, %d", n, reps)
	}
}
