package main

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// memcpy: copy within the parent, per size, between two shared memfd mappings, the kind
// of memory an shm RDMA write copies between. (On this machine kind, copies between Go heap
// buffers can run markedly slower than between shared mappings, so heap memory would make
// a floor that flatters the provider.)
func (f *floors) memcpy() error {
	f.r.begin(Result{Test: "memcpy", Provider: "raw", Kind: kindBandwidth,
		Title: "copy() between two memfd shared mappings of this process, same bytes every time"})
	for _, n := range f.o.sizes() {
		iters, reps := f.o.bwIters(n)
		if _, err := f.memcpyRate(n, max(iters/10, 2)); err != nil {
			return err
		}
		var gb []float64
		for range reps {
			g, err := f.memcpyRate(n, iters)
			if err != nil {
				return err
			}
			gb = append(gb, g)
		}
		f.r.row(bwRow(n, iters, gb))
	}
	return nil
}

// memcpyRate copies n bytes iters times and returns GB/s.
func (f *floors) memcpyRate(n, iters int) (float64, error) {
	if len(f.scratch[0]) < n {
		if err := f.mapScratch(); err != nil {
			return 0, err
		}
	}
	src, dst := f.scratch[0][:n], f.scratch[1][:n]
	start := time.Now()
	copyLoop(dst, src, iters)
	return gbps(int64(n)*int64(iters), time.Since(start)), nil
}

// mapScratch maps the memcpy buffers, of the largest size, faulted in.
func (f *floors) mapScratch() error {
	sizes := f.o.sizes()
	n := sizes[len(sizes)-1]
	for i := range f.scratch {
		if f.scratch[i] != nil {
			unix.Munmap(f.scratch[i])
			f.scratch[i] = nil
		}
		b, err := mapShared(n)
		if err != nil {
			return fmt.Errorf("memcpy buffers: %w", err)
		}
		for j := range b {
			b[j] = byte(j)
		}
		f.scratch[i] = b
	}
	return nil
}

// mapShared maps n bytes of a fresh memfd, shared, and closes the descriptor (the mapping
// keeps the memory).
func mapShared(n int) ([]byte, error) {
	fd, err := unix.MemfdCreate("verbsperf-memcpy", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(n)); err != nil {
		return nil, fmt.Errorf("ftruncate: %w", err)
	}
	return unix.Mmap(fd, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

//go:noinline
func copyLoop(dst, src []byte, iters int) {
	for range iters {
		copy(dst, src)
	}
}

// segmentSizes are the sizes of the segment floor and the arena test.
func (o *options) segmentSizes() []int {
	if o.quick {
		return []int{1 << 20}
	}
	return []int{64 << 10, 1 << 20, 16 << 20}
}

// segmentIters scales iterations down with size: 1 MiB faults in 256 pages.
func (o *options) segmentIters(n int, base int) (warmup, iters int) {
	if o.quick {
		base /= 10
	}
	if o.iters > 0 {
		base = o.iters
	}
	iters = max(int(int64(base)*(1<<20)/int64(max(n, 1<<20))), 10)
	return max(iters/10, 2), iters
}

// segment: what a registration costs without the arena: memfd_create, ftruncate, mmap,
// fault in every page, munmap, close.
func (f *floors) segment() error {
	f.r.begin(Result{Test: "segment", Provider: "raw", Kind: kindLatency,
		Title: "fresh segment: memfd_create + ftruncate + mmap + fault in every page + munmap + close"})
	for _, n := range f.o.segmentSizes() {
		warm, iters := f.o.segmentIters(n, 500)
		m, err := measure(warm, iters, func(int) error { return freshSegment(n) })
		if err != nil {
			return fmt.Errorf("segment %d B: %w", n, err)
		}
		f.r.row(m.latency(n, 1))
	}
	return nil
}

func freshSegment(n int) error {
	fd, err := unix.MemfdCreate("verbsperf-seg", unix.MFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("memfd_create: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, int64(n)); err != nil {
		return fmt.Errorf("ftruncate: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap: %w", err)
	}
	for off := 0; off < n; off += pageSize {
		mem[off] = 1
	}
	return unix.Munmap(mem)
}

// arena: PD.AllocMR + MR.Dereg of one size on reuse, with the device's arena counters
// over the measured loop.
func (b *bench) arena() error {
	s := b.s
	b.r.begin(Result{Test: "arena", Mode: "alloc_free", Provider: s.provider, Kind: kindLatency,
		Title: "PD.AllocMR + MR.Dereg on reuse (memory already faulted in and mapped)"})
	for _, n := range b.o.segmentSizes() {
		// Fault the bytes in once, as a first use does; later allocations reuse them.
		mr, err := s.pd.AllocMR(n, verbs.AccessAll)
		if err != nil {
			return fmt.Errorf("arena %d B: %w", n, err)
		}
		mem := mr.Bytes()
		for off := 0; off < len(mem); off += pageSize {
			mem[off] = 1
		}
		if err := mr.Dereg(); err != nil {
			return fmt.Errorf("arena %d B: %w", n, err)
		}
		warm, iters := b.o.segmentIters(n, 20000)
		before := s.dev.Stats()
		m, err := measure(warm, iters, func(int) error {
			mr, err := s.pd.AllocMR(n, verbs.AccessAll)
			if err != nil {
				return err
			}
			return mr.Dereg()
		})
		if err != nil {
			return fmt.Errorf("arena %d B: %w", n, err)
		}
		after := s.dev.Stats()
		b.r.row(m.latency(n, 1))
		b.r.note("%s: %d allocations: reuses +%d, pages handed out faulted in +%d, trims +%d (%d B)",
			formatSize(n), after.Allocs-before.Allocs, after.Reuses-before.Reuses,
			after.PageInsAvoided-before.PageInsAvoided, after.Trims-before.Trims,
			after.TrimmedBytes-before.TrimmedBytes)
	}
	return nil
}
