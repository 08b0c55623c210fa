// Command threadwatch runs a job and samples the states of its rank processes' threads:
// how many threads of each rank are runnable (state R: running, or ready and waiting for
// a processor) at each sample. A C MPI rank that waits for its peers has one runnable
// thread, its own spinning or sleeping one; a rank whose waiting wakes more threads takes
// processors from its peers when the ranks fill the host.
//
//	threadwatch --comm allreducebench -- golaunch -n 2 bin/allreducebench --sizes 8,64K --iters 20000
//	threadwatch --comm allreducebench_ -- mpirun.openmpi -n 2 bin/allreducebench_ompi --sizes 8,64K
//
// The kernel keeps 15 bytes of a name: allreducebench_ompi and allreducebench_mpich are
// both allreducebench_.
//
// It starts the command, and every --interval it finds the command's descendant processes
// whose name (/proc/PID/comm) is --comm, and reads /proc/PID/task/*/stat of each. It
// prints, over every sample of every matching process. The number of samples, the mean
// runnable threads per process, the share of samples in which a process had more than one
// runnable thread, the most threads a process had, and the mean thread count. The sampler
// itself takes a processor now and then; a longer --interval disturbs the job less. With
// --json=FILE it writes the same figures as one JSON document. The command's exit status
// is threadwatch's.
package main
