#!/usr/bin/env bash
# Waits for the machine's fast speed state and measures in it.
#
# Some virtual machines switch, for seconds to minutes at a time, between a slow state and
# a fast one in which the shared-memory flag ping-pong's half round trip is several times
# shorter (FAST_US, in microseconds, lies between the two); the targets are ratios within
# one run, and software costs show mostly in the fast state.
# This script measures the floor (verbsperf --test flag_pp) every PERIOD seconds and,
# whenever it is under FAST_US, runs each command of the file CMDS (one per line, in
# turn, ROUNDS times), appending their output to LOG with timestamps. Put several builds
# (and the MPI twins) in CMDS to compare them in the same seconds. Each command's standard
# input is /dev/null: golaunch forwards its input to rank 0, so with the list as its input
# it would swallow the commands after it.
#
# Usage: scripts/fast-state.sh CMDS [DURATION]      (DURATION in seconds, default 900)
#   environment: VP=bin/verbsperf  FAST_US=0.2  PERIOD=10  ROUNDS=3  LOG=results/fast-state.log
# Example CMDS lines:
#   bin/golaunch -n 2 bin/pingpong --test latency --max-size 8 --iters 100000
#   mpirun.openmpi --allow-run-as-root -n 2 bin/pingpong_mpi --test latency --max-size 8 --iters 100000
#   bin/verbsperf --provider shm --test flag_pp,send_lat --max-size 8
set -euo pipefail
cd "$(dirname "$0")/.."
cmds=${1:?usage: scripts/fast-state.sh CMDS [DURATION]}
duration=${2:-900}
vp=${VP:-bin/verbsperf}
fast=${FAST_US:-0.2}
period=${PERIOD:-10}
rounds=${ROUNDS:-3}
log=${LOG:-results/fast-state.log}
mkdir -p "$(dirname "$log")"

floor() { "$vp" --provider shm --test flag_pp --max-size 8 --iters 20000 2>&1 | awk '/^8 /{print $3; exit}'; }
stamp() { date -u +%H:%M:%S; }

end=$((SECONDS + duration))
while ((SECONDS < end)); do
	f=$(floor)
	if awk -v v="$f" -v t="$fast" 'BEGIN { exit !(v > 0 && v < t) }'; then
		echo "== $(stamp) fast state, floor $f us" | tee -a "$log"
		for ((r = 1; r <= rounds; r++)); do
			while IFS= read -r cmd; do
				[[ -z $cmd || $cmd == \#* ]] && continue
				echo "-- $(stamp) round $r: $cmd" >>"$log"
				bash -c "$cmd" </dev/null >>"$log" 2>&1 || echo "-- $(stamp) exit $?" >>"$log"
			done <"$cmds"
		done
		echo "== $(stamp) end, floor $(floor) us" | tee -a "$log"
	fi
	sleep "$period"
done
