package runtime

import (
	"slices"

	"github.com/gorma-hpc/gorma/runtime/internal/mpigroup"
)

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
	return newGroupOf(slices.Clone(w.own.ranks), w.e.rank+1)
}

// memberRanks returns the ranks of w of g's members, by group rank, or the ErrInvalid
// error naming the first that is not a rank of w.
func memberRanks(w *World, g Group) ([]int, error) {
	procs := mpigroup.Procs(g)
	ranks := make([]int, len(procs))
	for i, p := range procs {
		r := -1
		if p >= 0 {
			r = w.own.rankOf(p)
		}
		if r < 0 {
			return nil, invalidf("group rank %d (process %d of the job) is not a rank of this World of %d", i, p, w.Size())
		}
		ranks[i] = r
	}
	return ranks, nil
}

// groupIndex returns g's group rank of the process of job rank jr, or -1.
func groupIndex(g Group, jr int) int { return slices.Index(mpigroup.Procs(g), jr) }
