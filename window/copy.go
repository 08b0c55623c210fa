package window

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
)

// copyPiece is the largest piece copyMapped hands to Go's copy: under the 1 MiB from
// which runtime.memmove switches to non-temporal stores on processors without fast
// short REP MOVSB (the AVX path of memmove_amd64.s).
const copyPiece = 512 << 10

// ermsMin is the shortest copy (bytes) that copyMapped hands to copyPieces: below it
// memmove's vector loop is as fast.
const ermsMin = 32 << 10

// copyMapped copies src into dst, one of them the window memory of a mapped rank, and
// returns the number of elements copied.
//
// Non-temporal stores bypass the caches. The rank that receives a Put usually reads it
// soon, and a benchmark loop rewrites one buffer: both then load from memory what a
// cached copy left in the cache. So a copy from ermsMin bytes up to the last-level
// cache's size (cachedMax) goes in pieces of copyPiece bytes (copyPieces: REP MOVSB
// where fast, else memmove, which makes pieces under 1 MiB with cached stores), as
// glibc's memcpy (and so Open MPI's osc/sm) does below its own non-temporal threshold.
// A larger copy outgrows the cache anyway: memmove copies it whole, streaming.
// Overlapping ranges (a Put of a rank's own window memory to itself) always take
// memmove. `go test -run '^$' -bench CopyMapped ./window` compares the ways at each
// size.
func copyMapped[T runtime.Elem](dst, src []T) int {
	n := min(len(dst), len(src))
	nb := n * elemSize[T]()
	if nb < ermsMin || nb > cachedMax() || overlap(dst[:n], src[:n]) {
		return copy(dst, src)
	}
	d, s := asBytes(dst[:n]), asBytes(src[:n])
	if copyPieces(d, s) {
		return n
	}
	if nb < 2*copyPiece {
		return copy(dst, src)
	}
	for i := 0; i < nb; i += copyPiece {
		j := min(i+copyPiece, nb)
		copy(d[i:j], s[i:j])
	}
	return n
}

// overlap reports whether a and b (non-empty) share memory.
func overlap[T runtime.Elem](a, b []T) bool {
	pa, pb := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	sz := uintptr(len(a) * elemSize[T]())
	return pa < pb+sz && pb < pa+sz
}

// cachedMax is the largest copy that copyMapped keeps in the caches: the size of the
// last-level cache that cpu0 sees (sysfs), or 8 MiB where sysfs does not say.
var cachedMax = sync.OnceValue(func() int {
	const dflt = 8 << 20
	best, bestLevel := 0, 0
	for i := 0; i < 8; i++ {
		dir := "/sys/devices/system/cpu/cpu0/cache/index" + strconv.Itoa(i) + "/"
		typ, err := os.ReadFile(dir + "type")
		if err != nil {
			break
		}
		if strings.TrimSpace(string(typ)) == "Instruction" {
			continue
		}
		lv, err1 := os.ReadFile(dir + "level")
		sz, err2 := os.ReadFile(dir + "size")
		if err1 != nil || err2 != nil {
			continue
		}
		level, _ := strconv.Atoi(strings.TrimSpace(string(lv)))
		if b := parseCacheSize(strings.TrimSpace(string(sz))); b > 0 && level >= bestLevel {
			best, bestLevel = b, level
		}
	}
	if best == 0 {
		return dflt
	}
	return best
})

// parseCacheSize parses sysfs's cache size ("32768K", "1M", "512"), in bytes; 0 if it
// does not parse.
func parseCacheSize(s string) int {
	mul := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mul, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mul, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mul, s = 1<<30, s[:len(s)-1]
	}
	v, err := strconv.Atoi(s)
	if err != nil || v <= 0 {
		return 0
	}
	return v * mul
}
