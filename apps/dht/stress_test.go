package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gorma-hpc/gorma/internal/testbudget"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/runtimetest"
	"github.com/gorma-hpc/gorma/window"
)

// Adversarial tests of the table: shards filled to the last bucket, colliding keys, all
// ranks inserting the same keys at once, and lookups racing updates across hosts with
// the page cache on, checked against a model.

// insertKeys inserts keys into owner's shard under one exclusive lock.
func insertKeys(ctx context.Context, tb *table, owner int, keys []uint64) error {
	if err := tb.win.Lock(ctx, window.Exclusive, owner, 0); err != nil {
		return err
	}
	written := map[int]uint64{}
	var first error
	for _, k := range keys {
		if err := tb.insert(ctx, owner, k, written); err != nil {
			first = err
			break
		}
	}
	return errors.Join(first, tb.win.Unlock(ctx, owner))
}

// TestDHTStressFullShard fills one-rank shards of 4, 8 and 64 buckets to the last bucket,
// with random keys (whose home buckets collide and start mid-group): every insert of a
// shard with a free bucket must succeed, the key after the last must fail with "full", and
// every key must then be found with its value.
func TestDHTStressFullShard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	runtimetest.Run(t, 1, runtimetest.Options{}, func(w *runtime.World) error {
		rng := rand.New(rand.NewPCG(11, 12))
		var bad []error
		for _, nb := range []int{4, 8, 64} {
			for trial := range 8 {
				tb, err := newTable(ctx, w, nb/2, 4096, true)
				if err != nil {
					return err
				}
				if tb.nb != nb {
					return fmt.Errorf("table for %d keys has %d buckets, want %d", nb/2, tb.nb, nb)
				}
				keys := make([]uint64, nb+1)
				seen := map[uint64]bool{0: true}
				for i := range keys {
					for seen[keys[i]] {
						keys[i] = rng.Uint64N(1 << 40)
					}
					seen[keys[i]] = true
				}
				if err := insertKeys(ctx, tb, 0, keys[:nb]); err != nil {
					bad = append(bad, fmt.Errorf("%d buckets, trial %d: filling the shard with %d keys: %w", nb, trial, nb, err))
				} else {
					err := insertKeys(ctx, tb, 0, keys[nb:])
					if err == nil || !strings.Contains(err.Error(), "full") {
						bad = append(bad, fmt.Errorf("%d buckets, trial %d: insert into a full shard: %v, want a full error", nb, trial, err))
					}
					if err := tb.win.LockAll(ctx, 0); err != nil {
						return err
					}
					for _, k := range keys[:nb] {
						if err := tb.lookup(ctx, k); err != nil {
							bad = append(bad, fmt.Errorf("%d buckets, trial %d: %w", nb, trial, err))
						}
					}
					if err := tb.win.UnlockAll(ctx); err != nil {
						return err
					}
				}
				if err := tb.win.Free(ctx); err != nil {
					return err
				}
			}
		}
		return errors.Join(bad...)
	})
}

// TestDHTStressCollidingHomes: two keys homed at the last bucket of a one-group shard
// (4 buckets, 2 keys: load 0.5, the table's design point) must both insert.
func TestDHTStressCollidingHomes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	runtimetest.Run(t, 1, runtimetest.Options{}, func(w *runtime.World) error {
		tb, err := newTable(ctx, w, 2, 4096, true)
		if err != nil {
			return err
		}
		var keys []uint64
		for k := uint64(1); len(keys) < 2; k++ {
			if _, b := tb.home(k); b == tb.nb-1 {
				keys = append(keys, k)
			}
		}
		var bad []error
		if err := insertKeys(ctx, tb, 0, keys); err != nil {
			bad = append(bad, fmt.Errorf("keys %v homed at bucket %d of %d: %w", keys, tb.nb-1, tb.nb, err))
		} else if n, err := tb.check(); n != 2 || err != nil {
			bad = append(bad, fmt.Errorf("shard holds %d keys (%v), want 2", n, err))
		}
		return errors.Join(errors.Join(bad...), tb.win.Free(ctx))
	})
}

