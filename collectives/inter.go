package collectives

import (
	"context"
	"errors"
	"fmt"

	"github.com/gorma-hpc/gorma/internal/trace"
	"github.com/gorma-hpc/gorma/runtime"
	"github.com/gorma-hpc/gorma/runtime/substrate"
)

// Collectives on an intercommunicator (runtime.World.CreateIntercomm): MPI's intercommunicator
// forms of Bcast, Reduce, Allreduce, Gather(v), Scatter(v), Allgather(v), Alltoall(v, w) and
// ReduceScatter(V), where data moves from one group to the other; the typed forms (datatype.go)
// pack and run these on the bytes, and those of ReduceType and AllreduceType reduce within
// each group first (inter_typeop.go). Each is built of the intracommunicator calls on the local
// group's World (w.Local) and messages between the groups on the intercommunicator's sibling,
// which only this package uses. The leaders (rank 0 of each group) carry a group's part across,
// and the ranks of Alltoall and the v-forms exchange directly. Rooted calls take runtime.Root
// at the root, runtime.ProcNull at the other ranks of its group, and the root's rank in its
// group at the remote group's ranks. Like every collective call, the ranks of both groups make
// them in the same order.

// Tags of the messages between the groups, one per call, on the sibling.
const (
	interTagBcast = iota + 1
	interTagReduce
	interTagAllreduce
	interTagGather
	interTagScatter
	interTagAllgather
	interTagAlltoall
	interTagGatherv
	interTagScatterv
	interTagAllgatherv
	interTagAlltoallv
	interTagAlltoallw
	interTagReduceScatter
	interTagReduceType
	interTagAllreduceType
)

// interErr wraps the error of an intercommunicator call name at w's rank.
func interErr(name string, w *runtime.World, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("collectives: %s on an intercommunicator, rank %d of its local group: %w", name, w.Rank(), err)
}

// nested is the context of the local group's calls inside an intercommunicator call:
// ctx without the worker's job, which would make them run as the nonblocking or
// persistent call itself (begin), on the intercommunicator's state.
type nested struct{ context.Context }

// interRole is what a rooted call's root argument makes of this rank: the root, another
// rank of the root's group (idle), or a rank of the group that sends to or receives from
// the root, which is that group's remote rank root.
type interRole int

const (
	roleRoot interRole = iota
	roleIdle
	roleRemote
)

func interRoot(w *runtime.World, root int) (interRole, error) {
	switch {
	case root == runtime.Root:
		return roleRoot, nil
	case root == runtime.ProcNull:
		return roleIdle, nil
	case root >= 0 && root < w.RemoteSize():
		return roleRemote, nil
	}
	return 0, invalid("root %d: on an intercommunicator the root passes runtime.Root, the rest of its group runtime.ProcNull, the other group the root's rank in [0, %d)", root, w.RemoteSize())
}

// interSib returns the intercommunicator's sibling, on which the groups' messages go.
func interSib(w *runtime.World) (*runtime.World, error) { return substrate.Sibling(w) }

// interRooted is a rooted call's start: this rank's role, and the sibling.
func interRooted(w *runtime.World, root int) (interRole, *runtime.World, error) {
	role, err := interRoot(w, root)
	if err != nil {
		return 0, nil, err
	}
	sib, err := interSib(w)
	return role, sib, err
}

func interBcast[T runtime.Elem](ctx context.Context, w *runtime.World, buf []T, root int) error {
	ctx = nested{ctx}
	role, sib, err := interRooted(w, root)
	if err != nil {
		return err
	}
	switch role {
	case roleRoot:
		return sendInter(ctx, sib, buf, 0, interTagBcast)
	case roleRemote:
		local := w.Local()
		if local.Rank() == 0 {
			if err := recvAll(ctx, sib, buf, root, interTagBcast); err != nil {
				return err
			}
		}
		return Bcast(ctx, local, buf, 0)
	}
	return nil
}

