package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/window"
)

func init() {
	register("rma-mutex_bench", "rma/mutex_bench.c", 4, rmaMutexBench(false, false))
	register("rma-mutex_bench_shared", "rma/mutex_bench.c", 4, rmaMutexBench(true, false))
	register("rma-mutex_bench_shm", "rma/mutex_bench.c", 4, rmaMutexBench(false, false))
	register("rma-mutex_bench_shm_ordered", "rma/mutex_bench.c", 4, rmaMutexBench(false, true))
}

// mcsMutex is the MCS queue lock of MPICH's test/mpi/rma/mcs_mutex.c, over a window of
// two ints per rank: the tail of the queue (at the tail rank) and this rank's successor,
// -1 meaning none (MPICH stores MPI_PROC_NULL there). Its own World carries the
// hand-over messages.
type mcsMutex struct {
	c    *runtime.World
	win  *window.Win[int32]
	tail int // the rank holding the queue's tail
}

const (
	mcsNext   = 0 // this rank's successor in the queue
	mcsTail   = 1 // the tail of the queue, at the tail rank
	mcsNil    = -1
	mcsMsgTag = 0
)

func newMCSMutex(ctx context.Context, w *runtime.World, tail int, shared bool) (*mcsMutex, error) {
	c, err := w.Dup()
	if err != nil {
		return nil, err
	}
	m := &mcsMutex{c: c, tail: tail}
	if shared {
		m.win, err = window.AllocateShared[int32](ctx, c, 2)
	} else {
		m.win, err = window.Allocate[int32](ctx, c, 2)
	}
	if err != nil {
		return nil, err
	}
	if err := m.win.LockAll(ctx, 0); err != nil {
		return nil, err
	}
	m.win.Local()[mcsNext], m.win.Local()[mcsTail] = mcsNil, mcsNil
	return m, first(m.win.Sync(ctx), runtime.Barrier(ctx, c))
}

func (m *mcsMutex) lock(ctx context.Context) error {
	me := int32(m.c.Rank())
	m.win.Local()[mcsNext] = mcsNil
	var prev int32
	if err := first(m.win.Sync(ctx), m.win.FetchAndOp(me, &prev, m.tail, mcsTail, collectives.Replace[int32]()), m.win.Flush(ctx, m.tail)); err != nil {
		return err
	}
	if prev == mcsNil {
		return nil
	}
	if err := first(m.win.Accumulate([]int32{me}, int(prev), mcsNext, collectives.Replace[int32]()), m.win.Flush(ctx, int(prev))); err != nil {
		return err
	}
	_, err := runtime.Recv[byte](ctx, m.c, nil, int(prev), mcsMsgTag)
	return err
}

func (m *mcsMutex) trylock(ctx context.Context) (bool, error) {
	me := int32(m.c.Rank())
	m.win.Local()[mcsNext] = mcsNil
	var tail int32
	if err := first(m.win.Sync(ctx), m.win.CompareAndSwap(me, mcsNil, &tail, m.tail, mcsTail), m.win.Flush(ctx, m.tail)); err != nil {
		return false, err
	}
	return tail == mcsNil, nil
}

func (m *mcsMutex) unlock(ctx context.Context) error {
	me := m.c.Rank()
	var next int32
	readNext := func() error {
		return first(m.win.FetchAndOp(0, &next, me, mcsNext, collectives.NoOp[int32]()), m.win.Flush(ctx, me))
	}
	if err := first(m.win.Sync(ctx), readNext()); err != nil {
		return err
	}
	if next == mcsNil {
		var tail int32
		if err := first(m.win.CompareAndSwap(mcsNil, int32(me), &tail, m.tail, mcsTail), m.win.Flush(ctx, m.tail)); err != nil {
			return err
		}
		if tail != int32(me) {
			if tail < 0 || int(tail) >= m.c.Size() {
				return fmt.Errorf("mutex tail holds %d, not a rank", tail)
			}
			for next == mcsNil {
				if err := readNext(); err != nil {
					return err
				}
				if _, _, err := runtime.Iprobe(m.c, runtime.AnySource, runtime.AnyTag); err != nil {
					return err
				}
			}
		}
	}
	if next != mcsNil {
		return runtime.Send[byte](ctx, m.c, nil, int(next), mcsMsgTag)
	}
	return nil
}

func (m *mcsMutex) free(ctx context.Context) error {
	return first(m.win.UnlockAll(ctx), m.win.Free(ctx), m.c.Free())
}

// rmaMutexBench: 1000 times, every rank takes and releases an MCS mutex (the queue's
// tail at rank 0): the odd ranks (the lower half for mutex_bench_shm_ordered) by
// retrying trylock (CompareAndSwap on the tail), the others by lock (FetchAndOp on the
// tail), so the two contend. Completion is the check. The window is Allocated
// (mutex_bench, and mutex_bench_shm, whose info hint gorma has no use for) or
// AllocateShared among a host's ranks (mutex_bench_shared).
func rmaMutexBench(shared, ordered bool) func(ctx context.Context, w *runtime.World) error {
	return func(ctx context.Context, w *runtime.World) error {
		const iter = 1000
		comm := w
		var err error
		if shared {
			if comm, err = hostComm(ctx, w); err != nil {
				return err
			}
		}
		m, err := newMCSMutex(ctx, comm, 0, shared)
		if err != nil {
			return err
		}
		if err := runtime.Barrier(ctx, w); err != nil {
			return err
		}
		rank, n := w.Rank(), w.Size()
		try := rank%2 == 1
		if ordered {
			try = rank < n/2
		}
		for i := 0; i < iter; i++ {
			if try {
				for ok := false; !ok; {
					if ok, err = m.trylock(ctx); err != nil {
						return err
					}
				}
			} else if err := m.lock(ctx); err != nil {
				return err
			}
			if err := m.unlock(ctx); err != nil {
				return err
			}
		}
		if err := first(runtime.Barrier(ctx, w), m.free(ctx)); err != nil {
			return err
		}
		if comm != w {
			return comm.Free()
		}
		return nil
	}
}
