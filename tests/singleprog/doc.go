// Command singleprog is the rank program of the single-copy test
// (launcher/single_test.go): golaunch runs it on one host, where a long Bcast, Allgather
// Alltoall and Scatter may read the owners' buffers by cross-memory attach
// (collectives/single_shm.go). For each size it makes a Bcast from rank 0 of that many
// bytes, an Allgather of blocks of that many bytes, an Alltoall of that many bytes per
// rank and a Scatter from rank 0 of blocks of that many bytes, all of int64, and checks
// every element.
//
//	singleprog [--sizes 1048576,4194304] [--seccomp] [--refuse RANK:N]
//
// --seccomp installs, before Init, a seccomp filter on every thread of the process that
// fails process_vm_readv with EPERM: the host refuses cross-memory attach, as a
// container's profile or Yama's ptrace_scope 3 would. It first checks that the kernel
// takes the filter: where it does not, the program prints "singleprog: no seccomp: ..."
// and exits 3. --refuse RANK:N sets GORMA_TEST_REFUSE_READ=N (a fault hook of package
// collectives) in rank RANK's environment before its first collective call: its Nth
// single-copy read is refused.
//
// A mismatch or an error prints "singleprog: rank R: ..." on stderr and exits 1; rank 0
// prints "PASS singleprog N ranks" once every rank passed. Which algorithm each call took
// shows in the job's timeline (golaunch --trace): "Bcast single" or "Bcast shm", and so
// on.
package main
