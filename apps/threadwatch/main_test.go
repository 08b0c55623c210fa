package main

import (
	"testing"
	"time"
)

func TestSplitStat(t *testing.T) {
	for _, tt := range []struct {
		line, comm, state, ppid string
		ok                      bool
	}{
		{"42 (allreducebench) R 41 42 41 0", "allreducebench", "R", "41", true},
		{"7 (a (b) c) S 1 7", "a (b) c", "S", "1", true}, // a name may hold parentheses
		{"garbage", "", "", "", false},
	} {
		comm, rest, ok := splitStat(tt.line)
		if ok != tt.ok || comm != tt.comm || ok && (rest[0] != tt.state || rest[1] != tt.ppid) {
			t.Errorf("splitStat(%q) = %q, %q, %v", tt.line, comm, rest, ok)
		}
	}
}

// TestWatchSamplesChild watches a shell whose child sleeps: the child is found below the
// command, sampled, and has one thread, which sleeps.
func TestWatchSamplesChild(t *testing.T) {
	s, code, err := watch("sleep", time.Millisecond, []string{"sh", "-c", "sleep 0.5; exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	if code != 3 {
		t.Errorf("exit code %d, want the command's 3", code)
	}
	if s.Processes != 1 || s.Samples == 0 {
		t.Fatalf("saw %d processes in %d samples, want the one sleep", s.Processes, s.Samples)
	}
	if s.ThreadsMax != 1 || s.ThreadsMean != 1 {
		t.Errorf("threads mean %v max %d, want 1", s.ThreadsMean, s.ThreadsMax)
	}
	if s.Histogram[0] == 0 {
		t.Errorf("histogram %v: the sleeping process was never seen idle", s.Histogram)
	}
}
