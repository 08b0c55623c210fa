#!/usr/bin/env bash
# One job at growing rank counts on this host, oversubscribed: apps/scalebench through
# golaunch against its C twin (bench/mpi/scalebench.c) under Open MPI (mpirun.openmpi
# --oversubscribe) and MPICH (mpiexec.mpich), at each rank count of NS. A job: Init,
# Barriers, Allreduces of 8 B and 1 MiB, a window of WINDOW_SIZE bytes per rank allocated
# and fenced, the peak point (every rank's VmHWM, RssAnon and descriptors, the host's
# /proc/meminfo Shmem at rank 0, all ranks held in a Barrier), Free, Finalize; see `go doc
# ./apps/scalebench`. Once Shmem has stopped falling (at most a minute), the script reads
# it and the clock just before it starts the launcher and passes both (--shm-base-kb,
# --launch-ns), so startup counts from the launch and shared memory is the host's growth;
# it times the job's wall clock from that launch to the launcher's exit. Each repetition
# runs every cell (system, rank count) once, in turn, under flock LOCK; each program runs
# under timeout RUN_TIMEOUT, and a cell that fails or times out is recorded as missing
# (the reason goes to the section's note), never aborting the script. A figure is the
# median over the repetitions. The targets, at the largest rank count: shared memory per
# host and descriptors per rank at most 2x Open MPI's; startup and Allreduce 8 B below
# both MPIs'.
# Prints every cell, then writes each run's JSON to OUT (scale_SYSTEM_nN_REP.json), the
# charts' input (scale_chart_SYSTEM.json: per rank count the medians), and the section of
# docs/benchmarks.json to JSON, which `chart collect --section` appends (compare-all.sh).
# The missing cells are listed in OUT/scale_failed.txt, each one's output kept beside
# (scale_SYSTEM_nN_REP.log). RETRY_FAILED=1 runs only those cells again, keeping the
# others' files (OUT/scale_retried.txt lists the cells run again, and the section says
# so); REPORT_ONLY=1 runs no job: both write the report, the charts' input and the section
# from OUT's files.
# Usage: scripts/compare-scale.sh [REPS]   (environment: REPS=1, NS="8 16 32 64 128 256",
#        SYSTEMS="gorma ompi mpich", ITERS=20, BIG_ITERS=3, WINDOW_SIZE=1M, RUN_TIMEOUT=900
#        seconds a program, JSON=results/compare/scale.json, LOCK=/tmp/gorma-bench.lock,
#        RETRY_FAILED, REPORT_ONLY)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-${REPS:-1}}
read -r -a ns <<<"${NS:-8 16 32 64 128 256}"
read -r -a systems <<<"${SYSTEMS:-gorma ompi mpich}"
iters=${ITERS:-20}
big_iters=${BIG_ITERS:-3}
win=${WINDOW_SIZE:-1M}
run_timeout=${RUN_TIMEOUT:-900}
json=${JSON:-results/compare/scale.json}
out=$(dirname "$json")
lock=${LOCK:-/tmp/gorma-bench.lock}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v jq >/dev/null || { echo "compare-scale: jq missing: apt-get install jq" >&2; exit 2; }
load0=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ',') # the section's load at the start; the end is read when it is written

failed=$out/scale_failed.txt
retried=$out/scale_retried.txt # the cells RETRY_FAILED ran again, and why they had failed
mkdir -p bin "$out"
report_only=${REPORT_ONLY:-0}
retry=${RETRY_FAILED:-0}
have=()
for s in "${systems[@]}"; do
	case $s in
	gorma) have+=(gorma) ;;
	ompi | mpich)
		cc=mpicc.openmpi
		[[ $s == mpich ]] && cc=mpicc.mpich
		if ((report_only)) || { command -v $cc >/dev/null && $cc -O2 -Wall -Wextra -o "bin/scalebench_$s" bench/mpi/scalebench.c; }; then
			have+=("$s")
		fi
		;;
	*) echo "compare-scale: unknown system $s: want gorma, ompi or mpich" >&2; exit 2 ;;
	esac
