#!/usr/bin/env bash
# A nonblocking Allreduce beside a computation, side by side in one run: apps/allreducebench
# --test overlap (collectives.Iallreduce, a compute kernel, Request.Wait) through golaunch
# against its C twin (bench/mpi/allreducebench.c: MPI_Iallreduce, the same kernel,
# MPI_Wait) under Open MPI and MPICH, at 2 ranks and 16 MiB (SIZE). The kernel is float64
# arithmetic over a private array, calibrated in each run to take as long as that
# system's blocking Allreduce, and makes no library call (each iteration runs the three
# timings in turn): the overlap shows how far the
# library progresses the collective while the rank computes. Figures per system: t_coll
# (Allreduce alone), t_comp (the kernel alone), t_ovl (Iallreduce + kernel + Wait), the
# blocking sum t_coll + t_comp, and the OSU-style overlap (t_coll + t_comp - t_ovl) /
# min(t_coll, t_comp) * 100 (100: the collective is hidden entirely; 0: no better than
# the blocking sum). Each repetition runs every system once, under flock LOCK, in an order
# that rotates from one repetition to the next; the figures are medians over REPS
# repetitions. An MPI that is not installed (mpicc.openmpi and mpirun.openmpi;
# mpicc.mpich and mpiexec.mpich) leaves its cells empty.
# Targets: gorma's overlap at least each MPI's; gorma's overlapped time below its
# blocking sum.
# Prints every run's figures, then a Markdown table (figure | gorma | peer | ratio |
# target); with JSON=FILE, writes the same as a section of docs/benchmarks.json to FILE,
# which `chart collect --section` appends (compare-all.sh).
# Usage: scripts/compare-overlap.sh [REPS]   (environment: JSON, SIZE=16M, ITERS=20 timed
#        iterations of each of the three, LOCK=/tmp/gorma-bench.lock, RUN_TIMEOUT=120
#        seconds a program)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
json=${JSON:-}
size=${SIZE:-16M}
iters=${ITERS:-20}
lock=${LOCK:-/tmp/gorma-bench.lock}
run_timeout=${RUN_TIMEOUT:-120}
command -v jq >/dev/null || { echo "compare-overlap: jq missing: apt-get install jq" >&2; exit 2; }
load0=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ',') # the section's load at the start; the end is read when it is written

mkdir -p bin
CGO_ENABLED=0 go build -o bin/ ./launcher/cmd/golaunch ./apps/allreducebench
systems=(gorma)
if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
	mpicc.openmpi -O2 -Wall -Wextra -o bin/allreducebench_ompi bench/mpi/allreducebench.c && systems+=(ompi)
fi
if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
	mpicc.mpich -O2 -Wall -Wextra -o bin/allreducebench_mpich bench/mpi/allreducebench.c && systems+=(mpich)
fi
columns=(gorma ompi mpich)
fields=(coll_us comp_us ovl_us blocking_sum_us overlap_pct)
declare -A names=([gorma]="gorma" [ompi]="Open MPI" [mpich]="MPICH")

