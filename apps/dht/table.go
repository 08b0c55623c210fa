package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

// The table: rank r's shard is a window of nb buckets of two uint64 elements, key then
// value; key 0 marks an empty bucket. A key's home is fixed by its hash: the owner rank and
// the first bucket to probe; probing is linear, wrapping around the shard. A probe step
// reads the aligned group of groupBuckets buckets (64 bytes, never across a page) holding
// the next bucket to look at, with one Get: at load 0.5 most lookups take one Get.

const (
	bucketElems  = 2 // window elements of a bucket (16 bytes)
	groupBuckets = 4 // buckets read per probe step
	groupElems   = groupBuckets * bucketElems
)

// valueMask keeps the part of a value that is a function of its key; updates change the
// 16 bits above it (a version).
const valueMask = 1<<48 - 1

// mix is SplitMix64's finalizer: a bijective scramble of x.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// valueOf is the value stored with key (version 0).
func valueOf(key uint64) uint64 { return mix(key^0x9e3779b97f4a7c15) & valueMask }

// table is one rank's view of the distributed table held in win.
type table struct {
	win  *window.Win[uint64]
	size int      // ranks
	nb   int      // buckets per shard, a power of two
	buf  []uint64 // one group of buckets: Get destination
	put  []uint64 // Put source (belongs to the window until the next flush of its target)
}

// bucketsPerShard sizes the shards so that keys fill at most half of the table.
func bucketsPerShard(keys, ranks int) int {
	nb := groupBuckets
	for nb*ranks < 2*keys {
		nb *= 2
	}
	return nb
}

func newTable(ctx context.Context, w *runtime.World, keys, pageSize int, cache bool) (*table, error) {
	nb := bucketsPerShard(keys, w.Size())
	opts := []window.Option{window.PageSize(pageSize)}
	if !cache {
		opts = append(opts, window.NoCache())
	}
	win, err := window.Allocate[uint64](ctx, w, nb*bucketElems, opts...)
	if err != nil {
		return nil, err
	}
	clear(win.Local())
	return &table{win: win, size: w.Size(), nb: nb, buf: make([]uint64, groupElems), put: make([]uint64, bucketElems)}, nil
}

// probeSteps is the number of groups a probe of a shard of nb buckets reads: every group
// once, and the home group a second time, since the probe starts at the home bucket, in
// the middle of its group, and the buckets before it come last. (Probing nb/groupBuckets
// groups skipped them: a shard with free buckets reported itself full, for example two
// keys homed at the last bucket of a one-group shard.)
func probeSteps(nb int) int { return nb/groupBuckets + 1 }

// home returns key's owner rank and first bucket.
func (tb *table) home(key uint64) (owner, bucket int) {
	h := mix(key)
	return int(h % uint64(tb.size)), int((h >> 32) & uint64(tb.nb-1))
}

// build inserts this rank's share of the keys 1..keys, grouped by owner, at most batch
// keys under one exclusive lock. The share is the keys equal to the rank modulo the number
// of ranks (remote: most inserts go to other ranks), or with local the keys the rank owns
// (a bulk load: every insert is into its own shard).
func (tb *table) build(ctx context.Context, me, keys, batch int, local bool) error {
	byOwner := make([][]uint64, tb.size)
	first, step := uint64(me+1), uint64(tb.size)
	if local {
		first, step = 1, 1
	}
	for k := first; k <= uint64(keys); k += step {
		if o, _ := tb.home(k); !local || o == me {
			byOwner[o] = append(byOwner[o], k)
		}
	}
	written := map[int]uint64{} // buckets written in the current epoch: bucket → key
	for o, ks := range byOwner {
		for chunk := range slices.Chunk(ks, batch) {
			if err := tb.win.Lock(ctx, window.Exclusive, o, 0); err != nil {
				return err
			}
			clear(written)
			for _, k := range chunk {
				if err := tb.insert(ctx, o, k, written); err != nil {
					return err
				}
			}
			if err := tb.win.Unlock(ctx, o); err != nil {
				return err
			}
		}
	}
	return nil
}

