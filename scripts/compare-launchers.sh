#!/usr/bin/env bash
# Startup wall time under the process managers sites use: a 4-rank and a 16-rank hello
# under `srun --mpi=pmi2` and `srun --mpi=pmix` (a local Slurm, scripts/slurm-local.sh),
# `mpiexec.hydra` (MPICH's Hydra), `mpirun.openmpi` (Open MPI's) and `golaunch`. gorma's
# ranks (apps/hello) run under every launcher; MPICH's (bench/mpi/hello.c built with
# mpicc.mpich) under the ones that speak PMI-1 or PMI-2 (srun --mpi=pmi2, mpiexec.hydra,
# golaunch); Open MPI's (the same hello.c built with mpicc.openmpi) under the ones that
# serve PMIx (srun --mpi=pmix, mpirun.openmpi, golaunch). Each repetition runs every cell
# once, in turn, so that a change of the machine's speed hits all of them; a cell's figure
# is the median of RUNS repetitions, with the spread (every run) beside it.
#
# A run counts only when it formed one world: each of the N ranks printed "hello from rank
# R of N" and the job exited 0. A cell whose first run does not (a program that cannot
# speak the launcher's PMI comes up as N worlds of 1) is reported as not measured and not
# run again. Launchers and programs that are missing are left out: srun needs root and
# slurm-wlm and munge (the script starts the local Slurm and stops it after, unless
# something else still uses it; --mpi=pmix needs Slurm's pmix plugin), mpiexec.hydra needs
# mpich, mpirun.openmpi and Open MPI's hello need openmpi-bin and libopenmpi-dev.
# mpirun.openmpi runs as `mpirun.openmpi --allow-run-as-root --oversubscribe`.
#
# Prints each cell's runs and median, and the targets: gorma ranks start no slower than
# MPICH's and Open MPI's under the same launcher, golaunch starts MPICH's hello no slower
# than mpiexec.hydra, and Open MPI's hello no slower than mpirun.openmpi. Writes the same,
# with the commit measured, as a section of docs/benchmarks.json to JSON (default
# results/compare/launchers.json), which `chart collect --section` appends
# (compare-all.sh) and `chart merge` puts in place of the report's section of the same id.
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
# The code measured: HEAD, with -dirty when tracked files differ from it ("" outside git).
commit=$(git rev-parse --short HEAD 2>/dev/null || true)
if [[ -n $commit ]] && ! git diff --quiet HEAD --; then commit=$commit-dirty; fi
mkdir -p bin "$(dirname "$json")"
CGO_ENABLED=0 go build -o bin/ ./launcher/cmd/golaunch ./apps/hello
mpicc.mpich -O2 -o bin/hello_mpich bench/mpi/hello.c
ompi=0
if command -v mpicc.openmpi >/dev/null; then
	mpicc.openmpi -O2 -o bin/hello_ompi bench/mpi/hello.c
	ompi=1
else
	echo "compare-launchers: mpicc.openmpi missing (apt-get install openmpi-bin libopenmpi-dev): Open MPI's hello left out" >&2
fi

launchers=(golaunch)
if ((ompi)) && command -v mpirun.openmpi >/dev/null; then launchers=(mpirun "${launchers[@]}"); else
	echo "compare-launchers: mpirun.openmpi missing (apt-get install openmpi-bin): left out" >&2
fi
if command -v mpiexec.hydra >/dev/null; then launchers=(hydra "${launchers[@]}"); else
	echo "compare-launchers: mpiexec.hydra missing (apt-get install mpich): left out" >&2
fi
if [[ $(id -u) == 0 ]] && command -v srun >/dev/null && command -v slurmctld >/dev/null && command -v munged >/dev/null; then
	scripts/slurm-local.sh up --lease $$
	slurm_lease=1
	eval "$(scripts/slurm-local.sh env)"
	if srun --mpi=list 2>&1 | grep -qw pmix; then launchers=(srunpmix "${launchers[@]}"); else
		echo "compare-launchers: srun --mpi=pmix left out (Slurm has no pmix plugin)" >&2
	fi
	launchers=(srun "${launchers[@]}")
