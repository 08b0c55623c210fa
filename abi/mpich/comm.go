//go:build cgo

package mpich

// #include <stdlib.h>
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
)

// newComm registers a communicator over w with the error handler of the one it came from.
func newComm(w *runtime.World, from *comm, out *Comm) {
	*out = Comm(comms.add(&comm{w: w, errh: from.errh}))
}

// doCommDup is MPI_Comm_dup.
func doCommDup(c Comm, out *Comm) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	d, err := dupWorld(co.w) // topo.go: a topology communicator's Dup keeps its topology
	if err != nil {
		return err
	}
	nc := &comm{w: d, errh: co.errh}
	if err := copyAttrs(co, c, nc); err != nil {
		d.Free()
		return err
	}
	*out = Comm(comms.add(nc))
	return nil
}

// doCommSplit is MPI_Comm_split. A rank that passes MPI_UNDEFINED gets MPI_COMM_NULL.
func doCommSplit(c Comm, color, key int, out *Comm) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	if color == mpi_UNDEFINED {
		color = runtime.NoColor
	} else if color < 0 {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("color %d is negative and not MPI_UNDEFINED", color))
	}
	w, err := co.w.Split(bg, color, key)
	if err != nil {
		return err
	}
	if w == nil {
		*out = mpi_COMM_NULL
		return nil
	}
	newComm(w, co, out)
	return nil
}

// doCommCreate is MPI_Comm_create. A rank outside the group gets MPI_COMM_NULL.
func doCommCreate(c Comm, g Group, out *Comm) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	grp, err := groupOf(g)
	if err != nil {
		return err
	}
	w, err := co.w.Create(bg, grp)
	if err != nil {
		return err
	}
	if w == nil {
		*out = mpi_COMM_NULL
		return nil
	}
	newComm(w, co, out)
	return nil
}

// doCommFree is MPI_Comm_free.
func doCommFree(c *Comm) error {
	switch *c {
	case mpi_COMM_WORLD, mpi_COMM_SELF:
		return mpiErr(mpi_ERR_COMM, "MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed")
	}
	co, ok := comms.get(int32(*c))
	if !ok {
		return errHandle("communicator", int32(*c))
	}
	if err := deleteAttrs(co, *c); err != nil {
		return err
	}
	comms.del(int32(*c))
	*c = mpi_COMM_NULL
	return co.w.Free()
}

// doCommSetErrhandler is MPI_Comm_set_errhandler.
func doCommSetErrhandler(c Comm, h Errhandler) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	if err := checkErrh(h, false); err != nil {
		return err
	}
	co.errh = h
	return nil
}

// doCommGetErrhandler is MPI_Comm_get_errhandler.
func doCommGetErrhandler(c Comm, h *Errhandler) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	*h = co.errh
	return nil
}

// doErrhandlerFree is MPI_Errhandler_free. A communicator or window that has the
// handler keeps calling it; the predefined handlers stay.
func doErrhandlerFree(h *Errhandler) error {
	switch *h {
	case mpi_ERRORS_ARE_FATAL, mpi_ERRORS_RETURN, mpi_ERRORS_ABORT:
	default:
		if _, ok := errhs.get(int32(*h)); !ok {
			return errHandle("error handler", int32(*h))
		}
	}
	*h = mpi_ERRHANDLER_NULL
	return nil
}

// groups holds the groups of MPI_Comm_group and the group calls.
var groups = newTable[runtime.Group](kindGroup)

// groupOf returns the group of handle g.
func groupOf(g Group) (runtime.Group, error) {
	if g == mpi_GROUP_EMPTY {
		return runtime.Group{}, nil
	}
	grp, ok := groups.get(int32(g))
	if !ok {
		return runtime.Group{}, errHandle("group", int32(g))
	}
	return grp, nil
}

// doCommGroup is MPI_Comm_group.
func doCommGroup(c Comm, out *Group) error {
	w, err := worldOf(c)
	if err != nil {
		return err
	}
	*out = Group(groups.add(w.Group()))
	return nil
}

