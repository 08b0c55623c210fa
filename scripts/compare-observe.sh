#!/usr/bin/env bash
# compare-observe.sh [REPS]: what observation costs. Runs apps/pingpong (latency, 2 ranks)
# and apps/allreducebench (Allreduce, RANKS ranks) through golaunch in three modes: off,
# --profile DIR (GORMA_PROFILE) and --trace FILE (GORMA_TRACE). Runs their C twins
# (bench/mpi/pingpong.c, bench/mpi/allreducebench.c) under mpirun.openmpi in two: off, and
# with Open MPI's per-peer counters (--mca pml_monitoring_enable 2, output 3, a filename).
# Each repetition runs every mode of both benchmarks once, under flock
# /tmp/gorma-bench.lock. The modes' order rotates by one each repetition, and the
# benchmarks' order alternates. A run counts only when it exited 0 and left its mode's
# output (the profile's job.json, a timeline, Open MPI's prof.0.prof); the document names
# each run that did not.
# Figures: pingpong's half round trip (a mean over the round trips, its JSON's latency_us,
# which keeps the digits its text rounds away) and Allreduce's avg_us
# (each rank's mean per call, averaged over the ranks), at SIZES.
# Writes OUT (docs/observe.json): every run's figure per benchmark, system, mode and size,
# with the commands, the machine and its clock sources (current and available, and the
# processor's constant_tsc and nonstop_tsc flags, which decide the timeline's clock: trace.CounterUsable),
# the load at the start and the end, and Open MPI's
# version. chart page renders it as the section "The cost of observation". The hooks'
# cost with observation off is scripts/compare-builds.sh's to measure.
# Usage: scripts/compare-observe.sh [REPS]
#   environment: RANKS=2 (Allreduce; pingpong's twin needs exactly 2), SIZES="8 1024 65536 1048576",
#   PP_ITERS=100000 (round trips up to 16 KiB, fewer above), AR_ITERS=50000, AR_MIN_ITERS=50,
#   RUN_TIMEOUT=300 (seconds per run), OUT=docs/observe.json
#   BIN=DIR runs prebuilt binaries from DIR (golaunch, pingpong, allreducebench and the C
#   twins pingpong_ompi and allreducebench_ompi) and builds nothing: the 16-core machine's
#   bundle (scripts/device16.sh bundle observe). There MPIRUN names Open MPI's launcher
#   (default "mpirun.openmpi --allow-run-as-root --oversubscribe") and GOVERSION the Go
#   that built the binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-9}
ranks=${RANKS:-2}
sizes=(${SIZES:-8 1024 65536 1048576})
pp_iters=${PP_ITERS:-100000}
ar_iters=${AR_ITERS:-50000}
ar_min_iters=${AR_MIN_ITERS:-50}
out=${OUT:-docs/observe.json}
read -r -a mpirun <<<"${MPIRUN:-mpirun.openmpi --allow-run-as-root --oversubscribe}"
bin=${BIN:-}
tools=("${mpirun[0]}" jq)
[[ -z $bin ]] && tools+=(mpicc.openmpi go)
for tool in "${tools[@]}"; do
	command -v "$tool" >/dev/null || { echo "compare-observe: $tool missing: apt-get install openmpi-bin libopenmpi-dev jq" >&2; exit 2; }
done
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
if [[ -z $bin ]]; then
	bin=bin
	mkdir -p bin
	CGO_ENABLED=0 go build -o bin/ ./launcher/cmd/golaunch ./apps/pingpong ./apps/allreducebench
	mpicc.openmpi -O2 -o bin/pingpong_ompi bench/mpi/pingpong.c
	mpicc.openmpi -O2 -Wall -Wextra -o bin/allreducebench_ompi bench/mpi/allreducebench.c
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

sizes_csv=$(IFS=,; echo "${sizes[*]}")
pp_args=(--test latency --min-size "${sizes[0]}" --max-size "${sizes[-1]}" --iters "$pp_iters")
ar_args=(--test allreduce --sizes "$sizes_csv" --iters "$ar_iters" --min-iters "$ar_min_iters")
benches=(pingpong allreduce)
modes=(gorma_off gorma_profile gorma_trace ompi_off ompi_monitoring)
monitoring=(--mca pml_monitoring_enable 2 --mca pml_monitoring_enable_output 3 --mca pml_monitoring_filename)

# cmd BENCH MODE: the command of a run, one word a line; "@OBS@" stands for the run's
# profile folder, timeline file or monitoring file prefix.
cmd() {
	local np=2 prog=pingpong args=("${pp_args[@]}" --json=@OBS@.json) obs=()
	if [[ $1 == allreduce ]]; then
		np=$ranks prog=allreducebench args=("${ar_args[@]}" --json=@OBS@.json)
	fi
	case $2 in
	gorma_*)
		[[ $2 == gorma_profile ]] && obs=(--profile @OBS@)
		[[ $2 == gorma_trace ]] && obs=(--trace @OBS@)
		printf '%s\n' "$bin/golaunch" -n "$np" --timeout 10m --tag-output=false "${obs[@]}" "$bin/$prog" "${args[@]}"
		;;
	ompi_*)
		[[ $2 == ompi_monitoring ]] && obs=("${monitoring[@]}" @OBS@/prof)
		printf '%s\n' "${mpirun[@]}" -n "$np" "${obs[@]}" "$bin/${prog}_ompi" "${args[@]}"
		;;
	esac
}

