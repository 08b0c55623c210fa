// Command pmiworld checks that the ranks a process manager started form one World. Run
// under Slurm (srun --mpi=pmi2), MPICH's Hydra (mpiexec.hydra) or golaunch, every rank
// checks the World's size against --size, and that the ranks are 0..size-1 each once
// (an Allreduce of a bitmap). It then checks a ring of window Puts closed by a Fence,
// and an Allreduce of every rank's number. Rank 0 then prints one line:
//
//	pmiworld: ok: 4 ranks, 1 hosts, transports shm=3 tcp=0, local size 4
//
// Any failed check prints the rank and what differed to stderr and exits 1. With
// --abort R, rank R calls Abort(3) right after Init instead, and the others wait in a
// Barrier that the abort must end. With --kill R under GORMA_FT=1, rank R SIGKILLs itself
// after Init, and the others shrink Init's World and run the checks on the survivors. The
// runtime's tests build it and run it under the real process managers.
//
//	mpiexec.hydra -n 4 ./pmiworld --size 4
//	srun -n 4 --mpi=pmi2 ./pmiworld --size 4
package main