else
	echo "compare-launchers: srun left out (needs root, apt-get install slurm-wlm munge)" >&2
fi

# progs LAUNCHER prints the programs that run under a launcher: gorma's everywhere, MPICH's
# under a PMI-1/PMI-2 launcher, Open MPI's under a PMIx one.
progs() {
	local p=(gorma)
	case $1 in
	srun | hydra) p+=(mpich) ;;
	srunpmix | mpirun) ((ompi)) && p+=(ompi) ;;
	golaunch)
		p+=(mpich)
		((ompi)) && p+=(ompi)
		;;
	esac
	echo "${p[@]}"
}
# has LAUNCHER PROG: whether the cell is part of this run.
has() { [[ " ${launchers[*]} " == *" $1 "* && " $(progs "$1") " == *" $2 "* ]]; }

# cmdline LAUNCHER PROG N prints the command of a cell.
cmdline() {
	local bin=bin/hello
	case $2 in
	mpich) bin=bin/hello_mpich ;;
	ompi) bin=bin/hello_ompi ;;
	esac
	case $1 in
	srun) echo "srun -n $3 --mpi=pmi2 $bin" ;;
	srunpmix) echo "srun -n $3 --mpi=pmix $bin" ;;
	hydra) echo "mpiexec.hydra -n $3 $bin" ;;
	mpirun) echo "mpirun.openmpi --allow-run-as-root --oversubscribe -n $3 $bin" ;;
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
			for p in $(progs "$l"); do
				[[ -n ${fail["$l $p $n"]:-} ]] || run_cell "$l" "$p" "$n"
			done
		done
	done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {if (NR) print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
spread() { tr ' ' '\n' | grep . | sort -n | awk 'NR==1 {lo=$1} {hi=$1} END {if (NR) print lo "-" hi}'; }
med() { median <<<"${times["$1"]:-}"; }
lname() {
	case $1 in
	srun) echo "srun --mpi=pmi2" ;;
	srunpmix) echo "srun --mpi=pmix" ;;
	hydra) echo mpiexec.hydra ;;
	mpirun) echo mpirun.openmpi ;;
	*) echo "$1" ;;
	esac
}
# label LAUNCHER PROG N: a cell's command for the page, mpirun.openmpi's flags left to the intro.
label() {
	cmdline "$1" "$2" "$3" | sed 's| --allow-run-as-root --oversubscribe||; s|bin/golaunch|golaunch|; s|bin/hello_mpich|hello_mpich|; s|bin/hello_ompi|hello_ompi|; s|bin/hello$|apps/hello|'
}

# Text report.
for n in "${ns[@]}"; do
	for l in "${launchers[@]}"; do
		for p in $(progs "$l"); do
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
		if has "$l" mpich; then ratio "gorma/MPICH under $(lname "$l"), $n ranks" "$(med "$l gorma $n")" "$(med "$l mpich $n")"; fi
		if has "$l" ompi; then ratio "gorma/Open MPI under $(lname "$l"), $n ranks" "$(med "$l gorma $n")" "$(med "$l ompi $n")"; fi
	done
	if has hydra mpich; then
		ratio "golaunch/mpiexec.hydra of MPICH's hello, $n ranks" "$(med "golaunch mpich $n")" "$(med "hydra mpich $n")"
	fi
	if has mpirun ompi; then
		ratio "golaunch/mpirun.openmpi of Open MPI's hello, $n ranks" "$(med "golaunch ompi $n")" "$(med "mpirun ompi $n")"
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

