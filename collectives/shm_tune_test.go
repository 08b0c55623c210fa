package collectives

import (
	"errors"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
)

// TestParseSHMTune checks GORMA_SHM_TUNE's parser: each key, the defaults, and the
// values it refuses with ErrConfig.
func TestParseSHMTune(t *testing.T) {
	def := shmTuning{chunkMax: shmChunkMax, ntSpread: shmNTAuto, single: shmSingleMin}
	for _, tc := range []struct {
		in   string
		want shmTuning
	}{
		{"", def},
		{"medium=4096", shmTuning{medium: 4096, chunkMax: shmChunkMax, ntSpread: shmNTAuto, single: shmSingleMin}},
		{" chunk=65536 , nt=off ", shmTuning{chunkMax: 64 << 10, chunkSet: true, single: shmSingleMin}},
		{"nt=on,chunk=16777216", shmTuning{chunkMax: 16 << 20, chunkSet: true, nt: true, ntSpread: true, single: shmSingleMin}},
		{"nt=auto", def},
		{"single=off", shmTuning{chunkMax: shmChunkMax, ntSpread: shmNTAuto}},
		{"single=65536", shmTuning{chunkMax: shmChunkMax, ntSpread: shmNTAuto, single: 64 << 10}},
	} {
		got, err := parseSHMTune(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseSHMTune(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"medium", "medium=-1", "medium=x", "chunk=3000", "chunk=2048", "chunk=33554432", "nt=yes", "fast=1", "single=0", "single=on"} {
		got, err := parseSHMTune(in)
		if !errors.Is(err, runtime.ErrConfig) || got != def {
			t.Errorf("parseSHMTune(%q) = %+v, %v; want the defaults and ErrConfig", in, got, err)
		}
	}
}

// TestSHMMediumFor checks the size classes' rule at each rank count: one step always at
// p < 4, and by blocks from a size no larger than the small slot beyond.
func TestSHMMediumFor(t *testing.T) {
	for p := 1; p <= 64; p++ {
		m := shmMediumFor(p)
		switch {
		case p < 4 && m <= shmSmallMax:
			t.Errorf("p=%d: by blocks from %d bytes; want one step up to the small slot", p, m)
		case p >= 4 && (m < 1<<10 || m > shmSmallMax):
			t.Errorf("p=%d: by blocks from %d bytes; want a size from 1 KiB to the small slot", p, m)
		}
	}
}

// TestSHMChunkFor checks the big buffers' size: a power of two from shmChunkMin to
// shmChunkMax, no larger than the vector needs, and within shmHostBig per host.
func TestSHMChunkFor(t *testing.T) {
	for _, local := range []int{1, 2, 4, 16, 64, 256} {
		for _, bytes := range []int{1, shmChunkMin, shmChunkMin + 1, 300 << 10, 16 << 20} {
			c := shmChunkFor(bytes, local)
			switch {
			case c&(c-1) != 0 || c < shmChunkMin || c > shmChunkMax:
				t.Errorf("shmChunkFor(%d, %d) = %d: want a power of two in [%d, %d]", bytes, local, c, shmChunkMin, shmChunkMax)
			case c > shmChunkMin && c/2 >= bytes:
				t.Errorf("shmChunkFor(%d, %d) = %d: half of it holds the vector", bytes, local, c)
			case c > shmChunkMin && 2*c*2*local > shmHostBig:
				t.Errorf("shmChunkFor(%d, %d) = %d: the host's buffers pass %d bytes", bytes, local, c, shmHostBig)
			}
		}
	}
}
