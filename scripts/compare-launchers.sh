#!/usr/bin/env bash
# Startup wall time under the process managers sites use: a 4-rank and a 16-rank hello
# under `srun --mpi=pmi2` (a local Slurm, scripts/slurm-local.sh), `mpiexec.hydra` (MPICH's
# Hydra) and `golaunch`, gorma's ranks (apps/hello) against MPICH's (bench/mpi/hello.c built
# with mpicc.mpich) under the same launcher. Each repetition runs every cell once, in turn,
# so that a change of the machine's speed hits all of them; a cell's figure is the median of
# RUNS repetitions, with the spread (every run) beside it.
#
# A run counts only when it formed one world: each of the N ranks printed "hello from rank
# R of N" and the job exited 0. A cell whose first run does not (a program that cannot
# speak the launcher's PMI comes up as N worlds of 1) is reported as not measured and not
# run again. Launchers that are missing are left out: srun needs root and slurm-wlm and
# munge (the script starts the local Slurm and stops it after, unless something else
# still uses it), mpiexec.hydra needs mpich.
#
# Prints each cell's runs and median, and the two targets: gorma ranks start no slower than
# MPICH's under the same launcher, and golaunch starts MPICH's hello no slower than
# mpiexec.hydra. Writes the same as a section of docs/benchmarks.json to JSON (default
# results/compare/launchers.json), which `chart collect --section` appends (compare-all.sh).
# Usage: scripts/compare-launchers.sh [RUNS]   (environment: NS="4 16", JSON, RUN_TIMEOUT=120)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
read -r -a ns <<<"${NS:-4 16}"
json=${JSON:-results/compare/launchers.json}
run_timeout=${RUN_TIMEOUT:-120}
tmp=$(mktemp -d)
slurm_lease=0
cleanup() {
	if ((slurm_lease)); then scripts/slurm-local.sh down --lease $$ || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

command -v mpicc.mpich >/dev/null || { echo "compare-launchers: mpicc.mpich missing: apt-get install mpich libmpich-dev" >&2; exit 2; }
load0=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ',') # the section's load at the start; the end is read when it is written
mkdir -p bin "$(dirname "$json")"
CGO_ENABLED=0 go build -o bin/ ./launcher/cmd/golaunch ./apps/hello
mpicc.mpich -O2 -o bin/hello_mpich bench/mpi/hello.c

launchers=(golaunch)
if command -v mpiexec.hydra >/dev/null; then launchers=(hydra "${launchers[@]}"); else
	echo "compare-launchers: mpiexec.hydra missing (apt-get install mpich): left out" >&2
fi
if [[ $(id -u) == 0 ]] && command -v srun >/dev/null && command -v slurmctld >/dev/null && command -v munged >/dev/null; then
	scripts/slurm-local.sh up --lease $$
	slurm_lease=1
	eval "$(scripts/slurm-local.sh env)"
	launchers=(srun "${launchers[@]}")
else
	echo "compare-launchers: srun left out (needs root, apt-get install slurm-wlm munge)" >&2
fi
progs=(gorma mpich)

# cmdline LAUNCHER PROG N prints the command of a cell.
cmdline() {
	local bin=bin/hello
	[[ $2 == mpich ]] && bin=bin/hello_mpich
	case $1 in
	srun) echo "srun -n $3 --mpi=pmi2 $bin" ;;
	hydra) echo "mpiexec.hydra -n $3 $bin" ;;
	golaunch) echo "bin/golaunch -n $3 $bin" ;;
	esac
}

declare -A times fail
# run_cell LAUNCHER PROG N: one timed run, appended to times[...], or fail[...] set.
run_cell() {
	local key="$1 $2 $3" cmd t0 t1 rc=0 got
	read -r -a cmd <<<"$(cmdline "$1" "$2" "$3")"
	t0=$(date +%s%N)
	timeout --kill-after=10 "$run_timeout" "${cmd[@]}" >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
	t1=$(date +%s%N)
	got=$(grep -c "hello from rank [0-9]* of $3 " "$tmp/out" || true)
	if ((rc != 0)) || [[ $got != "$3" ]]; then
		fail[$key]="exit $rc, $got of the $3 ranks saw a world of $3"
		echo "compare-launchers: ${cmd[*]}: ${fail[$key]}; not measured" >&2
		tail -n 3 "$tmp/err" >&2 || true
		return
	fi
	times[$key]+="$(((t1 - t0) / 1000000)) "
}

for ((i = 0; i < runs; i++)); do
	for n in "${ns[@]}"; do
		for l in "${launchers[@]}"; do
			for p in "${progs[@]}"; do
				[[ -n ${fail["$l $p $n"]:-} ]] || run_cell "$l" "$p" "$n"
			done
		done
	done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {if (NR) print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
spread() { tr ' ' '\n' | grep . | sort -n | awk 'NR==1 {lo=$1} {hi=$1} END {if (NR) print lo "-" hi}'; }
med() { median <<<"${times["$1"]:-}"; }
lname() { case $1 in srun) echo "srun --mpi=pmi2" ;; hydra) echo mpiexec.hydra ;; *) echo "$1" ;; esac; }
label() { echo "$(cmdline "$1" "$2" "$3" | sed 's|bin/golaunch|golaunch|; s|bin/hello_mpich|hello_mpich|; s|bin/hello|apps/hello|')"; }

