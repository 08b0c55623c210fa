package collectives

import (
	"context"

	"github.com/gorma-hpc/gorma/datatype"
	"github.com/gorma-hpc/gorma/internal/packpool"
	"github.com/gorma-hpc/gorma/runtime"
)

// The intercommunicator forms of ReduceType and AllreduceType. A group reduces its ranks'
// copies to its leader with the local group's ReduceType; the leader sends the result
// packed to the other group's root (ReduceType) or swaps it with the other leader and
// broadcasts what it received in its group (AllreduceType).

// interReduceType is ReduceType on an intercommunicator: root receives the remote
// group's reduction into recv; the remote group's ranks pass send; the root's other
// group members pass nothing.
func interReduceType[T any](ctx context.Context, w *runtime.World, send, recv []T, count int, t datatype.Type, op TypeOp[T], root int) error {
	ctx = nested{ctx}
	role, sib, err := interRooted(w, root)
	if err != nil || role == roleIdle {
		return err
	}
	n, err := t.PackSize(count)
	if err != nil {
		return invalid("%v", err)
	}
	pb := packpool.Get(n)
	defer packpool.Put(pb)
	if role == roleRoot {
		if err := layoutOver("recv", recv, count, t); err != nil {
			return err
		}
		if err := recvAll(ctx, sib, pb.B, 0, interTagReduceType); err != nil {
			return err
		}
		_, err := datatype.Unpack(recv, pb.B, count, t)
		return err
	}
	part, err := reduceToLeader(ctx, w, send, count, t, op, "Reduce")
	if err != nil || part == nil {
		return err
	}
	if _, err := datatype.Pack(pb.B, part, count, t); err != nil {
		return err
	}
	return sendInter(ctx, sib, pb.B, root, interTagReduceType)
}

// interAllreduceType is AllreduceType on an intercommunicator: every rank receives the
// other group's reduction into recv.
func interAllreduceType[T any](ctx context.Context, w *runtime.World, send, recv []T, count int, t datatype.Type, op TypeOp[T]) error {
	ctx = nested{ctx}
	if err := layoutOver("recv", recv, count, t); err != nil {
		return err
	}
	part, err := reduceToLeader(ctx, w, send, count, t, op, "Allreduce")
	if err != nil {
		return err
	}
	local := w.Local()
	if local.Rank() == 0 {
		n, err := t.PackSize(count)
		if err != nil {
			return invalid("%v", err)
		}
		mine, theirs := packpool.Get(n), packpool.Get(n)
		defer packpool.Put(mine)
		defer packpool.Put(theirs)
		if _, err := datatype.Pack(mine.B, part, count, t); err != nil {
			return err
		}
		sib, err := interSib(w)
		if err != nil {
			return err
		}
		if _, err := sendrecvAll(ctx, sib, mine.B, theirs.B, interTagAllreduceType); err != nil {
			return err
		}
		if _, err := datatype.Unpack(recv, theirs.B, count, t); err != nil {
			return err
		}
	}
	return BcastType(ctx, local, recv, count, t, 0)
}

// reduceToLeader reduces the local group's copies over send to its leader, which gets
// them in a buffer shaped as send (nil at the other ranks).
func reduceToLeader[T any](ctx context.Context, w *runtime.World, send []T, count int, t datatype.Type, op TypeOp[T], name string) ([]T, error) {
	if send == nil {
		return nil, invalid("nil send (an intercommunicator's %s has no in-place form)", name)
	}
	local := w.Local()
	var part []T
	if local.Rank() == 0 {
		part = make([]T, len(send))
	}
	if err := ReduceType(ctx, local, send, part, count, t, op, 0); err != nil {
		return nil, err
	}
	return part, nil
}
