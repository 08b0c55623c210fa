#!/usr/bin/env bash
# A 2D halo column exchange with a vector datatype, side by side in one run: apps/halobench
# (datatype.Vector and runtime.SendrecvType) through golaunch against its C twin
# (bench/mpi/halobench.c: MPI_Type_vector and MPI_Sendrecv) under Open MPI and MPICH, at 2
# ranks, for a small and a large matrix (SIZES, default N=256 and N=4096: 2 KiB and 32 KiB
# columns). apps/halobench --manual (the columns packed by hand, Sendrecv) runs beside
# them as a reference: what a Go program without datatypes writes. Each repetition runs
# every system once per size, under flock LOCK, in an order that rotates from one
# repetition to the next, so that a change of the machine's speed hits all of them; the
# figures are the medians over REPS repetitions of the mean time of one exchange (both
# columns, both directions). An MPI that is not installed (mpicc.openmpi and
# mpirun.openmpi; mpicc.mpich and mpiexec.mpich) leaves its cells empty.
# Targets: gorma's exchange no slower than each MPI's, at both sizes.
# Prints every run's figure, then a Markdown table (figure | gorma | peer | ratio |
# target); with JSON=FILE, writes the same as a section of docs/benchmarks.json to FILE,
# which `chart collect --section` appends (compare-all.sh).
# Usage: scripts/compare-halo.sh [REPS]   (environment: JSON, SIZES="256 4096",
#        ITERS="20000 1000" (timed exchanges per size, in SIZES' order), LOCK=/tmp/gorma-bench.lock,
#        RUN_TIMEOUT=120 seconds a program)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
json=${JSON:-}
read -r -a sizes <<<"${SIZES:-256 4096}"
read -r -a iters <<<"${ITERS:-20000 1000}"
lock=${LOCK:-/tmp/gorma-bench.lock}
run_timeout=${RUN_TIMEOUT:-120}
((${#iters[@]} == ${#sizes[@]})) || { echo "compare-halo: ITERS needs one count per size in SIZES" >&2; exit 2; }
command -v jq >/dev/null || { echo "compare-halo: jq missing: apt-get install jq" >&2; exit 2; }
load0=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ',') # the section's load at the start; the end is read when it is written

mkdir -p bin
CGO_ENABLED=0 go build -o bin/ ./launcher/cmd/golaunch ./apps/halobench
systems=(gorma manual)
if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
	mpicc.openmpi -O2 -Wall -o bin/halobench_mpi bench/mpi/halobench.c && systems+=(ompi)
fi
if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
	mpicc.mpich -O2 -Wall -o bin/halobench_mpich bench/mpi/halobench.c && systems+=(mpich)
fi
columns=(gorma manual ompi mpich)
declare -A names=([gorma]="gorma" [manual]="gorma --manual" [ompi]="Open MPI" [mpich]="MPICH")

# cell SYSTEM N ITERS: one job at one size; prints its exchange_us.
cell() {
	local to=(timeout --kill-after=10 "$run_timeout") args=(--sizes "$2" --iters "$3" --warmup $(($3 / 10 + 1)))
	case $1 in
	gorma) "${to[@]}" bin/golaunch -n 2 --timeout "${run_timeout}s" --tag-output=false bin/halobench "${args[@]}" ;;
	manual) "${to[@]}" bin/golaunch -n 2 --timeout "${run_timeout}s" --tag-output=false bin/halobench --manual "${args[@]}" ;;
	ompi) "${to[@]}" mpirun.openmpi --allow-run-as-root -n 2 bin/halobench_mpi "${args[@]}" ;;
	mpich) "${to[@]}" mpiexec.mpich -n 2 bin/halobench_mpich "${args[@]}" ;;
	esac | awk -v n="$2" '$1 == n {v = $4} END {if (v == "") exit 1; print v}'
}
declare -A vals
for ((r = 0; r < reps; r++)); do
	for k in "${!sizes[@]}"; do
		n=${sizes[k]}
		for ((j = 0; j < ${#systems[@]}; j++)); do
			s=${systems[(j + r) % ${#systems[@]}]}
			if v=$(flock "$lock" bash -c "set -o pipefail; $(declare -p run_timeout); $(declare -f cell); cell $s $n ${iters[k]}"); then
				vals["$n $s"]+="$v "
				echo "rep $((r + 1)), N=$n, ${names[$s]}: $v us"
			else
				echo "compare-halo: ${names[$s]}, N=$n, repetition $((r + 1)): failed" >&2
			fi
		done
	done
done

median() { tr ' ' '\n' | { grep . || true; } | sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
med() { median <<<"${vals["$1 $2"]:-}"; }
ratio() { if [[ -n $1 && -n $2 ]]; then awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; fi; }

echo
echo "# $(date -u +%FT%TZ) $(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), kernel $(uname -r), $(go env GOVERSION); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# medians of $reps repetitions; mean time of one exchange (both columns, both directions), 2 ranks"
printf '| %-44s | %12s | %12s | %8s | %-18s |\n' "figure" "gorma" "peer" "ratio" "target"
printf '|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..46})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..10})" "$(printf -- '-%.0s' {1..20})"
# line LABEL N PEER TARGET: a table row of gorma against PEER at size N; TARGET "<=" or "" (a reference).
line() {
	local g p
	g=$(med "$2" gorma) p=$(med "$2" "$3")
	[[ -n $g && -n $p ]] || return 0
	awk -v l="$1" -v g="$g" -v p="$p" -v t="$4" 'BEGIN {
		printf "| %-44s | %9.3f us | %9.3f us | %7.2fx | %-18s |\n", l, g, p, g / p, t == "" ? "(reference)" : "<= 1.00x " (g <= p ? "ok" : "MISS")}'
}
for n in "${sizes[@]}"; do
	line "N=$n halo exchange vs Open MPI" "$n" ompi "<="
	line "N=$n halo exchange vs MPICH" "$n" mpich "<="
	line "N=$n halo exchange vs packed by hand (gorma)" "$n" manual ""
done

[[ -n $json ]] || exit 0
# The section: a table of every system's medians per size (every run's figure is in the text above).
rows=()
for n in "${sizes[@]}"; do
	vs=() qs=() g=$(med "$n" gorma) text="" ok=true
	for c in "${columns[@]}"; do
		v=$(med "$n" "$c")
		vs+=("${v:-null}")
		if [[ $c != gorma ]]; then
			q=$(ratio "$g" "$v")
			qs+=("${q:-null}")
		fi
		if [[ $c == ompi || $c == mpich ]]; then
			if [[ -z $text ]]; then text="gorma <= 1.00x ${names[$c]}"; else text+=", <= 1.00x ${names[$c]}"; fi
			if [[ -z $g || -z $v ]]; then ok=null; elif [[ $ok == true ]] && awk -v a="$g" -v b="$v" 'BEGIN {exit !(a > b)}'; then ok=false; fi
		fi
	done
	if ((8 * n % 1024)); then cb="$((8 * n)) B"; else cb="$((8 * n / 1024)) KiB"; fi
	rows+=("$(jq -nc --arg l "N=$n ($cb columns)" --argjson v "[$(IFS=,; echo "${vs[*]}")]" \
		--argjson q "[$(IFS=,; echo "${qs[*]}")]" --arg t "$text" --argjson ok "$ok" \
		'{label: $l, values: $v, ratios: $q, target: {text: $t, ok: $ok}}')")
done
col_names=()
for c in "${columns[@]}"; do col_names+=("${names[$c]}"); done
missing=""
for c in ompi mpich; do [[ " ${systems[*]} " == *" $c "* ]] || missing+="${missing:+, }${names[$c]}"; done
intro="\`apps/halobench\` against \`bench/mpi/halobench.c\` (\`scripts/compare-halo.sh\`), 2 ranks: each owns an N x N float64 matrix with a ghost column on each side, and one exchange sends both boundary columns to the neighbour and receives both ghosts, with a column type (\`datatype.Vector[float64](N, 1, N+2)\` and \`runtime.SendrecvType\`; \`MPI_Type_vector\` and \`MPI_Sendrecv\`). \"gorma --manual\" (\`apps/halobench --manual\`) packs the columns by hand into contiguous slices and sends them with \`runtime.Sendrecv\`. Mean time of one exchange, $(IFS=/; echo "${iters[*]}") timed exchanges a run (by size); medians of $reps repetitions, each running every system once per size, in a rotating order; every run is in \`results/compare/halo.txt\`.${missing:+ Not in this run: $missing.}"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
load="{\"start\": [$load0], \"end\": [$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ',')]}"
jq -n --arg intro "$intro" --argjson load "$load" --argjson rows "[$(IFS=,; echo "${rows[*]}")]" \
	--argjson cols "$(printf '%s\n' "${col_names[@]}" | jq -R . | jq -s .)" \
	'{id: "halo", title: "Halo column exchange with a vector datatype, 2 ranks", intro: $intro, load: $load,
	  tables: [{title: "One exchange", key: "matrix", unit: "us", better: "lower", columns: $cols, rows: $rows}]}' >"$tmp"
mkdir -p "$(dirname "$json")"
cp "$tmp" "$json" # whole or not at all: chart collect rejects a cut document
echo "compare-halo: wrote $json" >&2
