#!/usr/bin/env bash
# compare-abi.sh [REPS]: MPICH programs on gorma's library against MPICH's own and Open
# MPI's build. The C twins (bench/mpi/pingpong.c, allreducebench.c, rmabench.c) are
# compiled once with mpicc.mpich and run on three systems:
#   gorma: that binary on gorma's lib/libmpich.so.12 (make libmpich), under golaunch;
#   mpich: the same binary on Debian's MPICH library, under mpiexec.hydra;
#   ompi:  the same source built with mpicc.openmpi, under mpirun.openmpi.
# Startup is the wall time of Debian's NPmpich2 (netpipe-mpich2) at 2 ranks, one 8-byte
# round trip, on gorma (golaunch) and on MPICH (mpiexec.hydra); it has no Open MPI build.
# Each repetition runs every benchmark once on each system, under flock
# /tmp/gorma-bench.lock, the systems' order rotating by one each repetition. A run counts
# only when it exited 0 and left its figures; the document names each run that did not.
# Figures (microseconds, lower is better):
#   pingpong, 2 ranks: the half round trip at 8 B and 64 KiB (its JSON's latency_us);
#   allreduce, bcast, alltoall, 2 and 4 ranks: each rank's mean per call, averaged over
#     the ranks (avg_us), at 8 B, 64 KiB and 1 MiB;
#   rma, 2 ranks: the median per operation (median_us) of put_lat.lock_all,
#     get_lat.lock_all, acc_lat.float64, fop_lat, cas_lat and fence, at 8 B;
#   startup, 2 ranks: NPmpich2's whole run.
# Writes OUT (docs/abi.json): every run's figure per benchmark, ranks, system and case,
# with the commands, the machine, the versions and the load. chart page renders it as the
# section "MPICH programs on gorma's library".
# Usage: scripts/compare-abi.sh [REPS]
#   environment: RANKS="2 4" (the collectives), RUN_TIMEOUT=300 (seconds per run),
#   OUT=docs/abi.json
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-9}
ranks=(${RANKS:-2 4})
out=${OUT:-docs/abi.json}
mpirun=(mpirun.openmpi --allow-run-as-root --oversubscribe)
for tool in mpicc.mpich mpicc.openmpi mpiexec.hydra mpirun.openmpi NPmpich2 jq go gcc; do
	command -v "$tool" >/dev/null || {
		echo "compare-abi: $tool missing: apt-get install mpich libmpich-dev openmpi-bin libopenmpi-dev netpipe-mpich2 jq gcc" >&2
		exit 2
	}
done
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make --no-print-directory libmpich LIB="$work/lib" >/dev/null
mkdir -p bin
CGO_ENABLED=0 go build -o bin/ ./launcher/cmd/golaunch
for p in pingpong allreducebench rmabench; do
	mpicc.mpich -O2 -o "$work/${p}_mpich" "bench/mpi/$p.c"
	mpicc.openmpi -O2 -o "$work/${p}_ompi" "bench/mpi/$p.c"
done

colls=(allreduce bcast alltoall)
rma_tests=(put_lat.lock_all get_lat.lock_all acc_lat.float64 fop_lat cas_lat fence)
systems=(gorma mpich ompi)
# benches: "BENCH RANKS" in the document's order.
benches=("pingpong 2")
for c in "${colls[@]}"; do
	for n in "${ranks[@]}"; do benches+=("$c $n"); done
done
benches+=("rma 2" "startup 2")

# launch SYSTEM RANKS: the launcher's words for a run.
launch() {
	case $1 in
	gorma) printf '%s\n' env "LD_LIBRARY_PATH=$work/lib" bin/golaunch -n "$2" --timeout 10m --tag-output=false ;;
	mpich) printf '%s\n' mpiexec.hydra -n "$2" ;;
	ompi) printf '%s\n' "${mpirun[@]}" -n "$2" ;;
	esac
}

# cmd BENCH RANKS SYSTEM: the command of a run, one word a line; "@OUT@" stands for the
# run's JSON file. Empty for a system the bench has no build for.
cmd() {
	local build=mpich prog args
	[[ $3 == ompi ]] && build=ompi
	case $1 in
	pingpong) prog=pingpong args=(--test latency --min-size 8 --max-size 65536 --iters 100000 --json=@OUT@) ;;
	rma) prog=rmabench args=(--test "$(IFS=,; echo "${rma_tests[*]}")" --max-size 8 --iters 100000 --json=@OUT@) ;;
	startup)
		[[ $3 == ompi ]] && return
		launch "$3" "$2"
		printf '%s\n' "$(command -v NPmpich2)" -l 8 -u 8 -n 1 -p 0 -o /dev/null
		return
		;;
	*) prog=allreducebench args=(--test "$1" --sizes 8,65536,1048576 --iters 20000 --min-iters 50 --size-time 300ms --json=@OUT@) ;;
	esac
	launch "$3" "$2"
	printf '%s\n' "$work/${prog}_$build" "${args[@]}"
}

# figures BENCH FILE: a run's figures, one "CASE US" a line (CASE without spaces).
figures() {
	case $1 in
	pingpong) jq -er '.latency[] | select(.bytes == 8 or .bytes == 65536) | "\(.bytes) \(.latency_us)"' "$2" ;;
	rma) jq -er '.tables[] | "\(.name) \(.rows[0].median_us)"' "$2" ;;
	*) jq -er --arg b "$1" '.[$b][] | "\(.bytes) \(.avg_us)"' "$2" ;;
	esac
}