# cell SYSTEM: one job; prints its overlap row's fields, in the order of fields.
cell() {
	local to=(timeout --kill-after=10 "$run_timeout") args=(--test overlap --sizes "$size" --iters "$iters" --min-iters "$iters" --json)
	case $1 in
	gorma) "${to[@]}" bin/golaunch -n 2 --timeout "${run_timeout}s" --tag-output=false bin/allreducebench "${args[@]}" ;;
	ompi) "${to[@]}" mpirun.openmpi --allow-run-as-root -n 2 bin/allreducebench_ompi "${args[@]}" ;;
	mpich) "${to[@]}" mpiexec.mpich -n 2 bin/allreducebench_mpich "${args[@]}" ;;
	esac | jq -r '.overlap[0] | [.coll_us, .comp_us, .ovl_us, .blocking_sum_us, .overlap_pct] | map(tostring) | join(" ")'
}
declare -A vals
for ((r = 0; r < reps; r++)); do
	for ((j = 0; j < ${#systems[@]}; j++)); do
		s=${systems[(j + r) % ${#systems[@]}]}
		if v=$(flock "$lock" bash -c "set -o pipefail; $(declare -p run_timeout size iters); $(declare -f cell); cell $s") && [[ -n $v ]]; then
			read -r -a f <<<"$v"
			for k in "${!fields[@]}"; do vals["$s ${fields[k]}"]+="${f[k]} "; done
			echo "rep $((r + 1)), ${names[$s]}: t_coll ${f[0]} us, t_comp ${f[1]} us, t_ovl ${f[2]} us, sum ${f[3]} us, overlap ${f[4]} %"
		else
			echo "compare-overlap: ${names[$s]}, repetition $((r + 1)): failed" >&2
		fi
	done
done

median() { tr ' ' '\n' | { grep . || true; } | sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
med() { median <<<"${vals["$1 $2"]:-}"; }

echo
echo "# $(date -u +%FT%TZ) $(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), kernel $(uname -r), $(go env GOVERSION); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# medians of $reps repetitions; 2 ranks, $size float64 sum, $iters timed iterations of each; overlap = (t_coll + t_comp - t_ovl) / min(t_coll, t_comp)"
printf '| %-44s | %12s | %12s | %8s | %-18s |\n' "figure" "gorma" "peer" "ratio" "target"
printf '|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..46})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..10})" "$(printf -- '-%.0s' {1..20})"
# line LABEL G P UNIT TARGET: a table row; TARGET ">=" (g at least p), "<" (g below p) or "" (a reference).
line() {
	[[ -n $2 && -n $3 ]] || return 0
	awk -v l="$1" -v g="$2" -v p="$3" -v u="$4" -v t="$5" 'BEGIN {
		w = u == "%" ? "%9.1f  %%" : "%9.0f us"
		r = (g > 0 && p > 0) ? sprintf("%7.2fx", g / p) : sprintf("%8s", "-")
		if (t == ">=") tt = ">= peer " (g >= p ? "ok" : "MISS")
		else if (t == "<") tt = "< 1.00x " (g < p ? "ok" : "MISS")
		else tt = "(reference)"
		printf "| %-44s | " w " | " w " | %s | %-18s |\n", l, g, p, r, tt}'
}
for c in ompi mpich; do
	line "$size overlap, gorma vs ${names[$c]}" "$(med gorma overlap_pct)" "$(med "$c" overlap_pct)" % ">="
done
line "$size t_ovl vs blocking sum, gorma" "$(med gorma ovl_us)" "$(med gorma blocking_sum_us)" us "<"
for c in ompi mpich; do
	line "$size t_ovl vs blocking sum, ${names[$c]}" "$(med "$c" ovl_us)" "$(med "$c" blocking_sum_us)" us ""
	line "$size Allreduce alone, gorma vs ${names[$c]}" "$(med gorma coll_us)" "$(med "$c" coll_us)" us ""
done

[[ -n $json ]] || exit 0
# The section: every system's medians of every figure (every run's figures are in the text above).
rows=()
labels=("Allreduce alone (t_coll)" "compute alone (t_comp)" "Iallreduce + compute + Wait (t_ovl)" "blocking sum (t_coll + t_comp)" "overlap")
for k in "${!fields[@]}"; do
	vs=() qs=() g=$(med gorma "${fields[k]}") unit=us target=null
	for c in "${columns[@]}"; do
		v=$(med "$c" "${fields[k]}")
		vs+=("${v:-null}")
		if [[ $c != gorma ]]; then
			if [[ ${fields[k]} != overlap_pct && -n $g && -n $v ]]; then
				qs+=("$(awk -v a="$g" -v b="$v" 'BEGIN {printf "%.2f", a / b}')")
			else
				qs+=(null)
			fi
		fi
	done
	if [[ ${fields[k]} == overlap_pct ]]; then
		unit=% ok=true
		for c in ompi mpich; do
			v=$(med "$c" overlap_pct)
			if [[ -z $g || -z $v ]]; then ok=null; elif [[ $ok == true ]] && awk -v a="$g" -v b="$v" 'BEGIN {exit !(a < b)}'; then ok=false; fi
		done
		target=$(jq -nc --argjson ok "$ok" '{text: "gorma >= Open MPI, >= MPICH", ok: $ok}')
	elif [[ ${fields[k]} == ovl_us ]]; then
		s=$(med gorma blocking_sum_us) ok=null
		if [[ -n $g && -n $s ]]; then ok=$(awk -v a="$g" -v b="$s" 'BEGIN {print (a < b ? "true" : "false")}'); fi
		target=$(jq -nc --argjson ok "$ok" '{text: "gorma below its blocking sum", ok: $ok}')
	fi
	rows+=("$(jq -nc --arg l "${labels[k]}" --arg u "$unit" --argjson v "[$(IFS=,; echo "${vs[*]}")]" \
		--argjson q "[$(IFS=,; echo "${qs[*]}")]" --argjson t "$target" \
		'{label: $l, unit: $u, values: $v, ratios: $q} + (if $t == null then {} else {target: $t} end)')")
done
col_names=()
for c in "${columns[@]}"; do col_names+=("${names[$c]}"); done
missing=""
for c in ompi mpich; do [[ " ${systems[*]} " == *" $c "* ]] || missing+="${missing:+, }${names[$c]}"; done
intro="\`apps/allreducebench --test overlap\` against \`bench/mpi/allreducebench.c\` (\`scripts/compare-overlap.sh\`), 2 ranks, $size float64 sum: \`collectives.Iallreduce\` (\`MPI_Iallreduce\`), then a compute kernel (float64 arithmetic over a private array, calibrated in each run to take as long as that system's blocking Allreduce, and making no library call), then \`Wait\` (\`MPI_Wait\`); each iteration runs the Allreduce alone, the kernel alone and the overlapped pair in turn. Overlap is OSU's measure, (t_coll + t_comp - t_ovl) / min(t_coll, t_comp): 100 % hides the collective entirely, 0 % is no better than the blocking sum. Each rank's mean of $iters timed iterations of each, averaged over the ranks; medians of $reps repetitions, each running every system once, in a rotating order; every run is in \`results/compare/overlap.txt\`.${missing:+ Not in this run: $missing.}"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
load="{\"start\": [$load0], \"end\": [$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ',')]}"
jq -n --arg intro "$intro" --argjson load "$load" --argjson rows "[$(IFS=,; echo "${rows[*]}")]" \
	--argjson cols "$(printf '%s\n' "${col_names[@]}" | jq -R . | jq -s .)" \
	'{id: "overlap", title: "Nonblocking Allreduce beside a computation, 2 ranks", intro: $intro, load: $load,
	  tables: [{title: "Iallreduce + compute", key: "figure", columns: $cols, rows: $rows}]}' >"$tmp"
mkdir -p "$(dirname "$json")"
cp "$tmp" "$json" # whole or not at all: chart collect rejects a cut document
echo "compare-overlap: wrote $json" >&2
