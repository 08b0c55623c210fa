package collectives

import (
	"context"
	"fmt"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// benchAllreduce times an Allreduce of n float64s among p in-process ranks on shm; rank 0
// is timed, the others run the same number of calls.
func benchAllreduce(b *testing.B, n int) {
	benchAllreduceEnv(b, n, []int{2, 4}, nil)
}

// benchAllreduceEnv is benchAllreduce among each count of ranks of ps, with env set.
func benchAllreduceEnv(b *testing.B, n int, ps []int, env map[string]string) {
	for _, p := range ps {
		b.Run(fmt.Sprintf("p=%d", p), func(b *testing.B) {
			j, err := runtimetest.Start(context.Background(), p, runtimetest.Options{Transport: "shm", Env: env})
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			defer j.Finalize(context.Background())
			ctx := context.Background()
			op := Sum[float64]()
			bufs := make([][2][]float64, p)
			for r := range bufs {
				bufs[r] = [2][]float64{make([]float64, n), make([]float64, n)}
			}
			run := func(w *runtime.World, iters int) error {
				send, recv := bufs[w.Rank()][0], bufs[w.Rank()][1]
				for range iters {
					if err := Allreduce(ctx, w, send, recv, op); err != nil {
						return err
					}
				}
				return nil
			}
			others := make(chan error, p)
			iters := b.N
			for _, w := range j.Worlds[1:] {
				go func() { others <- run(w, iters+1) }()
			}
			if err := run(j.Worlds[0], 1); err != nil { // warm-up
				b.Fatal(err)
			}
			b.SetBytes(int64(8 * n))
			b.ReportAllocs()
			b.ResetTimer()
			if err := run(j.Worlds[0], iters); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			for range p - 1 {
				if err := <-others; err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAllreduce8B(b *testing.B)   { benchAllreduce(b, 1) }
func BenchmarkAllreduce1MiB(b *testing.B) { benchAllreduce(b, 1<<17) }

// BenchmarkObserveAllreduce8B is an 8-byte Allreduce of 2 ranks without observation,
// under GORMA_PROFILE and under GORMA_TRACE: what the hooks add to a short collective.
// runtime's BenchmarkObserve8B does the same for point-to-point.
func BenchmarkObserveAllreduce8B(b *testing.B) {
	for _, mode := range runtimetest.ObserveModes(b.TempDir()) {
		b.Run(mode.Name, func(b *testing.B) {
			benchAllreduceEnv(b, 1, []int{2}, mode.Env)
		})
	}
}

// BenchmarkCallCost is an 8-byte Bcast and a Barrier on a World of one rank: what
// every collective call costs besides its algorithm (begin, the checks, end).
func BenchmarkCallCost(b *testing.B) {
	j, err := runtimetest.Start(context.Background(), 1, runtimetest.Options{Transport: "shm"})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	defer j.Finalize(context.Background())
	ctx, w := context.Background(), j.Worlds[0]
	buf := make([]float64, 1)
	b.Run("bcast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := Bcast(ctx, w, buf, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("barrier", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := Barrier(ctx, w); err != nil {
				b.Fatal(err)
			}
		}
	})
}
