package main

import "context"

// pscwLat: as osu_put_latency's pscw mode, every origin accesses its target (Start, op,
// Complete) while the target exposes its memory (Post, Wait), then the roles swap; the
// figure is half of an iteration. The groups hold the partner alone.
func pscwLat(get bool) func(context.Context, *bench, int) (row, error) {
	return func(ctx context.Context, b *bench, size int) (row, error) {
		group := []int{b.peer}
		access := func() error {
			if err := b.bytes.Start(ctx, group, 0); err != nil {
				return err
			}
			if err := b.rma(get, size); err != nil {
				return err
			}
			return b.bytes.Complete(ctx)
		}
		expose := func() error {
			if err := b.bytes.Post(ctx, group, 0); err != nil {
				return err
			}
			return b.bytes.Wait(ctx)
		}
		first, second := access, expose
		if !b.origin() {
			first, second = expose, access
		}
		iters := scaled(b.o.iters, size)
		m, err := measure(warmupOf(iters), iters, func(int) error {
			if err := first(); err != nil {
				return err
			}
			return second()
		})
		return m.latency(size, 0.5), err
	}
}
