package main

import (
	"context"
	"fmt"

	"github.com/gorma-hpc/gorma/collectives"
	"github.com/gorma-hpc/gorma/runtime"
)

// The coll/ic* tests, each run with the two rank counts of testlist.in: the second as
// DIR-NAME_npN. Each walks eachIntercomm (two groups of at least 4 ranks in all) and
// counts 1, 2, 4... below MPICH's bound; the left group's rank 0 is the root of the
// rooted calls. MPI's (NULL, 0) buffers are empty slices (a nil one would be in-place).
// The calls go through the MTest wrappers (intercomm_mt.go), whose _nb scenarios are
// testlist.in's -nonblocking runs.
func init() {
	for _, p := range []struct {
		name   string
		n1, n2 int
		run    func(ctx context.Context, w *runtime.World) error
	}{
		{"icbcast", 4, 10, collIcbcast},
		{"icallreduce", 5, 7, collIcallreduce},
		{"icreduce", 5, 7, collIcreduce},
		{"icscatter", 5, 7, collIcscatter},
		{"icgather", 5, 7, collIcgather},
		{"icallgather", 5, 7, collIcallgather},
		{"icbarrier", 5, 7, collIcbarrier},
		{"icallgatherv", 5, 7, collIcallgatherv},
		{"icgatherv", 5, 7, collIcgatherv},
		{"icscatterv", 5, 7, collIcscatterv},
		{"icalltoall", 5, 7, collIcalltoall},
	} {
		file := "coll/" + p.name + ".c"
		register("coll-"+p.name, file, p.n1, p.run)
		register(fmt.Sprintf("coll-%s_np%d", p.name, p.n2), file, p.n2, p.run)
	}
}

// icCounts runs f for count = 1, 2, 4... below limit; f's error names the count.
func icCounts(limit int, f func(count int) error) error {
	for count := 1; count < limit; count *= 2 {
		if err := f(count); err != nil {
			return fmt.Errorf("count %d: %w", count, err)
		}
	}
	return nil
}

// icRoot is the root argument of a rooted call whose root is the left group's rank 0.
func icRoot(ic *runtime.World, isLeft bool) int {
	switch {
	case !isLeft:
		return 0
	case ic.Rank() == 0:
		return runtime.Root
	}
	return runtime.ProcNull
}

// untouched returns nil if buf still holds only -1: the call gave this rank no data.
func untouched(what string, buf []int32) error {
	return same(what+" (a rank that gets no data)", buf, fill(len(buf), int32(-1)))
}

// collIcbcast: the left group's rank 0 broadcasts 0..count-1 to the right group, which
// gets it; the rest of the left group keeps its -1s.
func collIcbcast(ctx context.Context, w *runtime.World) error {
	return eachIntercomm(ctx, w, 4, func(ic *runtime.World, isLeft bool) error {
		return icCounts(65000, func(count int) error {
			root := icRoot(ic, isLeft)
			buf := fill(count, int32(-1))
			if root == runtime.Root {
				buf = seq(count, func(i int) int32 { return int32(i) })
			}
			if err := mtBcast(ctx, ic, buf, root); err != nil {
				return err
			}
			switch root {
			case runtime.ProcNull:
				return untouched("bcast", buf)
			case 0:
				return same("bcast", buf, seq(count, func(i int) int32 { return int32(i) }))
			}
			return nil
		})
	})
}

// collIcallreduce: the left group sends i, the right -i; Allreduce with Sum gives each
// rank the remote group's sum, -i*RemoteSize on the left and i*RemoteSize on the right.
func collIcallreduce(ctx context.Context, w *runtime.World) error {
	return eachIntercomm(ctx, w, 4, func(ic *runtime.World, isLeft bool) error {
		rsize := ic.RemoteSize()
		sign := int32(1)
		if !isLeft {
			sign = -1
		}
		return icCounts(65000, func(count int) error {
			send := seq(count, func(i int) int32 { return sign * int32(i) })
			recv := make([]int32, count)
			if err := mtAllreduce(ctx, ic, send, recv, collectives.Sum[int32]()); err != nil {
				return err
			}
			return same("allreduce", recv, seq(count, func(i int) int32 { return -sign * int32(i*rsize) }))
		})
	})
}