func interReduce[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, op Op[T], root int) error {
	ctx = nested{ctx}
	role, sib, err := interRooted(w, root)
	if err != nil {
		return err
	}
	switch role {
	case roleRoot:
		return recvAll(ctx, sib, recv, 0, interTagReduce)
	case roleRemote:
		if send == nil {
			return invalid("nil send (an intercommunicator's Reduce has no in-place form)")
		}
		local := w.Local()
		var part []T
		if local.Rank() == 0 {
			part = make([]T, len(send))
		}
		if err := Reduce(ctx, local, send, part, op, 0); err != nil {
			return err
		}
		if local.Rank() == 0 {
			return sendInter(ctx, sib, part, root, interTagReduce)
		}
	}
	return nil
}

func interAllreduce[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, op Op[T]) error {
	ctx = nested{ctx}
	if send == nil {
		return invalid("nil send (an intercommunicator's Allreduce has no in-place form)")
	}
	if len(send) != len(recv) {
		return invalid("len(send) %d != len(recv) %d", len(send), len(recv))
	}
	local := w.Local()
	var part []T
	if local.Rank() == 0 {
		part = make([]T, len(send))
	}
	if err := Reduce(ctx, local, send, part, op, 0); err != nil {
		return err
	}
	return swapAndBcast(ctx, w, part, recv, interTagAllreduce)
}

func interGather[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, root int) error {
	ctx = nested{ctx}
	role, sib, err := interRooted(w, root)
	if err != nil {
		return err
	}
	switch role {
	case roleRoot:
		if len(recv)%w.RemoteSize() != 0 {
			return invalid("len(recv) %d at the root is not a multiple of the remote group's %d ranks", len(recv), w.RemoteSize())
		}
		return recvAll(ctx, sib, recv, 0, interTagGather)
	case roleRemote:
		if send == nil {
			return invalid("nil send (an intercommunicator's Gather has no in-place form)")
		}
		local := w.Local()
		var all []T
		if local.Rank() == 0 {
			all = make([]T, len(send)*local.Size())
		}
		if err := Gather(ctx, local, send, all, 0); err != nil {
			return err
		}
		if local.Rank() == 0 {
			return sendInter(ctx, sib, all, root, interTagGather)
		}
	}
	return nil
}

func interScatter[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, root int) error {
	ctx = nested{ctx}
	role, sib, err := interRooted(w, root)
	if err != nil {
		return err
	}
	switch role {
	case roleRoot:
		if len(send)%w.RemoteSize() != 0 {
			return invalid("len(send) %d at the root is not a multiple of the remote group's %d ranks", len(send), w.RemoteSize())
		}
		return sendInter(ctx, sib, send, 0, interTagScatter)
	case roleRemote:
		if recv == nil {
			return invalid("nil recv (an intercommunicator's Scatter has no in-place form)")
		}
		local := w.Local()
		var all []T
		if local.Rank() == 0 {
			all = make([]T, len(recv)*local.Size())
			if err := recvAll(ctx, sib, all, root, interTagScatter); err != nil {
				return err
			}
		}
		return Scatter(ctx, local, all, recv, 0)
	}
	return nil
}

func interAllgather[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T) error {
	ctx = nested{ctx}
	if send == nil {
		send = []T{} // no in-place form: nil is an empty contribution
	}
	if len(recv)%w.RemoteSize() != 0 {
		return invalid("len(recv) %d is not a multiple of the remote group's %d ranks", len(recv), w.RemoteSize())
	}
	local := w.Local()
	var all []T
	if local.Rank() == 0 {
		all = make([]T, len(send)*local.Size())
	}
	if err := Gather(ctx, local, send, all, 0); err != nil {
		return err
	}
	return swapAndBcast(ctx, w, all, recv, interTagAllgather)
}

