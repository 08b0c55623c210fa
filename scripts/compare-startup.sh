#!/usr/bin/env bash
# Startup wall time, side by side in one run: golaunch -n N apps/hello against Open MPI's
# mpirun -n N of its C twin (bench/mpi/hello.c), and MPICH's mpiexec when mpicc.mpich is
# installed. Prints each run's milliseconds, the medians and the ratios, between the
# load average at the start and at the end (bench/chart collect parses these lines). Needs openmpi-bin and
# libopenmpi-dev (apt-get install openmpi-bin libopenmpi-dev); Debian's mpicc and mpirun
# point to one MPI, so the Open MPI tools are named explicitly (mpicc.openmpi).
# Usage: scripts/compare-startup.sh [N] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-4}
runs=${2:-15}
for tool in mpirun.openmpi mpicc.openmpi; do
	command -v "$tool" >/dev/null || { echo "compare-startup: $tool missing: apt-get install openmpi-bin libopenmpi-dev" >&2; exit 2; }
done
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)" # chart collect reads both load lines
mkdir -p bin
CGO_ENABLED=0 go build -o bin/ ./launcher/cmd/golaunch ./apps/hello
mpicc.openmpi -O2 -o bin/hello_mpi bench/mpi/hello.c
mpich=0
if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
	mpicc.mpich -O2 -o bin/hello_mpich bench/mpi/hello.c && mpich=1
fi

ms() {
	local t0 t1
	t0=$(date +%s%N)
	if ! "$@" >/dev/null 2>&1; then
		echo "compare-startup: run failed: $*" >&2
		exit 1
	fi
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

g=() m=() h=()
for ((i = 0; i < runs; i++)); do # alternate, so a change of machine speed hits both
	g+=("$(ms bin/golaunch -n "$n" bin/hello)")
	m+=("$(ms mpirun.openmpi --allow-run-as-root --oversubscribe -n "$n" bin/hello_mpi)")
	if ((mpich)); then h+=("$(ms mpiexec.mpich -n "$n" bin/hello_mpich)"); fi
done
gm=$(printf '%s\n' "${g[@]}" | median)
mm=$(printf '%s\n' "${m[@]}" | median)
echo "golaunch -n $n apps/hello: ${g[*]} ms; median $gm ms"
echo "mpirun   -n $n hello_mpi:  ${m[*]} ms; median $mm ms"
awk -v g="$gm" -v m="$mm" 'BEGIN {printf "ratio golaunch/mpirun: %.2f (target <= 1.00x %s)\n", g / m, (g <= m ? "ok" : "MISS")}'
if ((mpich)); then
	hm=$(printf '%s\n' "${h[@]}" | median)
	echo "mpiexec.mpich -n $n hello_mpich: ${h[*]} ms; median $hm ms"
	awk -v g="$gm" -v m="$hm" 'BEGIN {printf "ratio golaunch/mpiexec.mpich: %.2f (target <= 1.00x %s)\n", g / m, (g <= m ? "ok" : "MISS")}'
fi
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
