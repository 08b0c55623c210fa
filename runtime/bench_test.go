package runtime_test

import (
	"context"
	"maps"
	"testing"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
)

// echo starts a goroutine that sends back every 8-byte message rank 1 (w) receives from
// rank 0 (w0) on tag 0, until a message on tag 1. The returned function stops it.
func echo(w0, w *runtime.World) func() {
	done := make(chan error, 1)
	go func() {
		ctx := context.Background()
		buf := make([]byte, 8)
		for {
			st, err := runtime.Recv(ctx, w, buf, 0, runtime.AnyTag)
			if err != nil || st.Tag == 1 {
				done <- err
				return
			}
			if err := runtime.Send(ctx, w, buf, 0, 0); err != nil {
				done <- err
				return
			}
		}
	}()
	return func() {
		runtime.Send(context.Background(), w0, []byte{}, 1, 1)
		<-done
	}
}

func pingPongJob(t testing.TB, tr string, env map[string]string) (*runtimetest.Job, func()) {
	j, err := runtimetest.Start(context.Background(), 2, runtimetest.Options{Transport: tr, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	stop := echo(j.Worlds[0], j.Worlds[1])
	return j, func() {
		stop()
		j.Finalize(context.Background())
		j.Close()
	}
}

// TestZeroAllocs proves that an 8-byte Send/Recv pair allocates nothing, on both
// transports and in a world of one, with a plain and with a cancellable context.
func TestZeroAllocs(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j, stop := pingPongJob(t, tr, nil)
			defer stop()
			w := j.Worlds[0]
			buf := make([]byte, 8)
			cctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for _, ctx := range []context.Context{context.Background(), cctx} {
				ping := func() {
					if err := runtime.Send(ctx, w, buf, 1, 0); err != nil {
						t.Fatal(err)
					}
					if _, err := runtime.Recv(ctx, w, buf, 1, 0); err != nil {
						t.Fatal(err)
					}
				}
				for range 100 {
					ping() // warm the pools
				}
				if n := testing.AllocsPerRun(2000, ping); n != 0 {
					t.Errorf("%v allocations per 8-byte Send+Recv", n)
				}
			}
		})
	}
	t.Run("barrier", func(t *testing.T) {
		j, err := runtimetest.Start(context.Background(), 3, runtimetest.Options{Transport: "shm"})
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		ctx := context.Background()
		const runs = 500
		others := make(chan error, 2)
		for _, w := range j.Worlds[1:] {
			go func() {
				for i := 0; i < runs+1+10; i++ { // AllocsPerRun calls its function runs+1 times
					if err := runtime.Barrier(ctx, w); err != nil {
						others <- err
						return
					}
				}
				others <- nil
			}()
		}
		w := j.Worlds[0]
		for i := 0; i < 10; i++ {
			runtime.Barrier(ctx, w)
		}
		if n := testing.AllocsPerRun(runs, func() { runtime.Barrier(ctx, w) }); n != 0 {
			t.Errorf("%v allocations per Barrier", n)
		}
		for range 2 {
			if err := <-others; err != nil {
				t.Fatal(err)
			}
		}
		j.Finalize(ctx)
	})
	t.Run("self", func(t *testing.T) {
		w, err := single(t, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		buf := []float64{1}
		if n := testing.AllocsPerRun(2000, func() {
			runtime.Send(ctx, w, buf, 0, 0)
			runtime.Recv(ctx, w, buf, 0, 0)
		}); n != 0 {
			t.Errorf("%v allocations per 8-byte Send+Recv to self", n)
		}
	})
}

// BenchmarkPingPong8B is the 8-byte half round trip between two ranks of one process
// (ns/op is a full round trip; half_rtt_us is reported too). The ranks share this
// process's cores; apps/pingpong measures between processes.
func BenchmarkPingPong8B(b *testing.B) {
	for _, tr := range transports {
		for _, mode := range []string{"spin", "hybrid", "block"} {
			if tr == "tcp" && mode == "spin" {
				// Two spinning ranks in one process keep the Go scheduler from polling the
				// network: tcp's reader goroutines wake only every 10 ms (sysmon).
				continue
			}
			b.Run(tr+"/"+mode, func(b *testing.B) {
				j, stop := pingPongJob(b, tr, map[string]string{runtime.EnvProgress: mode})
				defer stop()
				w := j.Worlds[0]
				ctx := context.Background()
				buf := make([]byte, 8)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					runtime.Send(ctx, w, buf, 1, 0)
					runtime.Recv(ctx, w, buf, 1, 0)
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/2, "half_rtt_us")
			})
		}
	}
}

