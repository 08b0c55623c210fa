package hostgroup

import (
	"errors"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
)

// TestParseSHMTune checks GORMA_SHM_TUNE's parser: each key, the defaults, and the
// values it refuses with ErrConfig.
func TestParseSHMTune(t *testing.T) {
	def := tuning{chunkMax: ChunkMax, ntSpread: ntAuto, single: singleMinDefault}
	for _, tc := range []struct {
		in   string
		want tuning
	}{
		{"", def},
		{"medium=4096", tuning{medium: 4096, chunkMax: ChunkMax, ntSpread: ntAuto, single: singleMinDefault}},
		{" chunk=65536 , nt=off ", tuning{chunkMax: 64 << 10, chunkSet: true, single: singleMinDefault}},
		{"nt=on,chunk=16777216", tuning{chunkMax: 16 << 20, chunkSet: true, nt: true, ntSpread: true, single: singleMinDefault}},
		{"nt=auto", def},
		{"single=off", tuning{chunkMax: ChunkMax, ntSpread: ntAuto}},
		{"single=65536", tuning{chunkMax: ChunkMax, ntSpread: ntAuto, single: 64 << 10}},
	} {
		got, err := parseTune(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseTune(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"medium", "medium=-1", "medium=x", "chunk=3000", "chunk=2048", "chunk=33554432", "nt=yes", "fast=1", "single=0", "single=on"} {
		got, err := parseTune(in)
		if !errors.Is(err, runtime.ErrConfig) || got != def {
			t.Errorf("parseTune(%q) = %+v, %v; want the defaults and ErrConfig", in, got, err)
		}
	}
}

// TestSHMMediumFor checks the size classes' rule at each rank count: one step always at
// p < 4, and by blocks from a size no larger than the small slot beyond.
func TestSHMMediumFor(t *testing.T) {
	for p := 1; p <= 64; p++ {
		m := MediumFor(p)
		switch {
		case p < 4 && m <= SmallMax:
			t.Errorf("p=%d: by blocks from %d bytes; want one step up to the small slot", p, m)
		case p >= 4 && (m < 1<<10 || m > SmallMax):
			t.Errorf("p=%d: by blocks from %d bytes; want a size from 1 KiB to the small slot", p, m)
		}
	}
}

// TestSHMChunkFor checks the big buffers' size: a power of two from ChunkMin to
// ChunkMax, no larger than the vector needs, and within hostBig per host.
func TestSHMChunkFor(t *testing.T) {
	for _, local := range []int{1, 2, 4, 16, 64, 256} {
		for _, bytes := range []int{1, ChunkMin, ChunkMin + 1, 300 << 10, 16 << 20} {
			c := ChunkFor(bytes, local)
			switch {
			case c&(c-1) != 0 || c < ChunkMin || c > ChunkMax:
				t.Errorf("ChunkFor(%d, %d) = %d: want a power of two in [%d, %d]", bytes, local, c, ChunkMin, ChunkMax)
			case c > ChunkMin && c/2 >= bytes:
				t.Errorf("ChunkFor(%d, %d) = %d: half of it holds the vector", bytes, local, c)
			case c > ChunkMin && 2*c*2*local > hostBig:
				t.Errorf("ChunkFor(%d, %d) = %d: the host's buffers pass %d bytes", bytes, local, c, hostBig)
			}
		}
	}
}

// TestSpreadNT: under nt=auto, blocks that each go to one other member take
// non-temporal stores only in groups of ntSpreadMin members or more (where ntAuto says
// so); nt=on takes them at any size, nt=off never.
func TestSpreadNT(t *testing.T) {
	for _, c := range []struct {
		tune    string
		members int
		want    bool
	}{
		{"", 2, false}, {"", 4, false}, {"", ntSpreadMin - 1, false}, {"", ntSpreadMin, ntAuto}, {"", 16, ntAuto},
		{"nt=auto", 4, false}, {"nt=auto", 16, ntAuto},
		{"nt=on", 2, true}, {"nt=on", 16, true},
		{"nt=off", 2, false}, {"nt=off", 16, false},
	} {
		tu, err := parseTune(c.tune)
		if err != nil {
			t.Fatalf("%q: %v", c.tune, err)
		}
		if got := tu.spreadNT(c.members); got != c.want {
			t.Errorf("%q, %d members: non-temporal %v, want %v", c.tune, c.members, got, c.want)
		}
	}
}
