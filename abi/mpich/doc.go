// Package mpich is gorma as a C library: libmpich.so.12, which programs built with
// Debian's MPICH (mpicc.mpich, mpif90.mpich) load unchanged in place of MPICH's.
//
// It is the one package of the module with cgo. make libmpich builds it, through
// abi/mpich/libmpich, with -buildmode=c-shared and SONAME libmpich.so.12. A program
// runs on it under golaunch, mpiexec.hydra or srun with LD_LIBRARY_PATH naming the
// folder:
//
//	LD_LIBRARY_PATH=$PWD/lib golaunch -n 4 ./prog
//
// Each covered MPI function has three parts. mpigen (internal/mpigen) reads MPICH's
// mpi.h, mpi_proto.h and mpio.h and writes the constants (zconst.go), the C forwarders
// with their weak MPI_ aliases (zcalls.c) and the Go exports (zcalls.go). A hand-written
// do* function, named after the C function (MPI_Comm_rank is doCommRank), maps the call
// onto the runtime, collectives, window, datatype and topo packages. mpigen covers
// exactly the functions that have one; every other function of the headers is defined
// and fails with MPI_ERR_UNSUPPORTED_OPERATION.
//
// MPI handles are ints in MPICH's encoding; tables map them to the runtime's objects
// (handles.go). A failed call goes to its communicator's, window's, file's or MPI_Session's
// error handler:
// MPI_ERRORS_ARE_FATAL, the default, prints the call, the class and the cause and
// aborts the job. A Go panic in a call becomes MPI_ERR_INTERN, never a crash.
//
// # Concurrency contract
//
// The library provides MPI_THREAD_MULTIPLE: the handle tables take a lock, and the
// calls are the runtime's, which are safe for concurrent use. A child of fork may not
// call it; the call fails with MPI_ERR_OTHER and a message.
package mpich