// swapAndBcast ends Allreduce and Allgather: the local leader sends its group's part to
// the other leader and receives that group's into recv, which it then broadcasts in its
// group.
func swapAndBcast[T runtime.Elem](ctx context.Context, w *runtime.World, part, recv []T, tag int) error {
	local := w.Local()
	if local.Rank() == 0 {
		sib, err := interSib(w)
		if err != nil {
			return err
		}
		if _, err := sendrecvAll(ctx, sib, part, recv, tag); err != nil {
			return err
		}
	}
	return Bcast(ctx, local, recv, 0)
}

func interAlltoall[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T) error {
	ctx = nested{ctx}
	m := w.RemoteSize()
	if len(send)%m != 0 || len(recv)%m != 0 {
		return invalid("len(send) %d and len(recv) %d must be multiples of the remote group's %d ranks (no in-place form)", len(send), len(recv), m)
	}
	sib, err := interSib(w)
	if err != nil {
		return err
	}
	n, nr := len(send)/m, len(recv)/m
	reqs := make([]*runtime.Request, 0, 2*m)
	for r := range m {
		q, err := runtime.Irecv(sib, recv[r*nr:(r+1)*nr], r, interTagAlltoall)
		if err != nil {
			return err
		}
		reqs = append(reqs, q)
	}
	for i := range m {
		r := (w.Rank() + i) % m
		q, err := isendInter(sib, send[r*n:(r+1)*n], r, interTagAlltoall)
		if err != nil {
			return err
		}
		reqs = append(reqs, q)
	}
	return runtime.WaitAll(ctx, reqs, nil)
}

// recvAll receives exactly len(buf) elements from src: a shorter message is a mismatch
// of the ranks' counts.
func recvAll[T runtime.Elem](ctx context.Context, w *runtime.World, buf []T, src, tag int) error {
	st, err := runtime.Recv(ctx, w, buf, src, tag)
	if err != nil {
		return err
	}
	if n := runtime.CountOf[T](st); n != len(buf) {
		return fmt.Errorf("%w: %d elements from remote rank %d, %d expected (every rank passes matching counts)", ErrMismatch, n, src, len(buf))
	}
	return nil
}

// sendrecvAll is the leaders' exchange: send to the other leader, and exactly len(recv)
// elements from it.
func sendrecvAll[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, tag int) (runtime.Status, error) {
	interSent(w, 0, len(send)*elemSize[T]())
	st, err := runtime.Sendrecv(ctx, w, send, 0, tag, recv, 0, tag)
	if err == nil && runtime.CountOf[T](st) != len(recv) {
		err = fmt.Errorf("%w: %d elements from the remote leader, %d expected (every rank passes matching counts)", ErrMismatch, runtime.CountOf[T](st), len(recv))
	}
	return st, err
}

// exchangeBlocks is the direct exchange of the v-forms: for every remote rank r, a
// receive of exactly recvs[r] from r and a send of sends[r] to r (empty blocks too, as
// the other side posts them). Then it waits for all. A nil recvs or sends has none.
func exchangeBlocks[T runtime.Elem](ctx context.Context, sib *runtime.World, tag int, sends, recvs [][]T) error {
	reqs := make([]*runtime.Request, 0, len(sends)+len(recvs))
	for r, b := range recvs {
		q, err := runtime.Irecv(sib, b, r, tag)
		if err != nil {
			return err
		}
		reqs = append(reqs, q)
	}
	for r, b := range sends {
		q, err := isendInter(sib, b, r, tag)
		if err != nil {
			return err
		}
		reqs = append(reqs, q)
	}
	sts := make([]runtime.Status, len(reqs))
	if err := runtime.WaitAll(ctx, reqs, sts); err != nil {
		return err
	}
	for r, b := range recvs {
		if n := runtime.CountOf[T](sts[r]); n != len(b) {
			return fmt.Errorf("%w: %d elements from remote rank %d, %d expected (every rank passes matching counts)", ErrMismatch, n, r, len(b))
		}
	}
	return nil
}

