// Command pmiclientprog is a rank program for package pmi's tests under a real foreign
// process manager (MPICH's mpiexec.hydra, Slurm's srun). It connects through pmi.Connect
// without the runtime, puts a value longer than the server's vallen_max, fences, reads
// and checks every rank's value, and prints one line: "ok RANK SIZE VERSION NODES".
// With the arguments "abort R", rank R calls Abort(7) and the others wait in a fence.
package main
