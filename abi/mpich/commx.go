//go:build cgo

package mpich

// #include <stdlib.h>
import "C"

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
)

// doCommCompare is MPI_Comm_compare: MPI_IDENT for one communicator, MPI_CONGRUENT for
// two with the same ranks in the same order, MPI_SIMILAR for the same ranks in another
// order, MPI_UNEQUAL otherwise. Two intercommunicators compare both of their groups.
func doCommCompare(c1, c2 Comm, result *int32) error {
	w1, err := worldOf(c1)
	if err != nil {
		return err
	}
	w2, err := worldOf(c2)
	if err != nil {
		return err
	}
	if c1 == c2 {
		*result = mpi_IDENT
		return nil
	}
	if w1.IsInter() != w2.IsInter() {
		*result = mpi_UNEQUAL
		return nil
	}
	cmp := w1.Group().Compare(w2.Group())
	if w1.IsInter() {
		cmp = max(cmp, w1.RemoteGroup().Compare(w2.RemoteGroup()))
	}
	*result = comparison(cmp)
	if cmp == runtime.Ident {
		*result = mpi_CONGRUENT
	}
	return nil
}

// doCommTestInter is MPI_Comm_test_inter.
func doCommTestInter(c Comm, flag *int32) error {
	w, err := worldOf(c)
	if err != nil {
		return err
	}
	*flag = b2i(w.IsInter())
	return nil
}

// interOf returns the World of c, which must be an intercommunicator.
func interOf(c Comm) (*runtime.World, error) {
	w, err := worldOf(c)
	if err != nil {
		return nil, err
	}
	if !w.IsInter() {
		return nil, mpiErr(mpi_ERR_COMM, fmt.Sprintf("communicator %#x is not an intercommunicator: it has no remote group", uint32(c)))
	}
	return w, nil
}

// doCommRemoteSize is MPI_Comm_remote_size.
func doCommRemoteSize(c Comm, size *int32) error {
	w, err := interOf(c)
	if err != nil {
		return err
	}
	*size = int32(w.RemoteSize())
	return nil
}

// doCommRemoteGroup is MPI_Comm_remote_group.
func doCommRemoteGroup(c Comm, out *Group) error {
	w, err := interOf(c)
	if err != nil {
		return err
	}
	*out = Group(groups.add(w.RemoteGroup()))
	return nil
}

// doCommCreateGroup is MPI_Comm_create_group: only g's members call it. A process
// outside g gets MPI_COMM_NULL at once.
func doCommCreateGroup(c Comm, g Group, tag int, out *Comm) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	grp, err := groupOf(g)
	if err != nil {
		return err
	}
	if tag < 0 || tag > runtime.MaxTag {
		return mpiErr(mpi_ERR_TAG, fmt.Sprintf("tag %d is not in [0, MPI_TAG_UB]", tag))
	}
	if r, err := co.w.Group().TranslateRanks([]int{co.w.Rank()}, grp); err != nil || r[0] < 0 {
		*out = mpi_COMM_NULL
		return nil
	}
	w, err := co.w.CreateGroup(bg, grp, tag)
	if err != nil {
		return err
	}
	newComm(w, co, out)
	return nil
}

// doCommDupWithInfo is MPI_Comm_dup_with_info: MPI_Comm_dup, with info's hints in place
// of c's.
func doCommDupWithInfo(c Comm, info Info, out *Comm) error {
	hints, err := infoCopy(info)
	if err != nil {
		return err
	}
	var nc Comm
	if err := doCommDup(c, &nc); err != nil {
		return err
	}
	w, _ := worldOf(nc)
	if err := runtime.SetAttr(w, hintsKey, hints); err != nil {
		doCommFree(&nc)
		return err
	}
	*out = nc
	return nil
}

// doCommIdup is MPI_Comm_idup. The Dup is made at once; its request is complete when
// made. Dup sends no message unless it reuses a freed communicator's context or a split
// communicator's block of contexts is full: then it waits for the other ranks' idup,
// as MPI_Comm_dup does.
func doCommIdup(c Comm, out *Comm, req *Request) error {
	if err := doCommDup(c, out); err != nil {
		return err
	}
	*req = Request(reqs.add(&request{topo: &nbRequest{}}))
	return nil
}

// doCommIdupWithInfo is MPI_Comm_idup_with_info: MPI_Comm_idup with info's hints.
func doCommIdupWithInfo(c Comm, info Info, out *Comm, req *Request) error {
	if err := doCommDupWithInfo(c, info, out); err != nil {
		return err
	}
	*req = Request(reqs.add(&request{topo: &nbRequest{}}))
	return nil
}

// Whether the program named MPI_COMM_WORLD or MPI_COMM_SELF. Until then their names are
// MPI's: "MPI_COMM_WORLD" and "MPI_COMM_SELF".
var worldNamed, selfNamed atomic.Bool