// collIcreduce: the right group's ranks send 0..count-1; Reduce with Sum gives the left
// group's rank 0 i*RemoteSize; every other rank's receive buffer keeps its -1s.
func collIcreduce(ctx context.Context, w *runtime.World) error {
	return eachIntercomm(ctx, w, 4, func(ic *runtime.World, isLeft bool) error {
		rsize := ic.RemoteSize()
		return icCounts(65000, func(count int) error {
			root := icRoot(ic, isLeft)
			send, recv := fill(count, int32(-1)), fill(count, int32(-1))
			if !isLeft {
				send = seq(count, func(i int) int32 { return int32(i) })
			}
			if err := mtReduce(ctx, ic, send, recv, collectives.Sum[int32](), root); err != nil {
				return err
			}
			if root == runtime.Root {
				return same("reduce at the root", recv, seq(count, func(i int) int32 { return int32(i * rsize) }))
			}
			return untouched("reduce", recv)
		})
	})
}

// collIcscatter: the left group's rank 0 scatters 0..count*RemoteSize-1; right rank r
// gets count*r+i; the rest of the left group keeps its -1s.
func collIcscatter(ctx context.Context, w *runtime.World) error {
	return eachIntercomm(ctx, w, 4, func(ic *runtime.World, isLeft bool) error {
		rank, rsize := ic.Rank(), ic.RemoteSize()
		return icCounts(65000, func(count int) error {
			root := icRoot(ic, isLeft)
			if isLeft {
				buf := fill(count*rsize, int32(-1))
				if root == runtime.Root {
					buf = seq(count*rsize, func(i int) int32 { return int32(i) })
				}
				if err := mtScatter(ctx, ic, buf, []int32{}, root); err != nil {
					return err
				}
				if root == runtime.ProcNull {
					return untouched("scatter", buf)
				}
				return nil
			}
			buf := fill(count, int32(-1))
			if err := mtScatter(ctx, ic, []int32{}, buf, root); err != nil {
				return err
			}
			return same("scatter", buf, seq(count, func(i int) int32 { return int32(i + rank*count) }))
		})
	})
}

// collIcgather: right rank r sends count*r+i; the left group's rank 0 gathers
// 0..count*RemoteSize-1; the rest of the left group keeps its -1s.
func collIcgather(ctx context.Context, w *runtime.World) error {
	return eachIntercomm(ctx, w, 4, func(ic *runtime.World, isLeft bool) error {
		rank, rsize := ic.Rank(), ic.RemoteSize()
		return icCounts(65000, func(count int) error {
			root := icRoot(ic, isLeft)
			if !isLeft {
				send := seq(count, func(i int) int32 { return int32(rank*count + i) })
				return mtGather(ctx, ic, send, []int32{}, root)
			}
			buf := fill(count*rsize, int32(-1))
			if err := mtGather(ctx, ic, []int32{}, buf, root); err != nil {
				return err
			}
			if root == runtime.ProcNull {
				return untouched("gather", buf)
			}
			return same("gather at the root", buf, seq(count*rsize, func(i int) int32 { return int32(i) }))
		})
	})
}

// collIcallgather: left rank r sends count*r+i, right rank r its negation: each rank
// gets the remote group's, -i on the left and i on the right. Then one way: the left
// group sends nothing and gets -i again, the right group sends and gets nothing.
func collIcallgather(ctx context.Context, w *runtime.World) error {
	return eachIntercomm(ctx, w, 4, func(ic *runtime.World, isLeft bool) error {
		rank, rsize := ic.Rank(), ic.RemoteSize()
		sign := int32(1)
		if !isLeft {
			sign = -1
		}
		return icCounts(65000, func(count int) error {
			send := seq(count, func(i int) int32 { return sign * int32(i+rank*count) })
			want := seq(count*rsize, func(i int) int32 { return -sign * int32(i) })
			recv := fill(count*rsize, int32(-1))
			if err := mtAllgather(ctx, ic, send, recv); err != nil {
				return err
			}
			if err := same("allgather", recv, want); err != nil {
				return err
			}
			recv = fill(count*rsize, int32(-1))
			if isLeft {
				if err := mtAllgather(ctx, ic, send[:0], recv); err != nil {
					return fmt.Errorf("allgather one way, sending nothing: %w", err)
				}
				return same("allgather one way", recv, want)
			}
			if err := mtAllgather(ctx, ic, send, recv[:0]); err != nil {
				return fmt.Errorf("allgather one way, receiving nothing: %w", err)
			}
			return untouched("allgather one way", recv)
		})
	})
}

// collIcbarrier: Barrier on each intercommunicator returns at every rank.
func collIcbarrier(ctx context.Context, w *runtime.World) error {
	return eachIntercomm(ctx, w, 4, func(ic *runtime.World, isLeft bool) error {
		return mtBarrier(ctx, ic)
	})
}