# observed MODE OBS: whether the run left its mode's output.
observed() {
	case $1 in
	gorma_profile) [[ -s $2/job.json ]] ;;
	gorma_trace) [[ -s $2 ]] ;;
	ompi_monitoring) [[ -s $2/prof.0.prof ]] ;;
	*) true ;;
	esac
}

# figures BENCH OBS: a run's figure at each size, one "BYTES US" a line.
figures() {
	local s
	for s in "${sizes[@]}"; do
		if [[ $1 == pingpong ]]; then
			jq -er --argjson n "$s" '.latency[] | select(.bytes == $n) | "\(.bytes) \(.latency_us)"' "$2.json"
		else
			jq -er --argjson n "$s" '.allreduce[] | select(.bytes == $n) | "\(.bytes) \(.avg_us)"' "$2.json"
		fi
	done
}

declare -A us
failed=()
# run BENCH MODE: one run; its figures appended to us[BENCH MODE BYTES], or a line to failed.
run() {
	local key="$1 $2" obs=$work/obs c rc=0 why n v
	rm -rf "$obs" "$obs".*
	[[ $2 == ompi_monitoring ]] && mkdir -p "$obs"
	mapfile -t c < <(cmd "$1" "$2")
	c=("${c[@]//@OBS@/$obs}")
	timeout --kill-after=10 "${RUN_TIMEOUT:-300}" "${c[@]}" >"$obs.txt" 2>"$obs.err" </dev/null || rc=$?
	if ((rc != 0)) || ! observed "$2" "$obs" || ! figures "$1" "$obs" >"$obs.fig"; then
		why="exit $rc"
		((rc == 0)) && why="no output of the mode or no figure"
		failed+=("rep $((i + 1)): $1 $2: $why")
		{
			echo "compare-observe: ${failed[-1]}; not measured"
			tail -n 5 "$obs.err"
		} >&2
		return
	fi
	while read -r n v; do us["$key $n"]+="$v "; done <"$obs.fig"
}

exec 9>/tmp/gorma-bench.lock
for ((i = 0; i < reps; i++)); do
	order=("${benches[@]}")
	((i % 2)) && order=("${benches[1]}" "${benches[0]}")
	flock 9
	for b in "${order[@]}"; do
		for ((k = 0; k < ${#modes[@]}; k++)); do
			run "$b" "${modes[(k + i) % ${#modes[@]}]}"
		done
	done
	flock -u 9
	echo "compare-observe: rep $((i + 1)) of $reps done (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
done

# str S: S as a JSON string.
str() { jq -Rn --arg s "$1" '$s'; }
# words ARGS: a command's words as one line.
words() { local IFS=' '; echo "$*"; }
{
	printf '{\n"command": %s,\n' "$(str "${RANKS:+RANKS=$RANKS }scripts/compare-observe.sh $reps")"
	printf '"machine": {"cores": %d, "cpu": %s, "memory_gib": %d, "numa_nodes": %d},\n' "$(nproc)" \
		"$(str "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')")" \
		"$(free -g | awk '/Mem:/ {print $2}')" "$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)"
	printf '"clocksource": %s,\n' "$(str "$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)")"
	printf '"clocksources": %s,\n' "$(str "$(cat /sys/devices/system/clocksource/clocksource0/available_clocksource 2>/dev/null | sed 's/ *$//' || true)")"
	printf '"tsc_flags": %s,\n' "$(str "$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -xE 'constant_tsc|nonstop_tsc' | paste -sd' ' || true)")"
	printf '"go": %s,\n' "$(str "${GOVERSION:-$(go env GOVERSION)}")"
	printf '"openmpi": %s,\n' "$(str "$("${mpirun[0]}" --version 2>/dev/null | head -1 | sed 's/.*) //')")"
	printf '"reps": %d,\n' "$reps"
	printf '"load": {"start": [%s], "end": [%s]},\n' "${load_start// /,}" "$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ',')"
	printf '"benchmarks": ['
	sep=""
	for b in "${benches[@]}"; do
		np=2
		[[ $b == allreduce ]] && np=$ranks
		printf '%s\n{"bench": "%s", "ranks": %d, "commands": {' "$sep" "$b" "$np"
		s2=""
		for m in "${modes[@]}"; do
			mapfile -t c < <(cmd "$b" "$m")
			printf '%s\n  "%s": %s' "$s2" "$m" "$(str "$(words "${c[@]}")")"
			s2=","
		done
		printf '}}'
		sep=","
	done
	printf '\n],\n"runs": ['
	sep=""
	for b in "${benches[@]}"; do
		for m in "${modes[@]}"; do
			for s in "${sizes[@]}"; do
				v=${us["$b $m $s"]:-}
				[[ -n $v ]] || continue
				v=${v% }
				printf '%s\n{"bench": "%s", "system": "%s", "mode": "%s", "bytes": %d, "us": [%s]}' "$sep" "$b" "${m%%_*}" "${m#*_}" "$s" "${v// /,}"
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
} >"$work/observe.json"
jq -e . "$work/observe.json" >/dev/null
mkdir -p "$(dirname "$out")"
cp "$work/observe.json" "$out"
echo "compare-observe: wrote $out; chart page renders it beside docs/benchmarks.json" >&2