done
[[ -f $failed ]] || : >"$failed"
cells=() # SYSTEM N REP, the jobs to run
if ((!report_only)); then
	CGO_ENABLED=0 go build -o bin/ ./launcher/cmd/golaunch ./apps/scalebench
	if ((retry)); then
		while read -r s n r why; do
			cells+=("$s $n $r")
			echo "$s $n $r $why" >>"$retried"
		done <"$failed"
		for c in "${cells[@]}"; do read -r s n r <<<"$c"; rm -f "$out/scale_${s}_n${n}_$r.log"; done
	else
		rm -f "$out"/scale_*.json "$out"/scale_*.log "$retried"
		for ((r = 1; r <= reps; r++)); do
			for n in "${ns[@]}"; do
				for s in "${have[@]}"; do cells+=("$s $n $r"); done
			done
		done
	fi
	: >"$failed"
fi

shmem() { awk '/^Shmem:/ {print $2}' /proc/meminfo; }
# settle waits, for at most a minute, until the host's Shmem stops falling (less than
# 1 MiB in a second): a job's shared memory can go on being freed after its launcher
# exits, and the next job's baseline must not count it.
settle() {
	local prev cur i
	prev=$(shmem)
	for ((i = 0; i < 60; i++)); do
		sleep 1
		cur=$(shmem)
		((prev - cur >= 1024)) || return 0
		prev=$cur
	done
}
# cell SYSTEM N REP: one job; its JSON line plus wall_s to OUT/scale_SYSTEM_nN_REP.json, or
# a line in $failed.
cell() {
	local sys=$1 n=$2 r=$3 rc=0 base t0 t1 f=$tmp/$1.$2.$3.json cmd
	case $sys in
	gorma) cmd=(bin/golaunch -n "$n" --startup-timeout 0 --tag-output=false bin/scalebench) ;;
	ompi) cmd=(mpirun.openmpi --allow-run-as-root --oversubscribe -np "$n" bin/scalebench_ompi) ;;
	mpich) cmd=(mpiexec.mpich -n "$n" bin/scalebench_mpich) ;;
	esac
	settle
	base=$(shmem)
	t0=$(date +%s%N)
	timeout --kill-after=10 "$run_timeout" "${cmd[@]}" --iters "$iters" --big-iters "$big_iters" --window-size "$win" \
		--launch-ns "$t0" --shm-base-kb "$base" --json="$f" >"$tmp/$sys.$n.$r.log" 2>&1 || rc=$?
	t1=$(date +%s%N)
	if ((rc == 0)) && jq -e .figures "$f" >/dev/null 2>&1; then
		jq -c --argjson w "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b - a) / 1e9}')" '. + {wall_s: $w}' "$f" >"$out/scale_${sys}_n${n}_$r.json"
	else
		local why="exit $rc" line
		# why: the exit, and the log's first line that names an abort or an error (with the
		# next line up to its first period when the sentence goes on; the end of a long one:
		# a Go error chain ends with its cause).
		line=$(grep -m1 -A1 -E 'Abort\(|exited due to|improperly|[Ee]rror|fatal' "$tmp/$sys.$n.$r.log" |
			awk 'NR == 1 {l = $0; more = $0 ~ /[[:alnum:]]$/} NR == 2 && more {sub(/\..*/, "."); l = l " " $0} END {print l}' |
			tr -s ' \t' ' ' | tr -d '"' || true)
		if ((${#line} > 240)); then
			line=${line: -200}
			line="...${line#*: }"
		fi
		[[ -z $line ]] || why+=": $line"
		((rc == 124 || rc == 137)) && why="timed out after $run_timeout s"
		echo "$sys $n $r $why" >>"$failed"
		cp "$tmp/$sys.$n.$r.log" "$out/scale_${sys}_n${n}_$r.log"
		echo "compare-scale: $sys, $n ranks, repetition $r: $why (output: $out/scale_${sys}_n${n}_$r.log); its end:" >&2
		tail -n 5 "$tmp/$sys.$n.$r.log" >&2 || true
	fi
}
for c in "${cells[@]}"; do
	read -r s n r <<<"$c"
	s0=$SECONDS
	(
		flock 9
		cell "$s" "$n" "$r"
	) 9>"$lock"
	echo "compare-scale: $s, $n ranks, repetition $r: $((SECONDS - s0)) s ($(cut -d' ' -f1-3 /proc/loadavg))" >&2
done

# The run's settings, as its JSON documents state them (REPORT_ONLY reads another run's).
mapfile -t docs < <(compgen -G "$out/scale_*_n*_*.json" || true)
if ((${#docs[@]})); then
	read -r iters big_iters win < <(jq -r '"\(.iters) \(.big_iters) \(.window_bytes / 1048576 * 1000 | round / 1000) MiB"' "${docs[0]}")
	reps=$(printf '%s\n' "${docs[@]}" | sed 's/.*_\([0-9]*\)\.json$/\1/' | sort -n | tail -1)
fi

# figures: ID|LABEL|UNIT|JQ (the value of one run's JSON document)
figures=(
	"wall|job wall|s|.wall_s"
	"startup|startup|s|.figures.startup_s.max"
	"ar8|Allreduce 8 B|us|.figures.allreduce_8_us.max"
	"shm|shm per host|MB|.shmem_kb / 1024"
	"fds|fds per rank||.figures.fds.median"
	"rss|RssAnon per rank|MB|.figures.rss_anon_kb.median / 1024"
)
# label ID: the figure's label.
label() { for f in "${figures[@]}"; do IFS='|' read -r id l _ <<<"$f"; if [[ $id == "$1" ]]; then echo "$l"; fi; done; }
# val ID SYSTEM N: the median over the repetitions, or nothing.
val() {
	local q
	q=$(for f in "${figures[@]}"; do IFS='|' read -r id _ _ q <<<"$f"; if [[ $id == "$1" ]]; then echo "$q"; fi; done)
	for f in "$out/scale_$2_n$3_"*.json; do if [[ -s $f ]]; then jq -r "$q" "$f"; fi; done |
		sort -g | awk '{a[NR]=$1} END {if (NR) printf "%.6g\n", (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'
}
ratio() { if [[ -n $1 && -n $2 ]]; then awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.3g", a / b}'; fi; }
jnum() { if [[ -n $1 ]]; then echo "$1"; else echo null; fi; }
jstr() { printf '"%s"' "$(sed 's/\\/\\\\/g; s/"/\\"/g' <<<"$1")"; }
name() { case $1 in gorma) echo gorma ;; ompi) echo "Open MPI" ;; mpich) echo MPICH ;; esac; }

# Text report: every cell's figures, repetition by repetition.
for n in "${ns[@]}"; do
	for s in "${have[@]}"; do
		for f in "$out/scale_${s}_n${n}_"*.json; do
			[[ -s $f ]] || continue
			jq -r --arg s "$(name "$s")" '"\($s), \(.ranks) ranks: wall \(.wall_s) s, startup \(.figures.startup_s.max) s, Barrier \(.figures.barrier_us.max) us, Allreduce 8 B \(.figures.allreduce_8_us.max) us, 1 MiB \(.figures.allreduce_1m_us.max) us, window allocate \(.figures.win_allocate_us.max) us, free \(.figures.win_free_us.max) us; shm \(.shmem_kb) kB per host; per rank (median, max): VmHWM \(.figures.vmhwm_kb.median) \(.figures.vmhwm_kb.max) kB, RssAnon \(.figures.rss_anon_kb.median) \(.figures.rss_anon_kb.max) kB, fds \(.figures.fds.median) \(.figures.fds.max)"' "$f"
		done
	done
done
while read -r s n r why; do echo "$(name "$s"), $n ranks, repetition $r: missing ($why)"; done <"$failed"

# The charts' input: per system, per rank count the medians of every figure.
for s in "${have[@]}"; do
	{
		printf '{"system": %s, "scale": [' "$(jstr "$(name "$s")")"
		sep=""
		for n in "${ns[@]}"; do
			row=""
			for f in "${figures[@]}"; do
				IFS='|' read -r id _ _ _ <<<"$f"
				v=$(val "$id" "$s" "$n")
				[[ -z $v ]] || row+=", \"$id\": $v"
			done
			[[ -z $row ]] || { printf '%s\n{"ranks": %d%s}' "$sep" "$n" "$row"; sep=","; }
		done
		printf '\n]}\n'
	} >"$out/scale_chart_$s.json"
done

# The section: two tables, a row per rank count; per figure a value per system and
# gorma's ratio to each MPI; the targets on the largest rank count's row.
top=${ns[-1]}
ok() { [[ -n $1 ]] || { echo null; return; }; awk -v q="$1" -v op="$2" -v x="$3" 'BEGIN {r = op == "<=" ? q <= x : q < x; print (r ? "true" : "false")}'; }
# target N ID:OP:X[:PEER]...: the target text and whether every part is met.
target() {
	local n=$1 text="" all=true spec id op x peer q o g prev=""
	shift
	for spec in "$@"; do
		IFS=: read -r id op x peer <<<"$spec"
		g=$(val "$id" gorma "$n")
		q=$(ratio "$g" "$(val "$id" "$peer" "$n")")
		o=$(ok "$q" "$op" "$x")
		if [[ $id == "$prev" ]]; then text+=", $op ${x}x $(name "$peer")"; else text+="${text:+; }$(label "$id") $op ${x}x $(name "$peer")"; fi
		prev=$id
		if [[ $o == null ]]; then all=null; elif [[ $o == false && $all != null ]]; then all=false; fi
	done
	[[ $all != null ]] || text+=": not measured"
	printf ', "target": {"text": %s, "ok": %s}' "$(jstr "$text")" "$all"
}
# table TITLE IDS -- TARGETS: the table of the figures IDS.
table() {
	local title=$1 ids=() cols=() id f label unit n sep="" vs s g v
	shift
	while (($#)) && [[ $1 != -- ]]; do ids+=("$1"); shift; done
	shift
	for id in "${ids[@]}"; do
		for f in "${figures[@]}"; do
			IFS='|' read -r fid label unit _ <<<"$f"
			[[ $fid == "$id" ]] || continue
			cols+=("$(jstr "$label${unit:+ ($unit)}: gorma")" '"Open MPI"' '"MPICH"' '"gorma / Open MPI"' '"gorma / MPICH"')
		done
	done
	printf '{"title": %s, "key": "ranks", "columns": [%s], "rows": [\n' "$(jstr "$title")" "$(IFS=,; echo "${cols[*]}")"
	for n in "${ns[@]}"; do
		vs=()
		for id in "${ids[@]}"; do
			g=$(val "$id" gorma "$n")
			vs+=("$(jnum "$g")")
			for s in ompi mpich; do vs+=("$(jnum "$(val "$id" "$s" "$n")")"); done
			for s in ompi mpich; do vs+=("$(jnum "$(ratio "$g" "$(val "$id" "$s" "$n")")")"); done
		done
		printf '%s{"label": "%d", "values": [%s]' "$sep" "$n" "$(IFS=,; echo "${vs[*]}")"
		if ((n == top)); then target "$n" "$@"; fi
		printf '}'
		sep=$',\n'
	done
	printf '\n]}'
}
missing=$(while read -r s n r why; do printf '%s at %s ranks (%s); ' "$(name "$s")" "$n" "$why"; done <"$failed")
note=""
if [[ -n $missing ]]; then note=" Missing cells: ${missing%; }."; fi
if [[ -s $retried ]]; then
	again=$(while read -r s n r why; do printf '%s at %s ranks (%s); ' "$(name "$s")" "$n" "${why%%:*}"; done <"$retried")
	note+=" Run again after failing: ${again%; }."
fi
{
	printf '{\n"id": "scale",\n"title": "Scale: one job at %s ranks on one host",\n' "$(IFS=,; echo "${ns[*]}" | sed 's/,/, /g')"
	printf '"intro": %s,\n' "$(jstr "\`apps/scalebench\` against \`bench/mpi/scalebench.c\` (\`scripts/compare-scale.sh\`), oversubscribed on $(nproc) cores; per job: Init, $iters Barriers and Allreduces of 8 B, $big_iters of 1 MiB, a window of $win per rank (allocate, fill, Fence), the peak point, Free. Job wall: launch to the launcher's exit; startup: launch to the last rank out of Init; Allreduce: the slowest rank's mean per call; shm: the host's /proc/meminfo Shmem at the peak point (every rank holding a Barrier) less its value before the launch; fds and RssAnon (private memory, shared pages not counted): the median rank at the peak point (VmHWM is in the JSON). Medians of $reps repetition(s), each running every cell once, in turn; a cell that failed or timed out is '-'.$note")"
	if ((!report_only)); then # REPORT_ONLY measures nothing: no load of its own to give
		printf '"load": {"start": [%s], "end": [%s]},\n' "$load0" "$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ',')"
	fi
	printf '"tables": [\n'
	table "Scale: time (lower is better)" wall startup ar8 -- startup:"<":1.00:ompi startup:"<":1.00:mpich ar8:"<":1.00:ompi ar8:"<":1.00:mpich
	printf ',\n'
	table "Scale: memory at the peak point (lower is better)" shm fds rss -- shm:"<=":2.00:ompi fds:"<=":2.00:ompi
	printf '\n]\n}\n'
} >"$tmp/section.json"
jq -e . "$tmp/section.json" >/dev/null || { echo "compare-scale: the section JSON is malformed" >&2; exit 1; }
cp "$tmp/section.json" "$json"
echo "compare-scale: wrote $json and $out/scale_chart_*.json" >&2