// TestDHTStressConcurrentSameKeys: 4 ranks on two pretend hosts (the cache on between
// them) all insert the same keys at once, each in its own order, a few per exclusive
// lock: every key must end up exactly once in its owner's shard (a probe served from a
// stale cached page would miss another rank's insert and store a duplicate). Then, in
// one LockAll epoch, rounds of updates by one rank of every key (versions up to 0xffff,
// the top of the value) followed by lookups of every key by every rank, checked against
// the model exactly.
func TestDHTStressConcurrentSameKeys(t *testing.T) {
	const keys = 96
	ctx, cancel := context.WithTimeout(context.Background(), testbudget.Scale(30*time.Second))
	defer cancel()
	runtimetest.Run(t, 4, runtimetest.Options{Hosts: []string{"a", "a", "b", "b"}}, func(w *runtime.World) error {
		me := w.Rank()
		tb, err := newTable(ctx, w, keys, 512, true)
		if err != nil {
			return err
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(uint64(me), 99))
		order := rng.Perm(keys)
		byOwner := make([][]uint64, w.Size())
		for _, i := range order {
			k := uint64(i + 1)
			o, _ := tb.home(k)
			byOwner[o] = append(byOwner[o], k)
		}
		// Interleave the owners, 3 keys per lock, so that ranks contend on every shard.
		for len(byOwner[0])+len(byOwner[1])+len(byOwner[2])+len(byOwner[3]) > 0 {
			for o := range byOwner {
				n := min(3, len(byOwner[o]))
				if n == 0 {
					continue
				}
				if err := insertKeys(ctx, tb, o, byOwner[o][:n]); err != nil {
					return err
				}
				byOwner[o] = byOwner[o][n:]
			}
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		var bad []error
		// The own shard: no key twice, every key owned here, values intact.
		loc := tb.win.Local()
		here := map[uint64]int{}
		for b := range tb.nb {
			if k := loc[b*bucketElems]; k != 0 {
				if o, _ := tb.home(k); o != me {
					bad = append(bad, fmt.Errorf("key %d owned by rank %d is in rank %d's shard", k, o, me))
				}
				if prev, dup := here[k]; dup {
					bad = append(bad, fmt.Errorf("key %d twice in rank %d's shard: buckets %d and %d", k, me, prev, b))
				}
				here[k] = b
			}
		}
		if _, err := tb.check(); err != nil {
			bad = append(bad, err)
		}
		if err := checkShards(ctx, w, tb, keys); err != nil {
			bad = append(bad, err)
		}
		if err := tb.win.LockAll(ctx, 0); err != nil {
			return err
		}
		model := make([]uint16, keys+1)
		versions := []uint16{1, 2, 0x7fff, 0xffff, 3}
		for round, v := range versions {
			updater := round % w.Size()
			if me == updater {
				for k := uint64(1); k <= keys; k++ {
					if err := tb.update(ctx, k, v); err != nil {
						return err
					}
				}
			}
			for k := 1; k <= keys; k++ {
				model[k] = v
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
			for k := uint64(1); k <= keys; k++ {
				owner, b, got, err := tb.find(ctx, k)
				if err != nil {
					return err
				}
				if want := valueOf(k) | uint64(model[k])<<48; got != want {
					bad = append(bad, fmt.Errorf("round %d: rank %d reads key %d (rank %d, bucket %d) = %#x, want %#x", round, me, k, owner, b, got, want))
				}
			}
			if err := runtime.Barrier(ctx, w); err != nil {
				return err
			}
		}
		if err := tb.win.UnlockAll(ctx); err != nil {
			return err
		}
		if st := tb.win.CacheStats(); me >= 2 && st.Hits == 0 {
			bad = append(bad, fmt.Errorf("rank %d never hit the cache: %+v", me, st))
		}
		return errors.Join(errors.Join(bad...), tb.win.Free(ctx))
	})
}