// insert puts key into owner's shard: probe with Get + Flush from its home bucket to the
// first empty bucket (or the key's own), then Put. written holds the buckets this epoch
// already wrote (their Puts are complete only at Unlock, so they are not read back).
func (tb *table) insert(ctx context.Context, owner int, key uint64, written map[int]uint64) error {
	_, b := tb.home(key)
	for range probeSteps(tb.nb) {
		g := b &^ (groupBuckets - 1)
		if err := tb.win.Get(tb.buf, owner, g*bucketElems); err != nil {
			return err
		}
		if err := tb.win.Flush(ctx, owner); err != nil {
			return err
		}
		for ; b < g+groupBuckets; b++ {
			k, ok := written[b]
			if !ok {
				k = tb.buf[(b-g)*bucketElems]
			}
			if k == 0 || k == key {
				// Every Put of the epoch needs its own source: it belongs to the window until Unlock.
				src := []uint64{key, valueOf(key)}
				if err := tb.win.Put(src, owner, b*bucketElems); err != nil {
					return err
				}
				written[b] = key
				return nil
			}
		}
		b &= tb.nb - 1
	}
	return fmt.Errorf("insert key %d: rank %d's shard of %d buckets is full", key, owner, tb.nb)
}

// errWrong is a lookup that found a wrong value or no value: fatal.
type errWrong struct{ msg string }

func (e *errWrong) Error() string { return e.msg }

// find probes for key in an open passive epoch (LockAll): Get + Flush per group of
// buckets. It returns the key's bucket and value.
func (tb *table) find(ctx context.Context, key uint64) (owner, bucket int, value uint64, err error) {
	owner, b := tb.home(key)
	for range probeSteps(tb.nb) {
		g := b &^ (groupBuckets - 1)
		if err := tb.win.Get(tb.buf, owner, g*bucketElems); err != nil {
			return 0, 0, 0, err
		}
		if err := tb.win.Flush(ctx, owner); err != nil {
			return 0, 0, 0, err
		}
		for ; b < g+groupBuckets; b++ {
			switch tb.buf[(b-g)*bucketElems] {
			case key:
				return owner, b, tb.buf[(b-g)*bucketElems+1], nil
			case 0:
				return 0, 0, 0, &errWrong{fmt.Sprintf("key %d not found (rank %d, empty bucket %d): the table lost it", key, owner, b)}
			}
		}
		b &= tb.nb - 1
	}
	return 0, 0, 0, &errWrong{fmt.Sprintf("key %d not found in any bucket of rank %d", key, owner)}
}

// lookup finds key and checks its value.
func (tb *table) lookup(ctx context.Context, key uint64) error {
	owner, b, v, err := tb.find(ctx, key)
	if err != nil {
		return err
	}
	if v&valueMask != valueOf(key) {
		return &errWrong{fmt.Sprintf("key %d (rank %d, bucket %d): value %#x, want %#x (version bits aside)", key, owner, b, v, valueOf(key))}
	}
	return nil
}

// update finds key and writes its value with a new version, completed by Flush (which
// invalidates the cached copies of the page). It runs in the LockAll epoch: the value word
// is written whole, and its key-dependent bits stay the same, so a concurrent lookup reads
// a valid value either way.
func (tb *table) update(ctx context.Context, key uint64, version uint16) error {
	owner, b, v, err := tb.find(ctx, key)
	if err != nil {
		return err
	}
	if v&valueMask != valueOf(key) {
		return &errWrong{fmt.Sprintf("update of key %d (rank %d, bucket %d): value %#x, want %#x (version bits aside)", key, owner, b, v, valueOf(key))}
	}
	tb.put[0] = valueOf(key) | uint64(version)<<48
	if err := tb.win.Put(tb.put[:1], owner, b*bucketElems+1); err != nil {
		return err
	}
	return tb.win.Flush(ctx, owner)
}

// check verifies this rank's shard after the build: every key in it is at a bucket its
// probe reaches, with its value. It returns the number of keys.
func (tb *table) check() (int, error) {
	loc := tb.win.Local()
	n := 0
	for b := range tb.nb {
		k := loc[b*bucketElems]
		if k == 0 {
			continue
		}
		n++
		if v := loc[b*bucketElems+1]; v&valueMask != valueOf(k) {
			return n, fmt.Errorf("bucket %d: key %d has value %#x, want %#x", b, k, v, valueOf(k))
		}
	}
	return n, nil
}
