package window

import (
	"fmt"
	"testing"
)

func TestCopyMapped(t *testing.T) {
	for _, n := range []int{0, 1, 7, ermsMin - 1, ermsMin, ermsMin + 5, copyPiece - 1, copyPiece + 13, 2 * copyPiece, 2*copyPiece + 3, 5*copyPiece + 1} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i*7 + 1)
		}
		dst := make([]byte, n+1)
		if got := copyMapped(dst, src); got != n {
			t.Fatalf("copyMapped of %d bytes copied %d", n, got)
		}
		for i := range src {
			if dst[i] != src[i] {
				t.Fatalf("copyMapped of %d bytes: byte %d is %d, want %d", n, i, dst[i], src[i])
			}
		}
		if dst[n] != 0 {
			t.Fatalf("copyMapped of %d bytes wrote past the source's end", n)
		}
	}
	f := make([]float64, 3*copyPiece/8+5)
	for i := range f {
		f[i] = float64(i)
	}
	g := make([]float64, len(f))
	copyMapped(g, f)
	for i := range f {
		if g[i] != f[i] {
			t.Fatalf("float64 copy: element %d is %v, want %v", i, g[i], f[i])
		}
	}
}

func TestCopyMappedOverlap(t *testing.T) {
	const n = 3 * copyPiece
	for _, shift := range []int{1, 4096, copyPiece + 7} {
		buf, want := make([]byte, n+shift), make([]byte, n+shift)
		for i := range buf {
			buf[i] = byte(i * 13)
		}
		copy(want, buf)
		copy(want[shift:], want[:n])
		copyMapped(buf[shift:], buf[:n])
		for i := range buf {
			if buf[i] != want[i] {
				t.Fatalf("overlapping copy, shift %d: byte %d is %d, want %d", shift, i, buf[i], want[i])
			}
		}
	}
}

func TestParseCacheSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{{"32768K", 32 << 20}, {"1M", 1 << 20}, {"512", 512}, {"2G", 2 << 30}, {"", 0}, {"xK", 0}, {"-1K", 0}} {
		if got := parseCacheSize(c.in); got != c.want {
			t.Errorf("parseCacheSize(%q) = %d, want %d", c.in, got, c.want)
		}
	}
	if cachedMax() <= 0 {
		t.Fatalf("cachedMax() = %d", cachedMax())
	}
}

// BenchmarkCopyMapped compares copyMapped with a whole copy (runtime.memmove, which
// may stream with non-temporal stores from 1 MiB) at each size, rewriting one
// destination as rmabench's put_bw does, and then reading it as a target would.
func BenchmarkCopyMapped(b *testing.B) {
	for _, n := range []int{32 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20, 8 << 20, 64 << 20} {
		src, dst := make([]byte, n), make([]byte, n)
		for i := range src { // fault every page in before the clock starts
			src[i], dst[i] = byte(i), byte(i)
		}
		for _, v := range []struct {
			name string
			cp   func(dst, src []byte) int
		}{{"pieces", copyMapped[byte]}, {"whole", func(d, s []byte) int { return copy(d, s) }}} {
			b.Run(fmt.Sprintf("%dK/%s", n>>10, v.name), func(b *testing.B) {
				b.SetBytes(int64(n))
				for b.Loop() {
					v.cp(dst, src)
				}
			})
			b.Run(fmt.Sprintf("%dK/%s+read", n>>10, v.name), func(b *testing.B) {
				b.SetBytes(int64(n))
				var sum byte
				for b.Loop() {
					v.cp(dst, src)
					for i := 0; i < n; i += 64 {
						sum += dst[i]
					}
				}
				sinkByte = sum
			})
		}
	}
}

var sinkByte byte
