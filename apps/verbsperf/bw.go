package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// bandwidth runs write_bw or read_bw (as ib_write_bw and ib_read_bw): a window of
// outstanding RDMA operations of one size, all on the same remote bytes, timed from the
// first post to the last completion.
func (b *bench) bandwidth(ctx context.Context, test string) error {
	s := b.s
	set, caps, verb := s.setWrite, verbs.CapRDMAWrite, "writes"
	if test == "read_bw" {
		set, caps, verb = s.setRead, verbs.CapRDMARead, "reads"
	}
	res := Result{Test: test, Provider: s.provider, Kind: kindBandwidth,
		Title: fmt.Sprintf("window of %d outstanding RDMA %s, first post to last completion", b.o.window, verb)}
	if !b.requireCaps(res, caps) {
		return nil
	}
	var floor func(ctx context.Context, n, iters int) (float64, error)
	res.Floor, floor = b.pairedBWFloor()
	b.r.begin(res)
	sizes := b.o.sizes()
	for _, n := range sizes {
		iters, reps := b.o.bwIters(n)
		set(n)
		if _, err := s.window(ctx, max(iters/10, 2), b.o.window); err != nil {
			return fmt.Errorf("%s %d B warmup: %w", test, n, err)
		}
		paired := floor != nil && (n >= ratioFloor || n == sizes[len(sizes)-1])
		if paired {
			if _, err := floor(ctx, n, max(iters/10, 2)); err != nil {
				return err
			}
		}
		if paired {
			reps = max(reps, pairedReps)
		}
		var gb, fl, ratios []float64
		for i := range reps {
			if !paired {
				d, err := s.window(ctx, iters, b.o.window)
				if err != nil {
					return fmt.Errorf("%s %d B: %w", test, n, err)
				}
				gb = append(gb, gbps(int64(n)*int64(iters), d))
				continue
			}
			// The floor goes first in even pairs and second in odd ones, each run after
			// a rest (pairGap): a fixed order biases the ratio against whichever goes
			// second.
			var g, gf float64
			for _, floorTurn := range [2]bool{i%2 == 0, i%2 != 0} {
				pause()
				if floorTurn {
					var err error
					if gf, err = floor(ctx, n, iters); err != nil {
						return err
					}
					continue
				}
				d, err := s.window(ctx, iters, b.o.window)
				if err != nil {
					return fmt.Errorf("%s %d B: %w", test, n, err)
				}
				g = gbps(int64(n)*int64(iters), d)
			}
			gb, fl, ratios = append(gb, g), append(fl, gf), append(ratios, g/gf)
		}
		row := bwRow(n, iters, gb)
		if paired {
			row.FloorGBps = roundSig(median(fl))
			row.FloorRatio = round3(median(ratios))
		}
		b.r.row(row)
	}
	return nil
}

// pairedReps is the least number of repetitions at the sizes compared with a floor. Each
// repetition of the test is paired with an adjacent one of the floor, alternately after
// and before it. The ratio reported is the median of the ratios of these pairs, so that
// a change of the machine's speed between repetitions (frequent on shared machines)
// cancels out rather than landing on one side, and so does the cost of going second.
// Even, so that both orders count alike.
const pairedReps = 8

// pairGap is the rest before each repetition of a pair. Without it the second run of a
// back-to-back pair is slower on virtual machines, whichever it is (why is not known: the
// host's scheduling of the vCPUs after a burst is the likely cause); with it the two
// start alike.
const pairGap = 100 * time.Millisecond

func pause() { time.Sleep(pairGap) }

// pairedBWFloor returns the bandwidth floor compared with this provider's bandwidth, if
// the run measures it: its name and a function measuring it in GB/s. Repetitions of the
// floor and the test alternate, at the sizes the summary compares (1 MiB and more, or the
// largest size).
func (b *bench) pairedBWFloor() (string, func(ctx context.Context, n, iters int) (float64, error)) {
	switch {
	case b.s.provider == "shm" && b.o.has("memcpy"):
		return "memcpy", func(_ context.Context, n, iters int) (float64, error) { return b.f.memcpyRate(n, iters) }
	case b.s.provider == "tcp" && b.o.has("tcp_stream"):
		return "tcp_stream", b.f.streamRate
	}
	return "", nil
}

// bwRow summarises the repetitions of a bandwidth measurement.
func bwRow(n, iters int, reps []float64) Row {
	med, sum := median(reps), 0.0
	out := make([]float64, len(reps))
	for i, g := range reps {
		sum += g
		out[i] = roundSig(g)
	}
	return Row{Bytes: n, Iterations: iters, GBps: roundSig(med), AvgGBps: roundSig(sum / float64(len(reps))),
		MmsgPerS: roundSig(med * 1e9 / float64(n) / 1e6), RepsGBps: out}
}

// window posts iters copies of s.wr keeping at most depth outstanding, and returns the
// time from the first post to the last completion.
func (s *session) window(ctx context.Context, iters, depth int) (time.Duration, error) {
	s.wr.Flags |= verbs.Signaled
	start := time.Now()
	for posted := 0; posted < iters; {
		for posted < iters && s.posted-s.completed < uint64(depth) {
			err := s.qp.PostSend(&s.wr)
			if errors.Is(err, verbs.ErrQueueFull) {
				break
			}
			if err != nil {
				return 0, err
			}
			s.posted++
			posted++
		}
		if err := s.progress(ctx); err != nil {
			return 0, err
		}
	}
	if err := s.drain(ctx); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