# table TITLE KEY COLUMN_A COLUMN_B ROWS: a table of rows (ms, lower is better); ROWS is the
# text of its rows, one a line.
table() {
	printf '{"title": %s, "key": %s, "unit": "ms", "better": "lower", "columns": [%s, %s], "rows": [\n%s\n]' \
		"$(jstr "$1")" "$(jstr "$2")" "$(jstr "$3")" "$(jstr "$4")" "$(sed '$!s/$/,/' <<<"$5")"
}

# progrows PROG: the rows of gorma against PROG, a launcher and rank count each.
progrows() {
	for n in "${ns[@]}"; do
		for l in "${launchers[@]}"; do
			if has "$l" "$1"; then row "$(lname "$l"), $n ranks" "$(med "$l gorma $n")" "$(med "$l $1 $n")" && echo; fi
		done
	done
}
# launcherrows PROG PEER: the rows of PROG's hello under golaunch against PEER, by ranks.
launcherrows() {
	for n in "${ns[@]}"; do
		row "$n ranks" "$(med "golaunch $1 $n")" "$(med "$2 $1 $n")" && echo
	done
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
	printf '{\n"id": "launchers",\n"title": "Startup under Slurm, Hydra, mpirun and golaunch",\n"commit": %s,\n' "$(jstr "$commit")"
	printf '"intro": %s,\n' "$(jstr "\`scripts/compare-launchers.sh\`: the wall time of a whole hello job under each launcher: \`srun --mpi=pmi2\` and \`srun --mpi=pmix\` on a one-node Slurm (\`scripts/slurm-local.sh\`), MPICH's \`mpiexec.hydra\`, Open MPI's \`mpirun.openmpi --allow-run-as-root --oversubscribe\` and \`golaunch\`. gorma's ranks (\`apps/hello\`) run under each; MPICH's (\`bench/mpi/hello.c\` built with \`mpicc.mpich\`) under the PMI-1/PMI-2 launchers, Open MPI's (the same program built with \`mpicc.openmpi\`) under the PMIx ones. Medians of $runs repetitions, each running every cell once, in turn; the spread is every run below. A run counts only when its ranks formed one world.")"
	printf '"load": {"start": [%s], "end": [%s]},\n' "$load0" "$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ',')"
	printf '"samples": [\n'
	sep=""
	for n in "${ns[@]}"; do
		for l in "${launchers[@]}"; do
			for p in $(progs "$l"); do
				k="$l $p $n"
				[[ -z ${fail[$k]:-} && -n ${times[$k]:-} ]] || continue
				vals=$(echo "${times[$k]}" | xargs | tr ' ' ',')
				printf '%s{"label": %s, "unit": "ms", "values": [%s], "median": %s}' "$sep" "$(jstr "$(label "$l" "$p" "$n")")" "$vals" "$(med "$k")"
				sep=$',\n'
			done
		done
	done
	printf '\n],\n"tables": [\n'
	table "gorma ranks against MPICH ranks under the same launcher" "launcher, ranks" gorma MPICH "$(progrows mpich)"
	[[ -z $note ]] || printf ', "note": %s' "$(jstr "$note")"
	printf '}'
	if ((ompi)); then
		printf ',\n'
		table "gorma ranks against Open MPI ranks under the same launcher" "launcher, ranks" gorma "Open MPI" "$(progrows ompi)"
		printf '}'
	fi
	if has hydra mpich; then
		printf ',\n'
		table "MPICH's hello: golaunch against mpiexec.hydra" ranks golaunch mpiexec.hydra "$(launcherrows mpich hydra)"
		printf '}'
	fi
	if has mpirun ompi; then
		printf ',\n'
		table "Open MPI's hello: golaunch against mpirun.openmpi" ranks golaunch mpirun.openmpi "$(launcherrows ompi mpirun)"
		printf '}'
	fi
	printf '\n]\n}\n'
} >"$tmp/section.json"
cp "$tmp/section.json" "$json" # whole or not at all: chart collect rejects a cut document
echo "compare-launchers: wrote $json" >&2
