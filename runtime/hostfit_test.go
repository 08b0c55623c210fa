package runtime

import (
	"errors"
	"testing"
)

func TestParseProcs(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want procsPolicy
		err  bool
	}{
		{"", procsAuto, false},
		{"auto", procsAuto, false},
		{"go", procsGo, false},
		{"1", 1, false},
		{"16", 16, false},
		{"0", 0, true},
		{"-2", 0, true},
		{"two", 0, true},
		{"1.5", 0, true},
		{"99999999", 0, true},
	} {
		got, err := parseProcs(tt.in)
		if tt.err {
			if !errors.Is(err, ErrConfig) {
				t.Errorf("parseProcs(%q) = %v, %v; want an ErrConfig error", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseProcs(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestHostProcs(t *testing.T) {
	for _, tt := range []struct {
		name             string
		policy           procsPolicy
		envSet           bool
		cur, local, ncpu int
		want             int
	}{
		{"count wins", 1, true, 16, 1, 16, 1},
		{"count above cur", 8, false, 2, 16, 16, 8},
		{"go keeps", procsGo, false, 16, 16, 16, 0},
		{"auto keeps GOMAXPROCS", procsAuto, true, 16, 16, 16, 0},
		{"auto, full host", procsAuto, false, 16, 16, 16, fullHostProcs},
		{"auto, oversubscribed", procsAuto, false, 16, 64, 16, fullHostProcs},
		{"auto, half a host", procsAuto, false, 16, 8, 16, 0},
		{"auto, full host, cur already low", procsAuto, false, 2, 2, 2, 0},
		{"auto, bound to one processor", procsAuto, false, 1, 4, 2, 0},
		{"auto, a world of one", procsAuto, false, 16, 1, 16, 0},
	} {
		if got := hostProcs(tt.policy, tt.envSet, tt.cur, tt.local, tt.ncpu); got != tt.want {
			t.Errorf("%s: hostProcs(%v, %v, cur %d, local %d, ncpu %d) = %d, want %d",
				tt.name, tt.policy, tt.envSet, tt.cur, tt.local, tt.ncpu, got, tt.want)
		}
	}
}
