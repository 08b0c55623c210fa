// Command ftbench measures how fast a job under golaunch --ft recovers from a killed rank or
// host, and how fast a joining host's ranks take part in an Allreduce. One job measures
// one event; scripts/ftbench.sh (make ftbench) runs 20 jobs per case, strikes each from
// outside, and bench/chart's ft subcommand takes the median and the maximum.
//
//	golaunch --ft -n 4 ./bin/ftbench --case kill --state-dir D --mark D/mark --json=k1.json
//	golaunch --ft -n 4 -H h0:2,h1:2 ./bin/ftbench --case join --grow-to 6 --mark D/mark
//
// Every rank runs Allreduce (one float64, Sum) in a loop, sleeping --pause between calls.
// Rank 0 writes DIR/ready (--state-dir) after --warmup calls, and every rank writes its pid
// and host to DIR/rankR.pid. Then the driver strikes. It first writes the time, as
// seconds since the epoch (bash's EPOCHREALTIME), to the --mark file; the strike follows.
// So a figure counts from just before the strike.
//
// --case kill: the driver kills a rank with SIGKILL, or every process of a host (its
// agent and its ranks). A survivor's Allreduce fails with runtime.ErrProcFailed or
// runtime.ErrRevoked; the survivor revokes the World and shrinks it (World.Revoke,
// World.Shrink) and runs one Allreduce on the shrunk World. Per survivor, ftbench takes
// the clock when its first call failed, when Shrink returned and when that Allreduce
// returned. Reported, from the mark: detect_s, the earliest failed call; shrink_s, the
// last Shrink; recover_s, the last Allreduce on the shrunk World. recover_s is the
// figure: every survivor has a shrunk World and has finished its next Allreduce.
//
// --case join: the World calls World.Spawn for the ranks it lacks of --grow-to before
// each Allreduce, until one succeeds; the job has no free slot, so Spawn fails until
// the driver starts an agent that joins the cluster. The new ranks Merge with the old
// ones and every rank of the merged World runs one Allreduce. Reported, from the mark:
// spawn_s, the last Spawn that succeeded; recover_s, the last Allreduce of the merged
// World, new ranks included. recover_s is the figure: the host's ranks took part in an
// Allreduce. It includes the agent's start and its join of the cluster.
//
// The clocks of every rank and of the driver must agree: one machine, or network
// namespaces of one machine (scripts/ftbench.sh). Output: rank 0 of the final World prints
// a header and a row "detect_ms shrink_ms recover_ms" (or "spawn_ms recover_ms"); --json
// prints one JSON document instead, --json=FILE writes it to FILE beside the text.
package main