// doGroupIncl is MPI_Group_incl.
func doGroupIncl(g Group, n int, ranks *int32, out *Group) error {
	grp, err := groupOf(g)
	if err != nil {
		return err
	}
	if n < 0 {
		return errCount(n)
	}
	sub, err := grp.Incl(ints(ranks, n))
	if err != nil {
		return mpiErr(mpi_ERR_RANK, err.Error())
	}
	*out = Group(groups.add(sub))
	return nil
}

// doGroupSize is MPI_Group_size.
func doGroupSize(g Group, size *int32) error {
	grp, err := groupOf(g)
	if err != nil {
		return err
	}
	*size = int32(grp.Size())
	return nil
}

// doGroupRank is MPI_Group_rank: this process's rank in g, or MPI_UNDEFINED.
func doGroupRank(g Group, rank *int32) error {
	grp, err := groupOf(g)
	if err != nil {
		return err
	}
	*rank = mpi_UNDEFINED
	w := procWorld() // MPI_Init's World, or the one MPI_Session_init started
	if w == nil {
		return errNotInit
	}
	if r, err := w.Group().TranslateRanks([]int{w.Rank()}, grp); err == nil && r[0] >= 0 {
		*rank = int32(r[0])
	}
	return nil
}

// doGroupFree is MPI_Group_free.
func doGroupFree(g *Group) error {
	if *g == mpi_GROUP_EMPTY {
		*g = mpi_GROUP_NULL
		return nil
	}
	if _, ok := groups.del(int32(*g)); !ok {
		return errHandle("group", int32(*g))
	}
	*g = mpi_GROUP_NULL
	return nil
}

// The values of the predefined attributes, in C memory: a program keeps the pointer
// MPI_Comm_get_attr gives it.
var (
	attrOnce sync.Once
	attrVals map[int]unsafe.Pointer
)

// doCommGetAttr is MPI_Comm_get_attr. For the predefined attributes (MPI_TAG_UB,
// MPI_HOST, MPI_IO, MPI_WTIME_IS_GLOBAL, MPI_UNIVERSE_SIZE, MPI_APPNUM and
// MPI_LASTUSEDCODE) *val becomes a pointer to an int; for a user keyval, the value set.
func doCommGetAttr(c Comm, key int, val unsafe.Pointer, flag *int32) error {
	if _, err := worldOf(c); err != nil {
		return err
	}
	attrOnce.Do(func() {
		put := func(v int) unsafe.Pointer {
			p := C.malloc(C.size_t(unsafe.Sizeof(C.int(0))))
			*(*C.int)(p) = C.int(v)
			return p
		}
		app, ok := world.AppNum()
		if !ok {
			app = mpi_UNDEFINED
		}
		attrVals = map[int]unsafe.Pointer{
			mpi_TAG_UB:          put(runtime.MaxTag),
			mpi_HOST:            put(mpi_PROC_NULL),
			mpi_IO:              put(mpi_ANY_SOURCE),
			mpi_WTIME_IS_GLOBAL: put(int(b2i(world.WtimeIsGlobal()))),
			mpi_UNIVERSE_SIZE:   put(world.Size()),
			mpi_APPNUM:          put(app),
			mpi_LASTUSEDCODE:    put(codeSlots<<7 | classMask),
		}
	})
	p, ok := attrVals[key]
	if key == mpi_LASTUSEDCODE {
		*(*C.int)(p) = C.int(lastUsedCode()) // MPI_Add_error_class and _code raise it
	}
	if !ok {
		co, err := commOf(c)
		if err != nil {
			return err
		}
		return getUserAttr(co, key, val, flag)
	}
	if key == mpi_APPNUM && *(*C.int)(p) == mpi_UNDEFINED {
		*flag = 0
		return nil
	}
	*(*unsafe.Pointer)(val) = p
	*flag = 1
	return nil
}