# label CASE: a case's name in the document: sizes in B, KiB or MiB.
label() {
	case $1 in
	8) echo "8 B" ;;
	65536) echo "64 KiB" ;;
	1048576) echo "1 MiB" ;;
	*) echo "$1" ;;
	esac
}

declare -A us seen
cases=() # "BENCH RANKS SYSTEM CASE" in the order first measured
failed=()
# run BENCH RANKS SYSTEM: one run; its figures appended to us[BENCH RANKS SYSTEM CASE].
run() {
	local key="$1 $2 $3" o=$work/run.json c rc=0 why t0 t1 k v
	mapfile -t c < <(cmd "$1" "$2" "$3")
	((${#c[@]} > 0)) || return 0
	c=("${c[@]//@OUT@/$o}")
	rm -f "$o"
	t0=$(date +%s%N)
	timeout --kill-after=10 "${RUN_TIMEOUT:-300}" "${c[@]}" >"$work/run.txt" 2>"$work/run.err" </dev/null || rc=$?
	t1=$(date +%s%N)
	if ((rc == 0)) && [[ $1 == startup ]]; then
		echo "NPmpich2 $(((t1 - t0) / 1000))" >"$work/run.fig"
	elif ((rc != 0)) || ! figures "$1" "$o" >"$work/run.fig"; then
		why="exit $rc"
		((rc == 0)) && why="no figures"
		failed+=("rep $((i + 1)): $1 $2 $3: $why")
		{
			echo "compare-abi: ${failed[-1]}; not measured"
			tail -n 5 "$work/run.err"
		} >&2
		return 0
	fi
	while read -r k v; do
		[[ -n ${seen["$key $k"]:-} ]] || { seen["$key $k"]=1; cases+=("$key $k"); }
		us["$key $k"]+="$v "
	done <"$work/run.fig"
}

exec 9>/tmp/gorma-bench.lock
for ((i = 0; i < reps; i++)); do
	flock 9
	for b in "${benches[@]}"; do
		for ((k = 0; k < ${#systems[@]}; k++)); do
			run $b "${systems[(k + i) % ${#systems[@]}]}"
		done
	done
	flock -u 9
	echo "compare-abi: rep $((i + 1)) of $reps done (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
done

# str S: S as a JSON string.
str() { jq -Rn --arg s "$1" '$s'; }
# words ARGS: a command's words as one line, the temporary folder as $WORK.
words() {
	local IFS=' ' s="$*"
	echo "${s//$work/\$WORK}"
}
{
	printf '{\n"command": %s,\n' "$(str "${RANKS:+RANKS=\"$RANKS\" }scripts/compare-abi.sh $reps")"
	printf '"machine": {"cores": %d, "cpu": %s, "memory_gib": %d, "numa_nodes": %d},\n' "$(nproc)" \
		"$(str "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')")" \
		"$(free -g | awk '/Mem:/ {print $2}')" "$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)"
	printf '"go": %s,\n' "$(str "$(go env GOVERSION)")"
	printf '"mpich": %s,\n' "$(str "$(dpkg-query -W -f='${Version}' libmpich12 2>/dev/null | sed 's/-.*//')")"
	printf '"openmpi": %s,\n' "$(str "$(mpirun.openmpi --version 2>/dev/null | head -1 | sed 's/.*) //')")"
	printf '"reps": %d,\n' "$reps"
	printf '"load": {"start": [%s], "end": [%s]},\n' "${load_start// /,}" "$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ',')"
	printf '"benchmarks": ['
	sep=""
	for b in "${benches[@]}"; do
		read -r name n <<<"$b"
		printf '%s\n{"bench": "%s", "ranks": %d, "commands": {' "$sep" "$name" "$n"
		s2=""
		for s in "${systems[@]}"; do
			mapfile -t c < <(cmd "$name" "$n" "$s")
			((${#c[@]} > 0)) || continue
			printf '%s\n  "%s": %s' "$s2" "$s" "$(str "$(words "${c[@]}")")"
			s2=","
		done
		printf '}}'
		sep=","
	done
	printf '\n],\n"runs": ['
	sep=""
	for b in "${benches[@]}"; do
		read -r name n <<<"$b"
		for s in "${systems[@]}"; do
			for key in "${cases[@]}"; do
				[[ $key == "$name $n $s "* ]] || continue
				k=${key##* }
				v=${us[$key]% }
				printf '%s\n{"bench": "%s", "ranks": %d, "system": "%s", "case": %s, "us": [%s]}' "$sep" "$name" "$n" "$s" "$(str "$(label "$k")")" "${v// /,}"
				sep=","
			done
		done
	done
	printf '\n],\n"failed": ['
	sep=""
	for f in "${failed[@]}"; do
		printf '%s%s' "$sep" "$(str "$f")"
		sep=", "
	done
	printf ']\n}\n'
} >"$work/abi.json"
jq -e . "$work/abi.json" >/dev/null
mkdir -p "$(dirname "$out")"
cp "$work/abi.json" "$out"
echo "compare-abi: wrote $out; chart page renders it beside docs/benchmarks.json" >&2