// collIcallgatherv: collIcallgather with Allgatherv and counts of count per remote rank
// (MPICH's displacements i*count are gorma's blocks one after another); one way, the
// right group's counts are 0.
func collIcallgatherv(ctx context.Context, w *runtime.World) error {
	return eachIntercomm(ctx, w, 4, func(ic *runtime.World, isLeft bool) error {
		rank, rsize := ic.Rank(), ic.RemoteSize()
		sign := int32(1)
		if !isLeft {
			sign = -1
		}
		return icCounts(65000, func(count int) error {
			counts := fill(rsize, count)
			send := seq(count, func(i int) int32 { return sign * int32(i+rank*count) })
			want := seq(count*rsize, func(i int) int32 { return -sign * int32(i) })
			recv := fill(count*rsize, int32(-1))
			if err := mtAllgatherv(ctx, ic, send, recv, counts); err != nil {
				return err
			}
			if err := same("allgatherv", recv, want); err != nil {
				return err
			}
			recv = fill(count*rsize, int32(-1))
			if isLeft {
				if err := mtAllgatherv(ctx, ic, send[:0], recv, counts); err != nil {
					return fmt.Errorf("allgatherv one way, sending nothing: %w", err)
				}
				return same("allgatherv one way", recv, want)
			}
			if err := mtAllgatherv(ctx, ic, send, recv, fill(rsize, 0)); err != nil {
				return fmt.Errorf("allgatherv one way, receiving nothing: %w", err)
			}
			return untouched("allgatherv one way", recv)
		})
	})
}

// collIcgatherv: collIcgather with Gatherv, counts count and displacements count*i.
func collIcgatherv(ctx context.Context, w *runtime.World) error {
	return eachIntercomm(ctx, w, 4, func(ic *runtime.World, isLeft bool) error {
		rank, rsize := ic.Rank(), ic.RemoteSize()
		return icCounts(65000, func(count int) error {
			root := icRoot(ic, isLeft)
			if !isLeft {
				send := seq(count, func(i int) int32 { return int32(rank*count + i) })
				return mtGatherv(ctx, ic, send, []int32{}, nil, nil, root)
			}
			counts, displs := fill(rsize, count), seq(rsize, func(i int) int { return i * count })
			buf := fill(count*rsize, int32(-1))
			if err := mtGatherv(ctx, ic, []int32{}, buf, counts, displs, root); err != nil {
				return err
			}
			if root == runtime.ProcNull {
				return untouched("gatherv", buf)
			}
			return same("gatherv at the root", buf, seq(count*rsize, func(i int) int32 { return int32(i) }))
		})
	})
}

// collIcscatterv: collIcscatter with Scatterv, counts count and displacements count*i.
func collIcscatterv(ctx context.Context, w *runtime.World) error {
	return eachIntercomm(ctx, w, 4, func(ic *runtime.World, isLeft bool) error {
		rank, rsize := ic.Rank(), ic.RemoteSize()
		return icCounts(65000, func(count int) error {
			root := icRoot(ic, isLeft)
			if isLeft {
				counts, displs := fill(rsize, count), seq(rsize, func(i int) int { return i * count })
				buf := fill(count*rsize, int32(-1))
				if root == runtime.Root {
					buf = seq(count*rsize, func(i int) int32 { return int32(i) })
				}
				if err := mtScatterv(ctx, ic, buf, counts, displs, []int32{}, root); err != nil {
					return err
				}
				if root == runtime.ProcNull {
					return untouched("scatterv", buf)
				}
				return nil
			}
			buf := fill(count, int32(-1))
			if err := mtScatterv(ctx, ic, []int32{}, nil, nil, buf, root); err != nil {
				return err
			}
			return same("scatterv", buf, seq(count, func(i int) int32 { return int32(i + rank*count) }))
		})
	})
}

// collIcalltoall: one way: left rank r sends count elements i+r to every right rank and
// receives nothing; the right group sends nothing and gets, from left rank j, i+j.
func collIcalltoall(ctx context.Context, w *runtime.World) error {
	return eachIntercomm(ctx, w, 4, func(ic *runtime.World, isLeft bool) error {
		rank, rsize := ic.Rank(), ic.RemoteSize()
		return icCounts(66000, func(count int) error {
			if isLeft {
				send := seq(count*rsize, func(k int) int32 { return int32(k%count + rank) })
				return mtAlltoall(ctx, ic, send, []int32{})
			}
			recv := fill(count*rsize, int32(-1))
			if err := mtAlltoall(ctx, ic, []int32{}, recv); err != nil {
				return err
			}
			return same("alltoall", recv, seq(count*rsize, func(k int) int32 { return int32(k%count + k/count) }))
		})
	})
}
