#!/usr/bin/env bash
# A 1-D halo exchange through RMA windows on an oversubscribed host, side by side in one
# run: apps/rmahalo through golaunch, with the default progress mode ("gorma") and with
# GORMA_PROGRESS=block ("gorma-block"), against its C twin (bench/mpi/rmahalo.c) under
# Open MPI's mpirun --oversubscribe, twice: with osc/sm forced ("ompi-sm") and with Open
# MPI's default one-sided component ("ompi"); under MPICH too ("mpich") when mpicc.mpich
# and mpiexec.mpich are installed. NP ranks on this host form a ring; every mode of SYNCS
# runs at every size (SIZES, or 8 B to 64 KiB by powers of two).
# Each repetition runs every system once (one job: every mode, every size), in an order
# that rotates from one repetition to the next, each job under flock LOCK (other
# benchmarks share the machine), so that a change of the machine's speed hits all of
# them. --size-time caps each size's timed iterations (MPICH busy-polls: with 4 ranks on
# 2 cores one iteration can take 100 ms).
# Prints one line per job, then per mode a Markdown table of the medians over the
# repetitions (microseconds per iteration at rank 0) and the ratio gorma / each other
# column. The question it answers: is gorma at least as fast as each MPI, and is the
# default progress mode at least as fast as block (gorma/gorma-block <= 1)?
# Usage: scripts/compare-rmahalo.sh [REPS]   (environment: NP=4, SYNCS="fence pscw lock lock_all",
#        SIZES (a list such as "8 4096 65536"; empty: 8 B to 64 KiB), ITERS=1000, WARMUP=10, SIZE_TIME=200ms,
#        LOCK=/tmp/gorma-bench.lock, RUN_TIMEOUT=900 seconds a job)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
np=${NP:-4}
read -r -a syncs <<<"${SYNCS:-fence pscw lock lock_all}"
read -r -a sizes <<<"${SIZES:-}"
iters=${ITERS:-1000}
warmup=${WARMUP:-10}
size_time=${SIZE_TIME:-200ms}
lock=${LOCK:-/tmp/gorma-bench.lock}
run_timeout=${RUN_TIMEOUT:-900}
for tool in mpirun.openmpi mpicc.openmpi flock; do
	command -v "$tool" >/dev/null || { echo "compare-rmahalo: $tool missing: apt-get install openmpi-bin libopenmpi-dev util-linux" >&2; exit 2; }
done
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"

mkdir -p bin
CGO_ENABLED=0 go build -o bin/ ./launcher/cmd/golaunch ./apps/rmahalo
mpicc.openmpi -O2 -Wall -Wextra -o bin/rmahalo_mpi bench/mpi/rmahalo.c
systems=(gorma gorma-block ompi-sm ompi)
if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
	mpicc.mpich -O2 -Wall -Wextra -o bin/rmahalo_mpich bench/mpi/rmahalo.c && systems+=(mpich)
else
	echo "compare-rmahalo: MPICH not installed (mpicc.mpich, mpiexec.mpich): skipping it" >&2
fi

args=(--sync "$(IFS=,; echo "${syncs[*]}")" --iters "$iters" --warmup "$warmup" --size-time "$size_time")
((${#sizes[@]})) && args+=(--sizes "$(IFS=,; echo "${sizes[*]}")")
to=(timeout --kill-after=10 "$run_timeout")
golaunch=(bin/golaunch -n "$np" --timeout "${run_timeout}s" --tag-output=false)
ompi=(mpirun.openmpi --allow-run-as-root --oversubscribe -n "$np")
# job SYSTEM: one run of every mode and size; prints its text output.
job() {
	case $1 in
	gorma) "${to[@]}" "${golaunch[@]}" bin/rmahalo "${args[@]}" ;;
	gorma-block) "${to[@]}" "${golaunch[@]}" -x GORMA_PROGRESS=block bin/rmahalo "${args[@]}" ;;
	ompi-sm) "${to[@]}" "${ompi[@]}" --mca osc sm bin/rmahalo_mpi "${args[@]}" ;;
	ompi) "${to[@]}" "${ompi[@]}" bin/rmahalo_mpi "${args[@]}" ;;
	mpich) "${to[@]}" mpiexec.mpich -n "$np" bin/rmahalo_mpich "${args[@]}" ;;
	esac
}
# rows SYSTEM: "SYSTEM MODE BYTES US" from a job's text output
rows() { awk -v t="$1" '/^# rmahalo [a-z_]+: / {m = $3; sub(/:$/, "", m)} /^[0-9]/ && m != "" {print t, m, $1, $2}'; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for ((r = 0; r < reps; r++)); do
	for ((j = 0; j < ${#systems[@]}; j++)); do
		s=${systems[(j + r) % ${#systems[@]}]}
		start=$SECONDS
		if (flock 9 && job "$s") 9>"$lock" >"$out/job"; then
			rows "$s" <"$out/job" >>"$out/rows"
			echo "rep $((r + 1)) of $reps, $s: $((SECONDS - start)) s ($(cut -d' ' -f1-3 /proc/loadavg))" >&2
		else
			rows "$s" <"$out/job" >>"$out/rows" || true
			echo "compare-rmahalo: rep $((r + 1)), $s: the job failed (its rows so far are kept)" >&2
		fi
	done
done

echo "# $(date -u +%FT%TZ) $(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), kernel $(uname -r), $(go env GOVERSION), $(mpirun.openmpi --version | head -1); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $np ranks in a ring; medians of $reps rotating repetitions; us per iteration at rank 0 (lower is better)"
echo "# gorma-block: GORMA_PROGRESS=block; ompi-sm: Open MPI with --mca osc sm; ompi: Open MPI's default osc component"
awk -v systems="${systems[*]}" -v modes="${syncs[*]}" '
function med(key,   n, a, i, j, t) {
	n = split(vals[key], a, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
{ key = $1 SUBSEP $2 SUBSEP $3; vals[key] = vals[key] " " $4; if (!(($2 SUBSEP $3) in seen)) { seen[$2 SUBSEP $3] = 1; order[++n] = $2 SUBSEP $3 } }
END {
	ns = split(systems, sl, " "); nm = split(modes, ml, " ")
	for (m = 1; m <= nm; m++) {
		printf "\n## %s\n", ml[m]
		hdr = sprintf("| %-8s |", "bytes"); sep = "|----------|"
		for (t = 1; t <= ns; t++) { hdr = hdr sprintf(" %11s |", sl[t]); sep = sep "-------------|" }
		for (t = 2; t <= ns; t++) { hdr = hdr sprintf(" %17s |", "gorma/" sl[t]); sep = sep "-------------------|" }
		print hdr; print sep
		for (k = 1; k <= n; k++) {
			split(order[k], p, SUBSEP); if (p[1] != ml[m]) continue
			line = sprintf("| %-8s |", p[2])
			for (t = 1; t <= ns; t++) { key = sl[t] SUBSEP p[1] SUBSEP p[2]; f[t] = (key in vals) ? med(key) : ""
				line = line (f[t] == "" ? sprintf(" %11s |", "-") : sprintf(" %11.3f |", f[t])) }
			for (t = 2; t <= ns; t++) line = line ((f[1] == "" || f[t] == "" || f[t] == 0) ? sprintf(" %17s |", "-") : sprintf(" %16sx |", sprintf("%.3g", f[1] / f[t])))
			print line
		}
	}
}' "$out/rows"
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