// BenchmarkWindow8B is osu_bw's inner loop for 8-byte messages: a window of 64 Isends
// answered by one acknowledgement (ns/op is per message).
func BenchmarkWindow8B(b *testing.B) {
	for _, tr := range transports {
		for _, mode := range []string{"spin", "hybrid", "block"} {
			b.Run(tr+"/"+mode, func(b *testing.B) {
				j, err := runtimetest.Start(context.Background(), 2, runtimetest.Options{Transport: tr, Env: map[string]string{runtime.EnvProgress: mode}})
				if err != nil {
					b.Fatal(err)
				}
				defer j.Close()
				const window = 64
				windows := (b.N + window - 1) / window
				ctx := context.Background()
				done := make(chan error, 1)
				go func() {
					w := j.Worlds[1]
					buf, reqs := make([]byte, 8), make([]runtime.Request, window)
					for i := 0; i < windows; i++ {
						for k := range reqs {
							runtime.IrecvWith(&reqs[k], w, buf, 0, 2)
						}
						for k := range reqs {
							reqs[k].Wait(ctx)
						}
						runtime.Send(ctx, w, buf[:4], 0, 3)
					}
					done <- nil
				}()
				w := j.Worlds[0]
				buf, reqs := make([]byte, 8), make([]runtime.Request, window)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < windows; i++ {
					for k := range reqs {
						runtime.IsendWith(&reqs[k], w, buf, 1, 2)
					}
					for k := range reqs {
						reqs[k].Wait(ctx)
					}
					runtime.Recv(ctx, w, buf[:4], 1, 3)
				}
				<-done
				b.StopTimer()
				j.Finalize(ctx)
			})
		}
	}
}

// BenchmarkSoftware8B is the runtime's own cost of an 8-byte message on shm, with no cache
// line crossing cores: one goroutine sends from rank 0 to rank 1 (a fast box write) and
// receives it at rank 1 (drain, match, copy), then the same back. ns/op covers both
// messages. The ping-pongs mostly measure the machine's cross-core latency; this moves
// with every instruction of the send and receive paths.
func BenchmarkSoftware8B(b *testing.B) {
	roundTrips8B(b, map[string]string{runtime.EnvProgress: "spin"})
}

// roundTrips8B times 8-byte round trips between the two ranks of a shm job with env,
// from one goroutine.
func roundTrips8B(b *testing.B, env map[string]string) {
	j, err := runtimetest.Start(context.Background(), 2, runtimetest.Options{Transport: "shm", Env: env})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		j.Finalize(context.Background())
		j.Close()
	}()
	w0, w1 := j.Worlds[0], j.Worlds[1]
	ctx := context.Background()
	buf := make([]byte, 8)
	b.ReportAllocs()
	for b.Loop() {
		runtime.Send(ctx, w0, buf, 1, 0)
		runtime.Recv(ctx, w1, buf, 0, 0)
		runtime.Send(ctx, w1, buf, 0, 0)
		runtime.Recv(ctx, w0, buf, 1, 0)
	}
}

// BenchmarkObserve8B is BenchmarkSoftware8B's round trip without observation, under
// GORMA_PROFILE and under GORMA_TRACE: what the hooks add to one round trip (two
// messages, four calls), from one goroutine, so that the figures are steady on a busy
// machine. scripts/compare-observe.sh measures whole jobs.
func BenchmarkObserve8B(b *testing.B) {
	for _, mode := range runtimetest.ObserveModes(b.TempDir()) {
		b.Run(mode.Name, func(b *testing.B) {
			env := map[string]string{runtime.EnvProgress: "spin"}
			maps.Copy(env, mode.Env)
			roundTrips8B(b, env)
		})
	}
}

// BenchmarkObservePingPong8B is BenchmarkPingPong8B over shm with hybrid progress, under
// each mode of observation: what the hooks add to the latency, where only the work
// between a message's arrival and the reply counts. BenchmarkObserve8B measures all of
// their work from one goroutine.
func BenchmarkObservePingPong8B(b *testing.B) {
	for _, mode := range runtimetest.ObserveModes(b.TempDir()) {
		b.Run(mode.Name, func(b *testing.B) {
			env := map[string]string{runtime.EnvProgress: "hybrid"}
			maps.Copy(env, mode.Env)
			j, stop := pingPongJob(b, "shm", env)
			defer stop()
			w := j.Worlds[0]
			ctx := context.Background()
			buf := make([]byte, 8)
			for b.Loop() {
				runtime.Send(ctx, w, buf, 1, 0)
				runtime.Recv(ctx, w, buf, 1, 0)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2, "half_rtt_ns")
		})
	}
}
