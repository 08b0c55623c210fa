# Startup on the 16-core node: a job for ../shared/device16/device-run.sh, which sources it
# with $B (the bundle's binaries), "${OMPI[@]}" (the bundle's Open MPI mpirun) and $OUT
# (what comes back) set. `scripts/device16.sh bundle startup` writes it to .devb/job.sh
# and puts Debian's lstopo (hwloc-nox) beside it in .devb/hwloc, first on PATH here:
# golaunch gives Open MPI's ranks the node's topology from lstopo when it finds one.
#
# Each repetition runs every cell once, in turn, at each rank count: Open MPI's hello
# ($B/hello_ompi, bench/mpi/hello.c built with mpicc.openmpi) under golaunch, under golaunch
# with no lstopo on PATH (where one is), and under "${OMPI[@]}", and gorma's ($B/hello)
# under golaunch. A run counts only when it formed one world: each of the N ranks printed
# "hello from rank R of N" and the job exited 0. A cell whose first run does not is not run
# again, and the document names it.
# Writes $OUT/startup16.json (commit it as docs/startup16.json: chart page renders it as
# the section "Startup on a 16-core node") and $OUT/startup16.log (progress, failures).
# Environment: REPS=7, NPS="4 16", RUN_TIMEOUT=120 (seconds per run).
su_reps=${REPS:-7}
su_nps=${NPS:-4 16}
su_res=/tmp/startup16
rm -rf "$su_res" && mkdir -p "$su_res"
su_log=$OUT/startup16.log
su_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
su_load0=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ',')

# The machine's own lstopo, then the bundle's first on PATH where it carries one.
su_host_lstopo=$(command -v lstopo-no-graphics || command -v lstopo || true)
if [ -x "$su_here/hwloc/lstopo-no-graphics" ]; then
	export PATH=$su_here/hwloc:$PATH LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$su_here/hwloc
fi
su_lstopo=$(command -v lstopo-no-graphics || command -v lstopo || true)
if [ -n "$su_lstopo" ] && ! "$su_lstopo" --of xml 2>>"$su_log" | grep -q '<topology'; then
	echo "startup16: $su_lstopo --of xml gave no topology" | tee -a "$su_log"
	su_lstopo=""
fi
# PATH without the folders that hold an lstopo, for the cell without one.
su_notopo_path=$(tr ':' '\n' <<<"$PATH" | while read -r d; do
	[ -e "$d/lstopo-no-graphics" ] || [ -e "$d/lstopo" ] || echo "$d"
done | paste -sd:)

su_systems=(golaunch_ompi)
[ -n "$su_lstopo" ] && su_systems+=(golaunch_ompi_notopo)
su_systems+=(mpirun_ompi golaunch_gorma)

# su_cmd SYSTEM N: the command of a cell, one word a line.
su_cmd() {
	case $1 in
	golaunch_ompi) printf '%s\n' "$B/golaunch" -n "$2" "$B/hello_ompi" ;;
	golaunch_ompi_notopo) printf '%s\n' env "PATH=$su_notopo_path" "$B/golaunch" -n "$2" "$B/hello_ompi" ;;
	mpirun_ompi) printf '%s\n' "${OMPI[@]}" -n "$2" "$B/hello_ompi" ;;
	golaunch_gorma) printf '%s\n' "$B/golaunch" -n "$2" "$B/hello" ;;
	esac
}

declare -A su_ms su_fail
# su_run SYSTEM N: one timed run, its ms appended to su_ms[...], or su_fail[...] set.
su_run() {
	local key="$1 $2" cmd t0 t1 rc=0 got
	mapfile -t cmd < <(su_cmd "$1" "$2")
	t0=$(date +%s%N)
	timeout --kill-after=10 "${RUN_TIMEOUT:-120}" "${cmd[@]}" >"$su_res/out" 2>"$su_res/err" </dev/null || rc=$?
	t1=$(date +%s%N)
	got=$(grep -c "hello from rank [0-9]* of $2 " "$su_res/out" || true)
	if [ "$rc" != 0 ] || [ "$got" != "$2" ]; then
		su_fail[$key]="$1 -n $2: exit $rc, $got of the $2 ranks saw a world of $2"
		{
			echo "startup16: ${su_fail[$key]}; not measured"
			tail -n 5 "$su_res/err"
		} | tee -a "$su_log"
		return
	fi
	su_ms[$key]+="$(((t1 - t0) / 1000000)) "
}

for ((i = 1; i <= su_reps; i++)); do
	for n in $su_nps; do
		for s in "${su_systems[@]}"; do
			[ -n "${su_fail["$s $n"]:-}" ] || su_run "$s" "$n"
		done
	done
	echo "startup16: rep $i of $su_reps done (load $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$su_log"
done

# su_which LSTOPO: an lstopo and its version, the bundle's named from .devb; "" for none.
su_which() {
	[ -n "$1" ] || return 0
	echo "${1/#$su_here/.devb} ($("$1" --version 2>/dev/null | awk '{print $NF}'))"
}
su_str() { printf '"%s"' "$(sed 's/\\/\\\\/g; s/"/\\"/g' <<<"$1")"; }
{
	printf '{\n"command": "scripts/device16-startup.sh",\n'
	printf '"machine": {"cores": %d, "cpu": %s, "memory_gib": %d, "numa_nodes": %d},\n' "$(nproc)" \
		"$(su_str "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')")" \
		"$(free -g | awk '/Mem:/ {print $2}')" "$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)"
	printf '"openmpi": %s,\n' "$(su_str "$("${OMPI[0]}" --version 2>/dev/null | head -1 | sed 's/.*) //')")"
	printf '"lstopo": %s,\n"host_lstopo": %s,\n"reps": %d,\n' "$(su_str "$(su_which "$su_lstopo")")" "$(su_str "$(su_which "$su_host_lstopo")")" "$su_reps"
	printf '"load": {"start": [%s], "end": [%s]},\n"runs": [' "$su_load0" "$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ',')"
	sep=""
	for n in $su_nps; do
		for s in "${su_systems[@]}"; do
			[ -n "${su_ms["$s $n"]:-}" ] && [ -z "${su_fail["$s $n"]:-}" ] || continue
			vals=${su_ms["$s $n"]% }
			printf '%s\n{"system": "%s", "ranks": %d, "ms": [%s]}' "$sep" "$s" "$n" "${vals// /,}"
			sep=","
		done
	done
	printf '\n],\n"failed": ['
	sep=""
	for k in "${!su_fail[@]}"; do
		printf '%s%s' "$sep" "$(su_str "${su_fail[$k]}")"
		sep=", "
	done
	printf ']\n}\n'
} >"$OUT/startup16.json"
echo "startup16: wrote $OUT/startup16.json" | tee -a "$su_log"
