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
	for _, p := range []int{2, 4} {
		b.Run(fmt.Sprintf("p=%d", p), func(b *testing.B) {
			j, err := runtimetest.Start(context.Background(), p, runtimetest.Options{Transport: "shm"})
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
