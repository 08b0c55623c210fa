// Package mpigroup is MPI's process groups as a pure package: Group, an ordered set of the
// job's processes, and its set operations. Package runtime shows it as runtime.Group, and
// only the runtime calls its package functions (New, Procs). A Group is an immutable value,
// safe for concurrent use.
package mpigroup
