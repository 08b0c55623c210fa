// Command mpigen writes package mpich's generated files from MPICH's installed mpi.h
// and mpi_proto.h: zconst.go (the constants), zcalls.c (a strong PMPI_ forwarder and a
// weak MPI_ alias per covered function, and the trampolines through which Go calls a
// user's MPI_Op and error handlers), zcalls.h (the trampolines' prototypes) and
// zcalls.go (the Go exports the forwarders call). A function is covered when the
// package defines its do* implementation. With -doc it
// rewrites the function list of docs/abi.md. make abi-gen runs it; -check fails where
// a committed file differs from what it would write.
package main
