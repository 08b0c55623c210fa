package runtime

import "github.com/gorma-hpc/gorma/runtime/internal/mpigroup"

// NewGroupForTest returns the Group of procs (distinct job ranks) as the process of job
// rank me sees it, for the pure tests of Group's operations.
func NewGroupForTest(procs []int, me int) Group {
	return newGroupOf(append([]int(nil), procs...), me+1)
}

// ProcsForTest returns g's members' job ranks, by group rank.
func ProcsForTest(g Group) []int { return append([]int(nil), mpigroup.Procs(g)...) }