# Text report.
for n in "${ns[@]}"; do
	for l in "${launchers[@]}"; do
		for p in "${progs[@]}"; do
			k="$l $p $n"
			if [[ -n ${fail[$k]:-} ]]; then
				echo "$(label "$l" "$p" "$n"): not measured (${fail[$k]})"
			else
				echo "$(label "$l" "$p" "$n"): ${times[$k]}ms; median $(med "$k") ms, spread $(spread <<<"${times[$k]}") ms"
			fi
		done
	done
done

# ratio WHAT A B prints the ratio A/B of two medians against the target A <= B.
ratio() {
	[[ -n $2 && -n $3 ]] || return 0
	awk -v l="$1" -v a="$2" -v b="$3" 'BEGIN {printf "ratio %s: %.2f (target <= 1.00x %s)\n", l, a / b, (a <= b ? "ok" : "MISS")}'
}
for n in "${ns[@]}"; do
	for l in "${launchers[@]}"; do
		ratio "gorma/MPICH under $(lname "$l"), $n ranks" "$(med "$l gorma $n")" "$(med "$l mpich $n")"
	done
	if [[ " ${launchers[*]} " == *" hydra "* ]]; then
		ratio "golaunch/mpiexec.hydra of MPICH's hello, $n ranks" "$(med "golaunch mpich $n")" "$(med "hydra mpich $n")"
	fi
done

# JSON helpers: a number or null; a ratio with 2 decimals; a target's ok.
jnum() { if [[ -n $1 ]]; then echo "$1"; else echo null; fi; }
jratio() { if [[ -n $1 && -n $2 ]]; then awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; else echo null; fi; }
jok() { if [[ -n $1 && -n $2 ]]; then awk -v a="$1" -v b="$2" 'BEGIN {print (a <= b ? "true" : "false")}'; else echo null; fi; }
jstr() { printf '"%s"' "$(sed 's/\\/\\\\/g; s/"/\\"/g' <<<"$1")"; }

# row LABEL A B: a table row of two medians (ms), the ratio A/B and the target A <= B.
row() {
	local r
	r=$(jratio "$2" "$3")
	printf '{"label": %s, "values": [%s, %s], "ratios": [%s], "target": {"text": "<= 1.00x", "ok": %s}}' \
		"$(jstr "$1")" "$(jnum "$2")" "$(jnum "$3")" "$r" "$(jok "$2" "$3")"
}

notes=()
for k in "${!fail[@]}"; do
	read -r l p n <<<"$k"
	notes+=("$(label "$l" "$p" "$n"): ${fail[$k]}")
done
note=""
if ((${#notes[@]})); then
	note="Not measured: $(printf '%s\n' "${notes[@]}" | sort | paste -sd ';' | sed 's/;/; /g')."
fi

{
	printf '{\n"id": "launchers",\n"title": "Startup under Slurm, Hydra and golaunch",\n'
	printf '"intro": %s,\n' "$(jstr "\`scripts/compare-launchers.sh\`: the wall time of a whole hello job, gorma's ranks (\`apps/hello\`) against MPICH's (\`bench/mpi/hello.c\` built with \`mpicc.mpich\`) under each launcher: \`srun --mpi=pmi2\` on a one-node Slurm (\`scripts/slurm-local.sh\`), MPICH's \`mpiexec.hydra\` and \`golaunch\`. Medians of $runs repetitions, each running every cell once, in turn; the spread is every run below. A run counts only when its ranks formed one world.")"
	printf '"load": {"start": [%s], "end": [%s]},\n' "$load0" "$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ',')"
	printf '"samples": [\n'
	sep=""
	for n in "${ns[@]}"; do
		for l in "${launchers[@]}"; do
			for p in "${progs[@]}"; do
				k="$l $p $n"
				[[ -z ${fail[$k]:-} && -n ${times[$k]:-} ]] || continue
				vals=$(echo "${times[$k]}" | xargs | tr ' ' ',')
				printf '%s{"label": %s, "unit": "ms", "values": [%s], "median": %s}' "$sep" "$(jstr "$(label "$l" "$p" "$n")")" "$vals" "$(med "$k")"
				sep=$',\n'
			done
		done
	done
	printf '\n],\n"tables": [\n'
	printf '{"title": "gorma ranks against MPICH ranks under the same launcher", "key": "launcher, ranks", "unit": "ms", "better": "lower", "columns": ["gorma", "MPICH"], "rows": [\n'
	sep=""
	for n in "${ns[@]}"; do
		for l in "${launchers[@]}"; do
			printf '%s' "$sep"
			row "$(lname "$l"), $n ranks" "$(med "$l gorma $n")" "$(med "$l mpich $n")"
			sep=$',\n'
		done
	done
	printf '\n]'
	[[ -z $note ]] || printf ', "note": %s' "$(jstr "$note")"
	printf '}'
	if [[ " ${launchers[*]} " == *" hydra "* ]]; then
		printf ',\n{"title": "MPICH'"'"'s hello: golaunch against mpiexec.hydra", "key": "ranks", "unit": "ms", "better": "lower", "columns": ["golaunch", "mpiexec.hydra"], "rows": [\n'
		sep=""
		for n in "${ns[@]}"; do
			printf '%s' "$sep"
			row "$n ranks" "$(med "golaunch mpich $n")" "$(med "hydra mpich $n")"
			sep=$',\n'
		done
		printf '\n]}'
	fi
	printf '\n]\n}\n'
} >"$tmp/section.json"
cp "$tmp/section.json" "$json" # whole or not at all: chart collect rejects a cut document
echo "compare-launchers: wrote $json" >&2
