// Command mpigen writes package mpich's generated files from MPICH's installed mpi.h
// and mpi_proto.h: zconst.go (the constants), zcalls.c (a strong PMPI_ forwarder and a
// weak MPI_ alias per covered function) and zcalls.go (the Go exports they call). A
// function is covered when the package defines its do* implementation. With -doc it
// rewrites the function list of docs/abi.md. make abi-gen runs it; -check fails where
// a committed file differs from what it would write.
package main
