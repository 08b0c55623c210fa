package main

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/gorma-hpc/gorma/transport/verbs"
)

// bench is what every test of a provider needs.
type bench struct {
	o    *options
	r    *reporter
	s    *session
	peer *peerProc
	f    *floors // for the floors paired with some rows
	seq  uint64  // last value written in a ping-pong word; unique over the run
	// watch holds the parent's idle-role watch until its tcp device takes it; nil
	// without --idle-watch.
	watch *watchers
}

// pairedLatFloor returns the latency floor compared with test on this provider, if the run
// measures that floor: its name and a function measuring its median at 8 bytes, in
// microseconds. The summary compares 8-byte latencies only.
func (b *bench) pairedLatFloor(test string) (string, func(ctx context.Context) (float64, error)) {
	switch {
	case b.s.provider == "shm" && test == "send_lat" && b.o.has("flag_pp"):
		return "flag_pp", func(ctx context.Context) (float64, error) {
			m, err := b.f.flagMeasure(ctx, 8)
			return m.latency(8, 0.5).MedianUS, err
		}
	case b.s.provider == "tcp" && test == "read_lat" && b.o.has("tcp_pp"):
		return "tcp_pp", func(ctx context.Context) (float64, error) {
			m, err := b.f.tcpMeasure(ctx, 8)
			return m.latency(8, 1).MedianUS, err
		}
	}
	return "", nil
}

// requireCaps records a skipped test when the device lacks want, and reports whether the
// test can run.
func (b *bench) requireCaps(res Result, want verbs.Caps) bool {
	if have := b.s.dev.Caps(); !have.Has(want) {
		b.r.skip(res, fmt.Sprintf("provider lacks %s (has %s)", want&^have, have))
		return false
	}
	return true
}

// writeLat runs ib_write_lat's ping-pong and the post-to-completion latency of RDMA writes.
func (b *bench) writeLat(ctx context.Context) error {
	res := Result{Test: "write_lat", Mode: "pingpong", Provider: b.s.provider, Kind: kindLatency,
		Title: "RDMA write ping-pong, each side polls its memory for the peer's write (as ib_write_lat); half round trip"}
	if !b.requireCaps(res, verbs.CapRDMAWrite) {
		return nil
	}
	b.r.begin(res)
	s := b.s
	for _, n := range b.o.sizes() {
		warm, iters := b.o.latIters(n)
		seq := b.seq
		b.seq += uint64(warm + iters)
		if err := b.peer.start(msg{Op: "write_pp", Size: n, Iters: warm + iters, Seq: seq}); err != nil {
			return err
		}
		s.setWrite(n)
		src, dst := word(s.src.Bytes(), n), word(s.buf.Bytes(), n)
		m, err := measure(warm, iters, func(i int) error {
			v := seq + uint64(i) + 1
			atomic.StoreUint64(src, v)
			if err := s.post(ctx); err != nil {
				return err
			}
			if err := spinUntil(ctx, dst, v); err != nil {
				return err
			}
			return s.reap(ctx)
		})
		if err != nil {
			return fmt.Errorf("write_lat pingpong %d B: %w", n, err)
		}
		if err := s.drain(ctx); err != nil {
			return err
		}
		if _, err := b.peer.wait(); err != nil {
			return err
		}
		b.r.row(m.latency(n, 0.5))
	}

	b.r.begin(Result{Test: "write_lat", Mode: "completion", Provider: s.provider, Kind: kindLatency,
		Title: "RDMA write, post and poll the CQ until its completion"})
	return b.completionLat(ctx, "write_lat", s.setWrite, nil)
}

// readLat measures RDMA reads, post to completion (as ib_read_lat).
func (b *bench) readLat(ctx context.Context) error {
	res := Result{Test: "read_lat", Mode: "completion", Provider: b.s.provider, Kind: kindLatency,
		Title: "RDMA read, post and poll the CQ until its completion (as ib_read_lat)"}
	if !b.requireCaps(res, verbs.CapRDMARead) {
		return nil
	}
	var floor func(context.Context) (float64, error)
	res.Floor, floor = b.pairedLatFloor("read_lat")
	b.r.begin(res)
	return b.completionLat(ctx, "read_lat", b.s.setRead, floor)
}

// completionLat measures post-and-poll-to-completion of the request set(n) prepares, at
// every size; at 8 bytes it measures floor first, if there is one.
func (b *bench) completionLat(ctx context.Context, test string, set func(n int),
	floor func(context.Context) (float64, error)) error {
	s := b.s
	for _, n := range b.o.sizes() {
		warm, iters := b.o.latIters(n)
		set(n)
		one := func() (measurement, error) {
			m, err := measure(warm, iters, func(int) error {
				if err := s.post(ctx); err != nil {
					return err
				}
				return s.waitSend(ctx, s.posted)
			})
			if err != nil {
				return m, fmt.Errorf("%s %d B: %w", test, n, err)
			}
			return m, nil
		}
		row, err := pairedLatRow(ctx, n, 1, floor, one)
		if err != nil {
			return err
		}
		b.r.row(row)
	}
	return nil
}

// latPairs is how many pairs of a paired latency row and its floor are measured, the
// floor first in half of them (even) and second in the others: the row's floor ratio is
// the median of the pairs' ratios. With one pair, the floor always first, the ratio
// moves by half from run to run over tcp: the floor and the test each land on one of two
// levels (tcp_pp shows them).
const latPairs = 4