// doCommSetName is MPI_Comm_set_name: World.SetName, the name cut to
// MPI_MAX_OBJECT_NAME-1 bytes as MPICH cuts it.
func doCommSetName(c Comm, name *byte) error {
	w, err := worldOf(c)
	if err != nil {
		return err
	}
	if name == nil {
		return mpiErr(mpi_ERR_ARG, "the name is NULL")
	}
	s := C.GoString((*C.char)(unsafe.Pointer(name)))
	if len(s) > mpi_MAX_OBJECT_NAME-1 {
		s = s[:mpi_MAX_OBJECT_NAME-1]
	}
	if err := w.SetName(s); err != nil {
		return err
	}
	switch c {
	case mpi_COMM_WORLD:
		worldNamed.Store(true)
	case mpi_COMM_SELF:
		selfNamed.Store(true)
	}
	return nil
}

// doCommGetName is MPI_Comm_get_name: the name set, or "" for a communicator never
// named but MPI_COMM_WORLD and MPI_COMM_SELF, which have theirs.
func doCommGetName(c Comm, name *byte, n *int32) error {
	w, err := worldOf(c)
	if err != nil {
		return err
	}
	if name == nil || n == nil {
		return mpiErr(mpi_ERR_ARG, "the name or its length is NULL")
	}
	s := w.Name()
	switch {
	case c == mpi_COMM_WORLD && !worldNamed.Load():
		s = "MPI_COMM_WORLD"
	case c == mpi_COMM_SELF && !selfNamed.Load():
		s = "MPI_COMM_SELF"
	}
	*n = int32(putString(name, mpi_MAX_OBJECT_NAME, s))
	return nil
}

// hintsKey keeps a communicator's info hints (MPI_Comm_set_info) on its World. A Dup
// gets the same hints; MPI_Comm_dup_with_info replaces them. An info kept here is never
// changed, so Dups share it.
var hintsKey = runtime.NewKeyval[*info](runtime.CopyOnDup[*info], nil)

// commHints returns w's hints, nil for none.
func commHints(w *runtime.World) *info {
	h, _, _ := runtime.GetAttr(w, hintsKey)
	return h
}

// infoCopy returns a copy of the info h; MPI_INFO_NULL gives an empty one.
func infoCopy(h Info) (*info, error) {
	if h == mpi_INFO_NULL {
		return newInfo(), nil
	}
	in, err := infoOf(h)
	if err != nil {
		return nil, err
	}
	return in.dup(), nil
}

// doCommSetInfo is MPI_Comm_set_info: info's hints are added to c's, replacing those of
// the same keys. The library acts on none of them; MPI_Comm_get_info gives them back.
func doCommSetInfo(c Comm, h Info) error {
	w, err := worldOf(c)
	if err != nil {
		return err
	}
	add, err := infoCopy(h)
	if err != nil {
		return err
	}
	hints := newInfo()
	if old := commHints(w); old != nil {
		hints = old.dup()
	}
	for _, k := range add.keys {
		hints.set(k, add.vals[k])
	}
	return runtime.SetAttr(w, hintsKey, hints)
}

// doCommGetInfo is MPI_Comm_get_info: a new info object holding c's hints, which the
// program frees.
func doCommGetInfo(c Comm, out *Info) error {
	w, err := worldOf(c)
	if err != nil {
		return err
	}
	in := newInfo()
	if h := commHints(w); h != nil {
		in = h.dup()
	}
	*out = Info(infos.add(in))
	return nil
}

// doCommSplitType is MPI_Comm_split_type. MPI_COMM_TYPE_SHARED groups the ranks that
// share memory (World.SplitShared: one host, unless tcp joins every pair);
// MPI_COMM_TYPE_HW_GUIDED does so for the info value mpi_hw_resource_type =
// mpi_shared_memory and gives MPI_COMM_NULL for any other resource, which gorma does not
// know. MPI_COMM_TYPE_HW_UNGUIDED gives the shared-memory group when it is smaller than
// c, else MPI_COMM_NULL. MPIX_COMM_TYPE_NEIGHBORHOOD and MPI_UNDEFINED give
// MPI_COMM_NULL.
func doCommSplitType(c Comm, typ, key int, info Info, out *Comm) error {
	co, err := commOf(c)
	if err != nil {
		return err
	}
	hints, err := infoCopy(info)
	if err != nil {
		return err
	}
	shared := false
	switch typ {
	case mpi_COMM_TYPE_SHARED, mpi_COMM_TYPE_HW_UNGUIDED:
		shared = true
	case mpi_COMM_TYPE_HW_GUIDED:
		v, _ := hints.get("mpi_hw_resource_type")
		shared = v == "mpi_shared_memory"
	case mpi_UNDEFINED, mpix_COMM_TYPE_NEIGHBORHOOD:
	default:
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("split_type %d is not MPI_COMM_TYPE_SHARED, _HW_GUIDED, _HW_UNGUIDED, MPIX_COMM_TYPE_NEIGHBORHOOD or MPI_UNDEFINED", typ))
	}
	var w *runtime.World
	if shared {
		w, err = co.w.SplitShared(bg, key)
	} else {
		w, err = co.w.Split(bg, runtime.NoColor, key)
	}
	if err != nil {
		return err
	}
	if w != nil && typ == mpi_COMM_TYPE_HW_UNGUIDED && w.Size() == co.w.Size() {
		// Every rank of c sees the same size, so all of them drop it.
		if err := w.Free(); err != nil {
			return err
		}
		w = nil
	}
	if w == nil {
		*out = mpi_COMM_NULL
		return nil
	}
	newComm(w, co, out)
	return nil
}
