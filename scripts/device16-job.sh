# The 16-core node's collectives comparison: a job for ../shared/device16/device-run.sh,
# which sources it with $B (the bundle's binaries), "${OMPI[@]}" and "${MPICH[@]}" (the
# peers' launchers) and $OUT (what comes back) set. scripts/device16.sh writes it to
# .devb/job.sh. Each repetition runs every system once, in turn, at each rank count:
# gorma under GORMA_PROCS=auto, 1 and go, Open MPI and MPICH, each inside threadwatch
# (the runnable threads per rank). It writes $OUT/device16.tar.gz: machine.txt (cores,
# model, memory), parcopy.txt (the node's copy floor at 1, half and all cores), and per
# run ar_SYSTEM_pP_REP.json (allreducebench: Allreduce and Barrier) and
# tw_SYSTEM_pP_REP.json (threadwatch). Then, at the same rank count, every system runs
# allreducebench --test COLLS once more, without threadwatch, into cl_SYSTEM_pP_REP.json.
# Environment: REPS=3, NPS="16 8", SIZES (bytes), ITERS=1000, MIN_ITERS=10,
# SIZE_TIME=100ms, RUN_TIMEOUT=120 (seconds per run), COLLS=bcast,reduce,allgather,alltoall
# (empty: no cl_ runs), CL_SIZES=8,1024,8192,65536,1048576,16777216 (bytes: the vector
# for bcast and reduce, each rank's block for allgather and alltoall).
reps=${REPS:-3}
nps=${NPS:-16 8}
sizes=${SIZES:-8,1024,8192,65536,262144,1048576,16777216,67108864}
res=/tmp/device16
rm -rf "$res" && mkdir -p "$res"
{
	echo "cores $(nproc)"
	echo "model $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
	echo "memory_gib $(free -g | awk '/Mem:/ {print $2}')"
	echo "numa_nodes $(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)"
} >"$res/machine.txt"
for n in 1 $(($(nproc) / 2)) $(nproc); do "$B/parcopy" "$n" 16 0.5; done >"$res/parcopy.txt"
args=(--iters "${ITERS:-1000}" --min-iters "${MIN_ITERS:-10}" --size-time "${SIZE_TIME:-100ms}" --sizes "$sizes")
colls=${COLLS-bcast,reduce,allgather,alltoall}
cl_args=(--iters "${ITERS:-1000}" --min-iters "${MIN_ITERS:-10}" --size-time "${SIZE_TIME:-100ms}"
	--sizes "${CL_SIZES:-8,1024,8192,65536,1048576,16777216}" --test "$colls")
tw() { # NAME COMM P REP CMD...: one run inside threadwatch, its JSON under $res
	local name=$1 comm=$2 p=$3 i=$4
	shift 4
	timeout "${RUN_TIMEOUT:-120}" "$B/threadwatch" --comm "$comm" --json="$res/tw_${name}_p${p}_$i.json" -- "$@" \
		--json="$res/ar_${name}_p${p}_$i.json" >/dev/null 2>>"$res/stderr.txt" || echo "device16: $name p=$p rep $i failed" | tee -a "$res/stderr.txt"
}
cl() { # NAME P REP CMD...: one run of the collectives, its JSON under $res
	local name=$1 p=$2 i=$3
	shift 3
	timeout "${RUN_TIMEOUT:-120}" "$@" --json="$res/cl_${name}_p${p}_$i.json" >/dev/null 2>>"$res/stderr.txt" ||
		echo "device16: $name colls p=$p rep $i failed" | tee -a "$res/stderr.txt"
}
for ((i = 1; i <= reps; i++)); do
	for p in $nps; do
		tw gorma allreducebench "$p" "$i" "$B/golaunch" -n "$p" --tag-output=false "$B/allreducebench" "${args[@]}"
		tw ompi allreducebench_ "$p" "$i" "${OMPI[@]}" -n "$p" "$B/allreducebench_ompi" "${args[@]}"
		tw gorma1 allreducebench "$p" "$i" "$B/golaunch" -n "$p" --tag-output=false -x GORMA_PROCS=1 "$B/allreducebench" "${args[@]}"
		tw mpich allreducebench_ "$p" "$i" "${MPICH[@]}" -n "$p" "$B/allreducebench_mpich" "${args[@]}"
		tw gormago allreducebench "$p" "$i" "$B/golaunch" -n "$p" --tag-output=false -x GORMA_PROCS=go "$B/allreducebench" "${args[@]}"
		if [ -n "$colls" ]; then
			cl gorma "$p" "$i" "$B/golaunch" -n "$p" --tag-output=false "$B/allreducebench" "${cl_args[@]}"
			cl ompi "$p" "$i" "${OMPI[@]}" -n "$p" "$B/allreducebench_ompi" "${cl_args[@]}"
			cl gorma1 "$p" "$i" "$B/golaunch" -n "$p" --tag-output=false -x GORMA_PROCS=1 "$B/allreducebench" "${cl_args[@]}"
			cl mpich "$p" "$i" "${MPICH[@]}" -n "$p" "$B/allreducebench_mpich" "${cl_args[@]}"
			cl gormago "$p" "$i" "$B/golaunch" -n "$p" --tag-output=false -x GORMA_PROCS=go "$B/allreducebench" "${cl_args[@]}"
		fi
		echo "device16: rep $i of $reps, p=$p done (load $(cut -d' ' -f1-3 /proc/loadavg))"
	done
done
tar -C "$res" -czf "$OUT/device16.tar.gz" .
echo "device16: wrote $OUT/device16.tar.gz ($(ls "$res" | wc -l) files)"
