package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/runtime"
)

func init() {
	register("pt2pt-sendflood", "pt2pt/sendflood.c", 8, ptSendflood)
	register("pt2pt-large_tag", "pt2pt/large_tag.c", 2, ptLargeTag)
	register("pt2pt-pt2pt_large", "pt2pt/pt2pt_large.c", 2, ptLarge)
}

// ptSendflood: every rank but 0 sends rank 0 three ints and receives three back; rank
// 0 receives from each rank in turn, then answers each (receive buffers of four ints).
// Completion is the check. MPICH runs 100000 rounds; 10000 here, so that the scenario
// stays within TestMPICHPorts' budget of well under a second a scenario on 2 cores
// (`go test -v -run 'TestMPICHPorts/pt2pt-sendflood' ./tests/mpichport`
// shows its time).
func ptSendflood(ctx context.Context, w *runtime.World) error {
	const loops, dataSize, tag = 10000, 4, 999
	n := w.Size()
	send, recv := make([]int32, dataSize), make([]int32, dataSize)
	for i := 0; i < loops; i++ {
		if w.Rank() == 0 {
			for j := 1; j < n; j++ {
				if _, err := runtime.Recv(ctx, w, recv, j, tag); err != nil {
					return fmt.Errorf("round %d: %w", i, err)
				}
			}
			for j := 1; j < n; j++ {
				if err := runtime.Send(ctx, w, send[:dataSize-1], j, tag); err != nil {
					return fmt.Errorf("round %d: %w", i, err)
				}
			}
			continue
		}
		if err := runtime.Send(ctx, w, send[:dataSize-1], 0, tag); err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
		if _, err := runtime.Recv(ctx, w, recv, 0, tag); err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
	}
	return nil
}

// ptLargeTag: the tag bound (MPI_TAG_UB; runtime.MaxTag) is at least 32767, and 5
// messages go from rank 0 to rank 1 with the tags from the bound down.
func ptLargeTag(ctx context.Context, w *runtime.World) error {
	const iter, count = 5, 16
	tag := runtime.MaxTag
	if tag < 32767 {
		return fmt.Errorf("tag bound %d, want at least 32767", tag)
	}
	for x := 0; x < iter; x++ {
		want := seq(count, func(i int) int32 { return int32(x*count + i) })
		switch w.Rank() {
		case 0:
			if err := runtime.Send(ctx, w, want, 1, tag); err != nil {
				return err
			}
		case 1:
			got := make([]int32, count)
			if _, err := runtime.Recv(ctx, w, got, 0, tag); err != nil {
				return err
			}
			if err := same(fmt.Sprintf("tag %d", tag), got, want); err != nil {
				return err
			}
		}
		tag--
	}
	return nil
}

// ptLarge: 1024 ints from rank 0 to rank 1 (pt2pt_large.c's default option, for the
// large-count calls; its options beyond 2 Gi elements need 4 and 10 GB and are left
// out).
func ptLarge(ctx context.Context, w *runtime.World) error {
	const count = 1024
	switch w.Rank() {
	case 0:
		return runtime.Send(ctx, w, fill(count, int32(1)), 1, 0)
	case 1:
		buf := make([]int32, count)
		if _, err := runtime.Recv(ctx, w, buf, 0, 0); err != nil {
			return err
		}
		return same("received", buf, fill(count, int32(1)))
	}
	return nil
}