// blocks cuts buf into the blocks of counts at displs (displs nil: one after another),
// or returns the error naming the first that does not fit.
func blocks[T runtime.Elem](buf []T, counts, displs []int, what string) ([][]T, error) {
	out := make([][]T, len(counts))
	off := 0
	for r, c := range counts {
		at := off
		if displs != nil {
			at = displs[r]
		}
		if c < 0 || at < 0 || at+c > len(buf) {
			return nil, invalid("%s block %d (count %d at %d) outside the buffer of %d", what, r, c, at, len(buf))
		}
		out[r] = buf[at : at+c : at+c]
		off = at + c
	}
	return out, nil
}

// vArgs checks the counts (and displs, if any) of a v-form against the remote group.
func vArgs(w *runtime.World, counts, displs []int) error {
	if m := w.RemoteSize(); len(counts) != m || (displs != nil && len(displs) != m) {
		return invalid("%d counts and %d displs for the remote group's %d ranks", len(counts), len(displs), m)
	}
	return nil
}

func interGatherv[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, counts, displs []int, root int) error {
	ctx = nested{ctx}
	role, sib, err := interRooted(w, root)
	if err != nil || role == roleIdle {
		return err
	}
	if role == roleRemote {
		return sendInter(ctx, sib, send, root, interTagGatherv)
	}
	if err := vArgs(w, counts, displs); err != nil {
		return err
	}
	recvs, err := blocks(recv, counts, displs, "recv")
	if err != nil {
		return err
	}
	return exchangeBlocks(ctx, sib, interTagGatherv, nil, recvs)
}

func interScatterv[T runtime.Elem](ctx context.Context, w *runtime.World, send []T, counts, displs []int, recv []T, root int) error {
	ctx = nested{ctx}
	role, sib, err := interRooted(w, root)
	if err != nil || role == roleIdle {
		return err
	}
	if role == roleRemote {
		return recvAll(ctx, sib, recv, root, interTagScatterv)
	}
	if err := vArgs(w, counts, displs); err != nil {
		return err
	}
	sends, err := blocks(send, counts, displs, "send")
	if err != nil {
		return err
	}
	return exchangeBlocks(ctx, sib, interTagScatterv, sends, nil)
}

func interAllgatherv[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, counts []int) error {
	ctx = nested{ctx}
	if err := vArgs(w, counts, nil); err != nil {
		return err
	}
	recvs, err := blocks(recv, counts, nil, "recv")
	if err != nil {
		return err
	}
	sib, err := interSib(w)
	if err != nil {
		return err
	}
	sends := make([][]T, w.RemoteSize())
	for r := range sends {
		sends[r] = send[:len(send):len(send)]
	}
	return exchangeBlocks(ctx, sib, interTagAllgatherv, sends, recvs)
}

func interAlltoallv[T runtime.Elem](ctx context.Context, w *runtime.World, send []T, sendCounts []int, recv []T, recvCounts []int) error {
	ctx = nested{ctx}
	if err := errors.Join(vArgs(w, sendCounts, nil), vArgs(w, recvCounts, nil)); err != nil {
		return err
	}
	sends, err := blocks(send, sendCounts, nil, "send")
	if err != nil {
		return err
	}
	recvs, err := blocks(recv, recvCounts, nil, "recv")
	if err != nil {
		return err
	}
	sib, err := interSib(w)
	if err != nil {
		return err
	}
	return exchangeBlocks(ctx, sib, interTagAlltoallv, sends, recvs)
}

func interAlltoallw(ctx context.Context, w *runtime.World, send []byte, sendBlocks ByteBlocks, recv []byte, recvBlocks ByteBlocks) error {
	ctx = nested{ctx}
	m := w.RemoteSize()
	if err := errors.Join(sendBlocks.check("send", len(send), m, false), recvBlocks.check("recv", len(recv), m, true)); err != nil {
		return err
	}
	sends, recvs := make([][]byte, m), make([][]byte, m)
	for r := range m {
		sends[r], recvs[r] = sendBlocks.of(send, r), recvBlocks.of(recv, r)
	}
	sib, err := interSib(w)
	if err != nil {
		return err
	}
	return exchangeBlocks(ctx, sib, interTagAlltoallw, sends, recvs)
}

