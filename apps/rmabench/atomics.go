package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
)

// accFloat64 and accInt64: every origin accumulates (sum) size bytes of elements into
// its target and flushes, in one LockAll epoch.
func accFloat64(ctx context.Context, b *bench, size int) (row, error) {
	n, sum := max(size/8, 1), collectives.Sum[float64]()
	return lockAllDo(ctx, b, b.f64, size, func(int) error {
		if err := b.f64.Accumulate(b.fsrc[:n], b.peer, 0, sum); err != nil {
			return err
		}
		return b.f64.Flush(ctx, b.peer)
	})
}

func accInt64(ctx context.Context, b *bench, size int) (row, error) {
	n, sum := max(size/8, 1), collectives.Sum[int64]()
	return lockAllDo(ctx, b, b.i64, size, func(int) error {
		if err := b.i64.Accumulate(b.isrc[:n], b.peer, 0, sum); err != nil {
			return err
		}
		return b.i64.Flush(ctx, b.peer)
	})
}

// fopLat: FetchAndOp(sum) of one int64 at displacement 0 of the target, and a Flush.
func fopLat(ctx context.Context, b *bench, size int) (row, error) {
	sum := collectives.Sum[int64]()
	var res int64
	return lockAllDo(ctx, b, b.i64, size, func(int) error {
		if err := b.i64.FetchAndOp(1, &res, b.peer, 0, sum); err != nil {
			return err
		}
		return b.i64.Flush(ctx, b.peer)
	})
}

// casLat: CompareAndSwap of one int64 at displacement 1 of the target, and a Flush. Each
// swap replaces the value it read last with that value plus one, so every swap after the
// first succeeds (no other origin writes to this target); a failed swap is checked to
// have read a changed value.
func casLat(ctx context.Context, b *bench, size int) (row, error) {
	var cur, res int64
	var fails int
	r, err := lockAllDo(ctx, b, b.i64, size, func(int) error {
		if err := b.i64.CompareAndSwap(cur+1, cur, &res, b.peer, 1); err != nil {
			return err
		}
		if err := b.i64.Flush(ctx, b.peer); err != nil {
			return err
		}
		if res == cur {
			cur++
		} else {
			cur = res
			fails++
		}
		return nil
	})
	if err == nil && fails > 1 {
		err = fmt.Errorf("compare-and-swap: %d swaps failed with no other rank writing", fails)
	}
	return r, err
}
