package runtime

import "github.com/gorma-hpc/gorma/runtime/internal/mpigroup"

// Undefined is the rank a Group gives a non-member (MPI_UNDEFINED), in Group.Rank and
// TranslateRanks. It equals NoColor, as MPI_UNDEFINED is also Split's "no color".
const Undefined = NoColor

// Group is an ordered set of the job's processes (MPI_Group): group rank i is the
// process at position i. World.Group returns a World's. Its methods derive others (Incl,
// Excl, RangeIncl, RangeExcl, Union, Intersection, Difference), compare two (Compare) and
// translate ranks (TranslateRanks). Create and CreateGroup make a World over one. A Group
// is an immutable value, safe for concurrent use; it needs no freeing. The zero Group is
// empty (MPI_GROUP_EMPTY).
type Group = mpigroup.Group

// Comparison is the result of Group.Compare.
type Comparison = mpigroup.Comparison

// Group.Compare's results (MPI_IDENT, MPI_SIMILAR, MPI_UNEQUAL).
const (
	Ident   = mpigroup.Ident   // the same members in the same order
	Similar = mpigroup.Similar // the same members in another order
	Unequal = mpigroup.Unequal // different members
)

func init() { mpigroup.ErrInvalid = ErrInvalid }

// mpigroup's ranks are the runtime's: a difference fails to compile.
const (
	_ uint = mpigroup.Undefined - Undefined
	_ uint = Undefined - mpigroup.Undefined
	_ uint = mpigroup.ProcNull - ProcNull
	_ uint = ProcNull - mpigroup.ProcNull
)

// newGroupOf returns the Group of procs (job ranks, distinct, owned by the Group) seen
// from the process whose job rank is me-1 (me 0: not known).
func newGroupOf(procs []int, me int) Group { return mpigroup.New(procs, me) }

// Group returns the group of w's ranks, group rank i being w's rank i
// (MPI_Comm_group); an intercommunicator's local group. It does not communicate.
func (w *World) Group() Group {
	if w.x != nil {
		return w.x.local.Group()
	}
	procs := make([]int, w.Size())
	for r := range procs {
		procs[r], _ = w.jobRank(r)
	}
	return newGroupOf(procs, w.e.rank+1)
}
