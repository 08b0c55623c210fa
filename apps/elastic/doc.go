// Command elastic trains a linear model by data-parallel SGD and keeps training when ranks
// or hosts fail, or when a host joins. It ends with the same model as an undisturbed run.
//
//	golaunch --ft -n 4 ./bin/elastic --steps 200
//	golaunch --ft -n 4 ./bin/elastic --steps 400 --pause 20ms --refill
//
// The problem is a synthetic linear regression that every rank generates from --seed:
// --samples samples of --dim standard normal features. Step s takes a global batch of
// --batch samples chosen by s. The live ranks split it into contiguous ranges, each sums
// its samples' gradients, and Allreduce sums the ranks' sums. So no result depends on the
// number of ranks beyond the rounding of that sum. The optimizer is SGD with --momentum.
//
// The model and the step are the same at every rank. The momentum is sharded as ZeRO
// stage 1 shards an optimizer's state: each rank owns that of a contiguous range of
// coordinates, updates the model there, and Allgatherv gathers the model. After each step
// a rank sends its momentum to its buddy, the first rank after it on another host (on one
// host, the next rank).
//
// Failures, under golaunch --ft (GORMA_FT=1): a step that fails with runtime.ErrProcFailed
// or runtime.ErrRevoked at any rank revokes the World, and World.Agree on the step's
// success decides, the same at every rank, whether the step commits. A step that did not
// commit is run again after World.Shrink. Before that the ranks rebuild the momentum:
// each survivor gives its own shard and its copies of the failed ranks' shards, then
// shards and copies are laid out over the new World. A rank that fails together with its
// buddy loses state that nothing holds: every rank then exits 1 with an error naming it.
//
// --refill keeps the World at its first size: while it is smaller, every step boundary
// calls World.Spawn for the missing ranks (placed first on hosts that joined the job) and
// merges them in; Agree makes the outcome the same at every rank. New ranks take the step
// and the model from the first surviving rank.
//
// Output: rank 0 of the final World prints one line to stdout, with the loss over the
// whole data set (%.12g):
//
//	elastic: steps=200 ranks=3 loss=0.00504010569823
//
// Recoveries print one line each to stderr. --state-dir DIR makes each rank write its pid
// to DIR/rankR.pid (DIR/spawn-PID.pid for a spawned one) and rank 0 the last committed step
// to DIR/step, so that a test knows whom to kill and when.
package main
