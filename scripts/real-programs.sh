#!/usr/bin/env bash
# Wall time of real MPI programs from Debian, 4 ranks (NP) on this host, under golaunch
# and under the program's own launcher: mpirun.openmpi for Open MPI programs, Hydra
# (mpiexec.mpich) for MPICH programs. The programs:
#   - poisson: bench/real/poisson.py, a conjugate-gradient Poisson solve with petsc4py
#     (python3-petsc4py, Open MPI);
#   - xdlu-ompi, xdlu-mpich: ScaLAPACK's LU tester (scalapack-mpi-test) with
#     bench/real/LU.dat, three 700 x 700 factorizations on a 2 x 2 grid, in the Open MPI
#     and the MPICH build.
# A program whose files are missing is left out, with the package that provides it.
# Each repetition runs every cell once, in turn, so that a change of the machine's speed
# hits all of them; a cell's figure is the median of REPS runs with the spread.
# A run counts only when it exits 0 (xdlu: and prints PASSED).
#
# Environment:
#   REPS=5        repetitions
#   NP=4          ranks
#   GOLAUNCH=bin/golaunch   the golaunch to measure (compare two builds: GOLAUNCH2)
#   GOLAUNCH2=    a second golaunch, measured as its own column ("golaunch2")
#   BIND=         golaunch's --bind-to (default: golaunch's own default)
#   BIND2=        golaunch2's --bind-to (default: BIND)
#   LOAD=0        busy loops started beside the job, each in a session of its own
#                 (another user's work on a busy host)
# Usage: scripts/real-programs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-5}
np=${NP:-4}
gl=$(realpath "${GOLAUNCH:-bin/golaunch}")
gl2=${GOLAUNCH2:+$(realpath "$GOLAUNCH2")}
load=${LOAD:-0}
bind=() bind2=()
[[ -n ${BIND:-} ]] && bind=(--bind-to "$BIND")
[[ -n ${BIND2:-${BIND:-}} ]] && bind2=(--bind-to "${BIND2:-$BIND}")
root=()
[[ $(id -u) == 0 ]] && root=(--allow-run-as-root)
export PETSC_DIR=${PETSC_DIR:-/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real}
scal=/usr/lib/x86_64-linux-gnu/scalapack
here=$PWD
tmp=$(mktemp -d)
loaders=()
cleanup() {
	((${#loaders[@]})) && kill "${loaders[@]}" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
cp bench/real/LU.dat "$tmp/"
[[ -x $gl ]] || { echo "no $gl: run make build" >&2; exit 2; }

# progs: name, how it is launched (ompi or mpich), the command.
progs=()
if python3 -c 'import sys; sys.path.append(sys.argv[1]); import petsc4py' "$PETSC_DIR/lib/python3/dist-packages" 2>/dev/null; then
	progs+=("poisson|ompi|/usr/bin/python3 $here/bench/real/poisson.py 400 1000")
else
	echo "poisson: left out (apt-get install python3-petsc4py)"
fi
for b in openmpi:ompi mpich:mpich; do
	if [[ -x $scal/${b%%:*}-tests/xdlu ]]; then
		progs+=("xdlu-${b##*:}|${b##*:}|$scal/${b%%:*}-tests/xdlu")
	else
		echo "xdlu-${b##*:}: left out (apt-get install scalapack-mpi-test scalapack-test-common)"
	fi
done

# run LAUNCHER KIND CMD: prints the wall seconds, or "fail".
run() {
	local launcher=$1 kind=$2 cmd=$3 t0 t1 out=$tmp/out rc=0
	local -a argv
	read -r -a argv <<<"$cmd"
	t0=$(date +%s.%N)
	case $launcher in
	golaunch) (cd "$tmp" && timeout 600 "$gl" -n "$np" "${bind[@]}" -x PETSC_DIR "${argv[@]}") >"$out" 2>&1 || rc=$? ;;
	golaunch2) (cd "$tmp" && timeout 600 "$gl2" -n "$np" "${bind2[@]}" -x PETSC_DIR "${argv[@]}") >"$out" 2>&1 || rc=$? ;;
	mpirun) (cd "$tmp" && timeout 600 mpirun.openmpi "${root[@]}" --oversubscribe -x PETSC_DIR -n "$np" "${argv[@]}") >"$out" 2>&1 || rc=$? ;;
	hydra) (cd "$tmp" && timeout 600 mpiexec.mpich -n "$np" "${argv[@]}") >"$out" 2>&1 || rc=$? ;;
	esac
	t1=$(date +%s.%N)
	if ((rc != 0)) || [[ $cmd == *xdlu* ]] && ! grep -q PASSED "$out"; then
		echo fail
		return
	fi
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}

for ((i = 0; i < load; i++)); do
	setsid sh -c 'while :; do :; done' &
	loaders+=($!)
done

declare -A times
for ((rep = 1; rep <= reps; rep++)); do
	for p in "${progs[@]}"; do
		IFS='|' read -r name kind cmd <<<"$p"
		launchers=(golaunch)
		[[ -n $gl2 ]] && launchers+=(golaunch2)
		if [[ $kind == ompi ]]; then launchers+=(mpirun); else launchers+=(hydra); fi
		for l in "${launchers[@]}"; do
			t=$(run "$l" "$kind" "$cmd")
			times[$name,$l]+="$t "
			echo "rep $rep $name $l $t"
		done
	done
done

echo
printf '%-12s %-10s %8s  %s\n' program launcher median "runs (s)"
for p in "${progs[@]}"; do
	IFS='|' read -r name kind cmd <<<"$p"
	for key in "${!times[@]}"; do
		[[ $key == "$name,"* ]] || continue
		l=${key#*,}
		med=$(tr ' ' '\n' <<<"${times[$key]}" | grep -v '^$' | grep -v fail | sort -n | awk '{a[NR]=$1} END { if (NR) print a[int((NR+1)/2)]; else print "-" }')
		printf '%-12s %-10s %8s  %s\n' "$name" "$l" "$med" "${times[$key]}"
	done
done
echo "NP=$np LOAD=$load BIND=${BIND:-default} BIND2=${BIND2:-${BIND:-default}} $(nproc) processors, $(uname -r)"