// interReduceScatterV reduces each group's send vectors at its leader, swaps the results
// between the leaders, and scatters the other group's result in this group by counts
// (one per local rank). The local ranks' counts sum to the other group's send length.
func interReduceScatterV[T runtime.Elem](ctx context.Context, w *runtime.World, send, recv []T, counts []int, op Op[T]) error {
	ctx = nested{ctx}
	local := w.Local()
	if send == nil {
		return invalid("nil send (an intercommunicator's Reduce_scatter has no in-place form)")
	}
	if len(counts) != local.Size() {
		return invalid("%d counts for the local group's %d ranks", len(counts), local.Size())
	}
	total := 0
	for i, n := range counts {
		if n < 0 {
			return invalid("counts[%d] = %d is negative", i, n)
		}
		total += n
	}
	if len(recv) != counts[local.Rank()] {
		return invalid("len(recv) %d != counts[%d] = %d", len(recv), local.Rank(), counts[local.Rank()])
	}
	var part, theirs []T
	if local.Rank() == 0 {
		part, theirs = make([]T, len(send)), make([]T, total)
	}
	if err := Reduce(ctx, local, send, part, op, 0); err != nil {
		return err
	}
	if local.Rank() == 0 {
		sib, err := interSib(w)
		if err != nil {
			return err
		}
		if _, err := sendrecvAll(ctx, sib, part, theirs, interTagReduceScatter); err != nil {
			return err
		}
	}
	displs := make([]int, len(counts))
	for i := 1; i < len(counts); i++ {
		displs[i] = displs[i-1] + counts[i-1]
	}
	return Scatterv(ctx, local, theirs, counts, displs, recv, 0)
}

// Observation (observe.go): an intercommunicator call counts as one call of its kind, with
// a Collective event "<Call> inter", and the data this rank sends to the other group as
// collective data for each remote rank. The local group's calls within count as their own
// calls, as they are.

// interObs is the observation of one intercommunicator call; it is zero when the rank
// does not observe.
type interObs struct {
	o    *substrate.Obs
	c    substrate.ObsCall
	name string
}

// beginInter starts observing the intercommunicator call name (begin's names) on w.
func beginInter(w *runtime.World, name string) interObs {
	o, _ := substrate.Observe(w)
	if o == nil {
		return interObs{}
	}
	return interObs{o: o, c: o.Begin(callKind(name)), name: name}
}

// end records the call, whose send buffer held bytes, and returns err.
func (ob interObs) end(err error, bytes int) error {
	if ob.o != nil {
		ob.c.End(trace.Collective, bytes, trace.NoPeer, -1, ob.o.Label(trackName(ob.name)+" inter"))
	}
	return err
}

// interSent counts n bytes this rank sends to remote rank r over sib, an
// intercommunicator's sibling, as collective data.
func interSent(sib *runtime.World, r, n int) {
	if o, members := substrate.Observe(sib); o != nil {
		o.Coll(nil, members, r, n)
	}
}

// sendInter is runtime.Send of buf to remote rank dst over sib, counted (interSent).
func sendInter[T runtime.Elem](ctx context.Context, sib *runtime.World, buf []T, dst, tag int) error {
	interSent(sib, dst, len(buf)*elemSize[T]())
	return runtime.Send(ctx, sib, buf, dst, tag)
}

// isendInter is runtime.Isend of buf to remote rank dst over sib, counted (interSent).
func isendInter[T runtime.Elem](sib *runtime.World, buf []T, dst, tag int) (*runtime.Request, error) {
	interSent(sib, dst, len(buf)*elemSize[T]())
	return runtime.Isend(sib, buf, dst, tag)
}
