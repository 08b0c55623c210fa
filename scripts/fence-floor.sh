#!/usr/bin/env bash
# The floor of an oversubscribed empty Fence, beside gorma's and Open MPI osc/sm's.
#
# bench/floor/fencefloor.c runs P processes on CPUS processors with nothing but a word of
# shared memory per process: "yield" gives the processor away at every miss, "hold" only
# while a process sharing its processor has not arrived (one switch per processor per
# Fence, the fewest). Then rmabench's empty Fence runs at P ranks under golaunch and,
# when mpirun.openmpi is there, its C twin under osc/sm. Each repetition runs all four
# in turn. Read the per-call medians against the round trip of a switch: a rank that
# shares its processor is switched out in every second call at least, so no
# implementation's median falls far below it.
#
# Usage: scripts/fence-floor.sh [REPS]   (environment: P=4, ITERS=20000)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
p=${P:-4}
iters=${ITERS:-20000}
cpus=$(nproc)
mkdir -p bin
gcc -O2 -Wall -o bin/fencefloor bench/floor/fencefloor.c
[[ -x bin/golaunch && -x bin/rmabench ]] || make build >/dev/null
ompi=0
if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
	[[ bin/rmabench_mpi -nt bench/mpi/rmabench.c ]] || mpicc.openmpi -O2 -Wall -o bin/rmabench_mpi bench/mpi/rmabench.c
	ompi=1
fi
fence() { awk '/^# fence:/ {f = 1} f && /^0 / {printf "median %.2f us, mean %.2f us, p99 %.2f us\n", $3, $4, $5; exit}'; }
echo "# $(date -u +%FT%TZ) $cpus cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), P=$p, $iters Fences; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq "$reps"); do
	echo "## repetition $rep"
	bin/fencefloor -p "$p" -c "$cpus" -n "$iters" yield
	bin/fencefloor -p "$p" -c "$cpus" -n "$iters" hold
	echo "gorma: $(bin/golaunch -n "$p" --tag-output=false bin/rmabench --test fence --iters "$iters" | fence)"
	if ((ompi)); then
		echo "osc/sm: $(mpirun.openmpi --allow-run-as-root --oversubscribe -n "$p" --mca osc sm bin/rmabench_mpi --test fence --iters "$iters" | fence)"
	fi
done
