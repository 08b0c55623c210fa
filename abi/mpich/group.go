//go:build cgo

package mpich

import (
	"fmt"
	"unsafe"

	"github.com/gorma-hpc/gorma/runtime"
)

// The group calls map onto runtime.Group's set operations. A result with no members is
// MPI_GROUP_EMPTY, as MPICH gives it.

// addGroup registers g and returns its handle: MPI_GROUP_EMPTY when g has no members.
func addGroup(g runtime.Group) Group {
	if g.Size() == 0 {
		return mpi_GROUP_EMPTY
	}
	return Group(groups.add(g))
}

// twoGroups returns the groups of handles g1 and g2.
func twoGroups(g1, g2 Group) (runtime.Group, runtime.Group, error) {
	a, err := groupOf(g1)
	if err != nil {
		return a, a, err
	}
	b, err := groupOf(g2)
	return a, b, err
}

// doGroupCompare is MPI_Group_compare: MPI_IDENT, MPI_SIMILAR or MPI_UNEQUAL.
func doGroupCompare(g1, g2 Group, result *int32) error {
	a, b, err := twoGroups(g1, g2)
	if err != nil {
		return err
	}
	*result = comparison(a.Compare(b))
	return nil
}

// comparison maps a runtime.Comparison onto MPI's constants.
func comparison(c runtime.Comparison) int32 {
	switch c {
	case runtime.Ident:
		return mpi_IDENT
	case runtime.Similar:
		return mpi_SIMILAR
	}
	return mpi_UNEQUAL
}

// doGroupUnion is MPI_Group_union.
func doGroupUnion(g1, g2 Group, out *Group) error {
	a, b, err := twoGroups(g1, g2)
	if err != nil {
		return err
	}
	*out = addGroup(a.Union(b))
	return nil
}

// doGroupIntersection is MPI_Group_intersection.
func doGroupIntersection(g1, g2 Group, out *Group) error {
	a, b, err := twoGroups(g1, g2)
	if err != nil {
		return err
	}
	*out = addGroup(a.Intersection(b))
	return nil
}

// doGroupDifference is MPI_Group_difference.
func doGroupDifference(g1, g2 Group, out *Group) error {
	a, b, err := twoGroups(g1, g2)
	if err != nil {
		return err
	}
	*out = addGroup(a.Difference(b))
	return nil
}

// doGroupExcl is MPI_Group_excl.
func doGroupExcl(g Group, n int, ranks *int32, out *Group) error {
	grp, err := groupOf(g)
	if err != nil {
		return err
	}
	if n < 0 || n > grp.Size() {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("n = %d is not in [0, %d], the group's size", n, grp.Size()))
	}
	sub, err := grp.Excl(ints(ranks, n))
	if err != nil {
		return mpiErr(mpi_ERR_RANK, err.Error())
	}
	*out = addGroup(sub)
	return nil
}

// doGroupRangeIncl is MPI_Group_range_incl: ranges points at n triplets of C ints
// (first, last, stride).
func doGroupRangeIncl(g Group, n int, ranges *int32, out *Group) error {
	return groupRange(g, n, ranges, out, runtime.Group.RangeIncl)
}

// doGroupRangeExcl is MPI_Group_range_excl.
func doGroupRangeExcl(g Group, n int, ranges *int32, out *Group) error {
	return groupRange(g, n, ranges, out, runtime.Group.RangeExcl)
}

func groupRange(g Group, n int, ranges *int32, out *Group, f func(runtime.Group, [][3]int) (runtime.Group, error)) error {
	grp, err := groupOf(g)
	if err != nil {
		return err
	}
	if n < 0 {
		return mpiErr(mpi_ERR_ARG, fmt.Sprintf("n = %d ranges is negative", n))
	}
	var rs [][3]int
	if n > 0 {
		if ranges == nil {
			return mpiErr(mpi_ERR_ARG, fmt.Sprintf("ranges is NULL for %d triplets", n))
		}
		rs = make([][3]int, n)
		for i, t := range unsafe.Slice((*[3]int32)(unsafe.Pointer(ranges)), n) {
			if t[2] == 0 {
				return mpiErr(mpi_ERR_ARG, fmt.Sprintf("ranges[%d] has stride 0: a stride steps from first towards last", i))
			}
			rs[i] = [3]int{int(t[0]), int(t[1]), int(t[2])}
		}
	}
	sub, err := f(grp, rs)
	if err != nil {
		return mpiErr(mpi_ERR_ARG, err.Error()) // MPICH's class for a bad triplet
	}
	*out = addGroup(sub)
	return nil
}