// pairedLatRow measures one latency row with one (scale turns a round trip into a half
// one). At 8 bytes with a floor, it measures latPairs alternated pairs and reports the
// test measurement of the median pair, the floor's median and the median ratio;
// otherwise one measurement.
func pairedLatRow(ctx context.Context, n int, scale float64, floor func(context.Context) (float64, error),
	one func() (measurement, error)) (Row, error) {
	if floor == nil || n != 8 {
		m, err := one()
		return m.latency(n, scale), err
	}
	rows := make([]Row, 0, latPairs)
	var floors, ratios []float64
	for i := range latPairs {
		var row Row
		var f float64
		for _, floorTurn := range [2]bool{i%2 == 0, i%2 != 0} {
			if floorTurn {
				var err error
				if f, err = floor(ctx); err != nil {
					return Row{}, err
				}
				continue
			}
			m, err := one()
			if err != nil {
				return Row{}, err
			}
			row = m.latency(n, scale)
		}
		rows, floors = append(rows, row), append(floors, f)
		if f > 0 {
			ratios = append(ratios, row.MedianUS/f)
		}
	}
	if len(ratios) < len(rows) {
		return Row{}, fmt.Errorf("%d B: the floor measured no time", n)
	}
	mid := median(ratios)
	bi := 0 // the pair whose ratio is nearest the median
	for i := range rows {
		if abs(ratios[i]-mid) < abs(ratios[bi]-mid) {
			bi = i
		}
	}
	best := rows[bi]
	best.FloorUS = median(floors)
	best.FloorRatio = round3(mid)
	return best, nil
}

func abs(x float64) float64 { return max(x, -x) }

// atomicLat measures fetch-and-add and compare-and-swap, post to completion (as
// ib_atomic_lat).
func (b *bench) atomicLat(ctx context.Context) error {
	s := b.s
	for _, op := range []struct {
		mode string
		op   verbs.Opcode
	}{{"fetch_add", verbs.OpAtomicFetchAdd}, {"cmp_swap", verbs.OpAtomicCmpSwap}} {
		res := Result{Test: "atomic_lat", Mode: op.mode, Provider: s.provider, Kind: kindLatency,
			Title: fmt.Sprintf("atomic %s on an 8-byte remote word, post and poll to completion (as ib_atomic_lat)", op.op)}
		if !b.requireCaps(res, verbs.CapAtomic) {
			return nil
		}
		b.r.begin(res)
		warm, iters := b.o.latIters(8)
		s.setAtomic(op.op)
		m, err := measure(warm, iters, func(int) error {
			if err := s.post(ctx); err != nil {
				return err
			}
			return s.waitSend(ctx, s.posted)
		})
		if err != nil {
			return fmt.Errorf("atomic_lat %s: %w", op.mode, err)
		}
		b.r.row(m.latency(8, 1))
	}
	return nil
}

// sendLat measures a Send/Recv ping-pong (as ib_send_lat); half round trip.
func (b *bench) sendLat(ctx context.Context) error {
	s := b.s
	res := Result{Test: "send_lat", Mode: "pingpong", Provider: s.provider, Kind: kindLatency,
		Title: "Send/Recv ping-pong, receives preposted (as ib_send_lat); half round trip"}
	if !b.requireCaps(res, verbs.CapSend) {
		return nil
	}
	var floor func(context.Context) (float64, error)
	res.Floor, floor = b.pairedLatFloor("send_lat")
	b.r.begin(res)
	for _, n := range b.o.sizes() {
		warm, iters := b.o.latIters(n)
		one := func() (measurement, error) {
			if err := b.peer.start(msg{Op: "send_pp", Size: n, Iters: warm + iters}); err != nil {
				return measurement{}, err
			}
			s.setSend(n)
			base := s.recvs
			m, err := measure(warm, iters, func(i int) error {
				if err := s.post(ctx); err != nil {
					return err
				}
				if err := s.waitRecv(ctx, base+uint64(i)+1); err != nil {
					return err
				}
				return s.reap(ctx)
			})
			if err != nil {
				return m, fmt.Errorf("send_lat %d B: %w", n, err)
			}
			if err := s.drain(ctx); err != nil {
				return m, err
			}
			_, err = b.peer.wait()
			return m, err
		}
		row, err := pairedLatRow(ctx, n, 0.5, floor, one)
		if err != nil {
			return err
		}
		b.r.row(row)
	}
	return nil
}

// peerWritePingPong is the peer's half of writeLat: wait for the parent's write, answer.
func peerWritePingPong(ctx context.Context, s *session, n, iters int, seq uint64) error {
	s.setWrite(n)
	src, dst := word(s.src.Bytes(), n), word(s.buf.Bytes(), n)
	for i := range iters {
		v := seq + uint64(i) + 1
		if err := spinUntil(ctx, dst, v); err != nil {
			return err
		}
		atomic.StoreUint64(src, v)
		if err := s.post(ctx); err != nil {
			return err
		}
		if err := s.reap(ctx); err != nil {
			return err
		}
	}
	return s.drain(ctx)
}

// peerSendPingPong is the peer's half of sendLat: wait for a message, send one back.
func peerSendPingPong(ctx context.Context, s *session, n, iters int) error {
	s.setSend(n)
	base := s.recvs
	for i := range iters {
		if err := s.waitRecv(ctx, base+uint64(i)+1); err != nil {
			return err
		}
		if err := s.post(ctx); err != nil {
			return err
		}
		if err := s.reap(ctx); err != nil {
			return err
		}
	}
	return s.drain(ctx)
}
