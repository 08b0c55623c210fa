// Command spawnprog is the rank program of golaunch's tests of growing a job
// (World.Spawn): the job's ranks spawn more ranks of this program, both sides merge the
// intercommunicator, and every rank of the merged World checks an Allreduce over it.
// main.go lists its flags and what it prints.
package main
