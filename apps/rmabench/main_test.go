package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"--test", "put_lat,fence", "--max-size", "4K"}, true},
		{[]string{"--test", "get_lat.pscw"}, true},
		{[]string{"--test", "nosuch"}, false},
		{[]string{"--test", "put_lat.nosuch"}, false},
		{[]string{"--min-size", "0"}, false},
		{[]string{"--min-size", "8K", "--max-size", "4K"}, false},
		{[]string{"--busy", "0s"}, false},
		{[]string{"extra"}, false},
	} {
		if _, err := parseFlags(tc.args); (err == nil) != tc.ok {
			t.Errorf("parseFlags(%q) = %v, want ok %v", tc.args, err, tc.ok)
		}
	}
}

func TestSelected(t *testing.T) {
	for _, tc := range []struct {
		sel  []string
		name string
		want bool
	}{
		{[]string{"all"}, "put_lat.lock", true},
		{[]string{"put_lat"}, "put_lat.fence", true},
		{[]string{"put_lat"}, "put_bw", false},
		{[]string{"put_lat.lock"}, "put_lat.lock_all", false},
		{[]string{"fence"}, "fence", true},
		{[]string{"fence"}, "put_lat.fence", false},
		{[]string{"x", "alloc_free"}, "alloc_free.create", true},
	} {
		if got := selected(tc.sel, tc.name); got != tc.want {
			t.Errorf("selected(%q, %q) = %v, want %v", tc.sel, tc.name, got, tc.want)
		}
	}
}

// TestEveryCase runs every case once with tiny counts in an in-process world of two
// ranks: each must complete and print its table (the figures are not checked: this is a
// benchmark, timed only by its runs).
func TestEveryCase(t *testing.T) {
	o, err := parseFlags([]string{"--max-size", "16", "--iters", "20", "--bw-iters", "2", "--alloc-iters", "2",
		"--busy", "20ms", "--busy-reps", "1"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	runtimetest.Run(t, 2, runtimetest.Options{}, func(w *runtime.World) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		text := &bytes.Buffer{}
		if w.Rank() == 0 {
			text = &out
		}
		_, err := measureAll(ctx, w, o, text)
		return err
	})
	for _, c := range cases {
		if !strings.Contains(out.String(), "\n# "+c.name+": ") {
			t.Errorf("no table for case %s in:\n%s", c.name, out.String())
		}
	}
}
