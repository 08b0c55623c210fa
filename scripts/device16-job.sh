# The 16-core node's collectives comparison: a job for ../shared/device16/device-run.sh,
# which sources it with $B (the bundle's binaries), "${OMPI[@]}" and "${MPICH[@]}" (the
# peers' launchers), $OUT (what comes back) and $PERF (perf) set. scripts/device16.sh
# writes it to .devb/job.sh. Each repetition runs every system once, in turn, at each rank
# count: gorma under GORMA_PROCS=auto, 1 and go, Open MPI and MPICH. With TW=apart (the
# default) each system's first repetition runs once more inside threadwatch (the runnable
# threads per rank), whose timing is not kept: threadwatch reads every thread's /proc
# file every 5 ms, a cost in proportion to the threads, which slows a full host's ranks
# unequally. TW=inside times the runs inside threadwatch; TW=none skips it. Right after gorma at p = PFREE+1, gorma runs once more at
# p = PFREE (one core left free). It writes $OUT/device16.tar.gz: machine.txt (cores,
# model, memory), commit.txt (the commit of the bundle, from the file commit beside the
# job), parcopy.txt (the node's copy floor at 1, half and all cores), and per
# run ar_SYSTEM_pP_REP.json (allreducebench: Allreduce and Barrier) and
# tw_SYSTEM_pP_REP.json (threadwatch). Then, at the same rank count, every system runs
# allreducebench --test COLLS once more, without threadwatch, into cl_SYSTEM_pP_REP.json.
# Last, gorma, Open MPI and MPICH run an Allreduce loop of each PERF_SIZES size at
# p = PERF_P under perf stat -a (the whole machine's context switches and migrations,
# every PERF_INTERVAL ms), in turn within each size: pf_SYSTEM_pP_SIZE_REP.txt (perf's CSV)
# and pf_SYSTEM_pP_SIZE_REP.json (allreducebench). A loop's timed calls last about
# PERF_TIME seconds; its warmup, a tenth of the calls asked for, comes before them.
# Environment: REPS=3, NPS="16 8", SIZES (bytes), ITERS=1000, MIN_ITERS=10,
# SIZE_TIME=100ms, RUN_TIMEOUT=120 (seconds per run),
# COLLS=bcast,reduce,allgather,alltoall,gather,scatter (empty: no cl_ runs),
# CL_SIZES=8,1024,8192,65536,1048576,16777216 (bytes: the vector for bcast and reduce,
# each rank's block for allgather, alltoall, gather and scatter), PFREE=cores-1
# (empty: no such runs), PERF_SIZES=8,1024,8192,65536,1048576,16777216 (empty: no pf_
# runs), PERF_P=cores, PERF_REPS=2, PERF_TIME=2, PERF_INTERVAL=250. Without an executable
# $PERF, the job takes perf from PATH; without either, it makes no pf_ runs.
# VARIANTS="gorma1 gormago" names the extra gorma runs beside gorma, Open MPI and MPICH
# (gorma1: GORMA_PROCS=1; gormago: GORMA_PROCS=go; empty: none).
# EXTRAS=1 (0: none) adds, per repetition and with the systems in turn, the p = 2
# pingpong (8 B latency, and 8 B bandwidth with 64 in flight: ex_pp_SYSTEM_REP.json),
# gorma's 8 B ping-pong under --trace (ex_pptrace_gorma_REP.json, beside ex_pp_gorma),
# rmabench at p = 2 (RMA=0: none), every case but alloc_free.create at 8 B
# (ex_rma_SYSTEM_REP.json) and the sized ones at 1 MiB (ex_rma_SYSTEM_REP_1M.json), gorma
# bound to a core per rank, Open MPI with osc/sm and bound by its default; and scalebench
# at SCALE_P=64 ranks (ex_scale_SYSTEM_REP.json: window Allocate, startup).
# DEADLINE (seconds from the job's start; default none): a run that would start after it is
# skipped, with a line in stderr.txt, so that the results come back within the device's limit.
# PROFILES (TEST:SIZE pairs such as "allreduce:8192 bcast:8192"; default none) writes a CPU profile
# of each rank of gorma at p = PERF_P per pair: prof/TEST_SIZE.RANK.
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
# The commit the bundle was built from (scripts/device16.sh bundle), for chart device16.
if [ -f "$(dirname "${BASH_SOURCE[0]}")/commit" ]; then cp "$(dirname "${BASH_SOURCE[0]}")/commit" "$res/commit.txt"; fi
for n in 1 $(($(nproc) / 2)) $(nproc); do "$B/parcopy" "$n" 16 0.5; done >"$res/parcopy.txt"
args=(--iters "${ITERS:-1000}" --min-iters "${MIN_ITERS:-10}" --size-time "${SIZE_TIME:-100ms}" --sizes "$sizes")
colls=${COLLS-bcast,reduce,allgather,alltoall,gather,scatter}
cl_args=(--iters "${ITERS:-1000}" --min-iters "${MIN_ITERS:-10}" --size-time "${SIZE_TIME:-100ms}"
	--sizes "${CL_SIZES:-8,1024,8192,65536,1048576,16777216}" --test "$colls")
pfree=${PFREE-$(($(nproc) - 1))}
variants=" ${VARIANTS-gorma1 gormago} "
has() { [[ $variants == *" $1 "* ]]; } # NAME: whether VARIANTS names it
late() {                                # NAME: whether DEADLINE has passed (then NAME is skipped)
	[ -n "${DEADLINE:-}" ] && [ "$SECONDS" -ge "$DEADLINE" ] || return 1
	echo "device16: $1 skipped (DEADLINE ${DEADLINE}s passed)" >>"$res/stderr.txt"
}
tw() { # NAME COMM P REP CMD...: one run, its JSON under $res; inside threadwatch as TW says
	local name=$1 comm=$2 p=$3 i=$4
	shift 4
	late "tw_${name}_p${p}_$i" && return
	if [ "${TW:-apart}" = inside ]; then
		timeout "${RUN_TIMEOUT:-120}" "$B/threadwatch" --comm "$comm" --json="$res/tw_${name}_p${p}_$i.json" -- "$@" \
			--json="$res/ar_${name}_p${p}_$i.json" >/dev/null 2>>"$res/stderr.txt" || echo "device16: $name p=$p rep $i failed" | tee -a "$res/stderr.txt"
		return
	fi
	timeout "${RUN_TIMEOUT:-120}" "$@" --json="$res/ar_${name}_p${p}_$i.json" >/dev/null 2>>"$res/stderr.txt" ||
		echo "device16: $name p=$p rep $i failed" | tee -a "$res/stderr.txt"
	if [ "$i" = 1 ] && [ "${TW:-apart}" = apart ]; then
		timeout "${RUN_TIMEOUT:-120}" "$B/threadwatch" --comm "$comm" --json="$res/tw_${name}_p${p}_$i.json" -- "$@" \
			--json=/dev/null >/dev/null 2>>"$res/stderr.txt" || echo "device16: $name p=$p threadwatch failed" | tee -a "$res/stderr.txt"
	fi
}
cl() { # NAME P REP CMD...: one run of the collectives, its JSON under $res
	local name=$1 p=$2 i=$3
	shift 3
	late "cl_${name}_p${p}_$i" && return
	timeout "${RUN_TIMEOUT:-120}" "$@" --json="$res/cl_${name}_p${p}_$i.json" >/dev/null 2>>"$res/stderr.txt" ||
		echo "device16: $name colls p=$p rep $i failed" | tee -a "$res/stderr.txt"
}
for ((i = 1; i <= reps; i++)); do
	for p in $nps; do
		tw gorma allreducebench "$p" "$i" "$B/golaunch" -n "$p" --tag-output=false "$B/allreducebench" "${args[@]}"
		if [ "${pfree:-0}" -ge 1 ] && [ "$p" -eq $((pfree + 1)) ]; then
			tw gorma allreducebench "$pfree" "$i" "$B/golaunch" -n "$pfree" --tag-output=false "$B/allreducebench" "${args[@]}"
		fi
		tw ompi allreducebench_ "$p" "$i" "${OMPI[@]}" -n "$p" "$B/allreducebench_ompi" "${args[@]}"
		has gorma1 && tw gorma1 allreducebench "$p" "$i" "$B/golaunch" -n "$p" --tag-output=false -x GORMA_PROCS=1 "$B/allreducebench" "${args[@]}"
		tw mpich allreducebench_ "$p" "$i" "${MPICH[@]}" -n "$p" "$B/allreducebench_mpich" "${args[@]}"
		has gormago && tw gormago allreducebench "$p" "$i" "$B/golaunch" -n "$p" --tag-output=false -x GORMA_PROCS=go "$B/allreducebench" "${args[@]}"
		if [ -n "$colls" ]; then
			cl gorma "$p" "$i" "$B/golaunch" -n "$p" --tag-output=false "$B/allreducebench" "${cl_args[@]}"
			cl ompi "$p" "$i" "${OMPI[@]}" -n "$p" "$B/allreducebench_ompi" "${cl_args[@]}"
			has gorma1 && cl gorma1 "$p" "$i" "$B/golaunch" -n "$p" --tag-output=false -x GORMA_PROCS=1 "$B/allreducebench" "${cl_args[@]}"
			cl mpich "$p" "$i" "${MPICH[@]}" -n "$p" "$B/allreducebench_mpich" "${cl_args[@]}"
			has gormago && cl gormago "$p" "$i" "$B/golaunch" -n "$p" --tag-output=false -x GORMA_PROCS=go "$B/allreducebench" "${cl_args[@]}"
		fi
		echo "device16: rep $i of $reps, p=$p done (load $(cut -d' ' -f1-3 /proc/loadavg))"
	done
done
perf=${PERF:-}
[ -x "$perf" ] || perf=$(command -v perf || true)
pf_sizes=${PERF_SIZES-8,1024,8192,65536,1048576,16777216}
pf_p=${PERF_P:-$(nproc)}
pf_time=${PERF_TIME:-2}
pf() { # NAME SIZE REP CMD...: one Allreduce loop under perf stat -a, its CSV and JSON under $res
	local f=$res/pf_$1_p${pf_p}_$2_$3 size=$2 n
	shift 3
	late "$(basename "$f")" && return
	# Enough calls for PERF_TIME seconds at 3 us + 0.5 ns per byte: --size-time caps the
	# slower systems, and the warmup stays a tenth of the calls.
	n=$(awk -v t="$pf_time" -v s="$size" 'BEGIN { n = int(t / (3e-6 + s / 2e9)); print (n < 3 ? 3 : n) }')
	timeout "${RUN_TIMEOUT:-120}" "$perf" stat -a -x, -I "${PERF_INTERVAL:-250}" -e context-switches,cpu-migrations,task-clock -o "$f.txt" -- \
		"$@" --test allreduce --sizes "$size" --iters "$n" --min-iters "$n" --size-time "${pf_time}s" --json="$f.json" >/dev/null 2>>"$res/stderr.txt" ||
		echo "device16: $(basename "$f") failed" | tee -a "$res/stderr.txt"
}
if [ -n "$pf_sizes" ] && [ -z "$perf" ]; then
	echo "device16: no perf (\$PERF ${PERF:-unset}, none in PATH): no pf_ runs" | tee -a "$res/stderr.txt"
elif [ -n "$pf_sizes" ]; then
	for ((i = 1; i <= ${PERF_REPS:-2}; i++)); do
		for size in ${pf_sizes//,/ }; do
			pf gorma "$size" "$i" "$B/golaunch" -n "$pf_p" --tag-output=false "$B/allreducebench"
			pf ompi "$size" "$i" "${OMPI[@]}" -n "$pf_p" "$B/allreducebench_ompi"
			pf mpich "$size" "$i" "${MPICH[@]}" -n "$pf_p" "$B/allreducebench_mpich"
		done
		echo "device16: perf rep $i of ${PERF_REPS:-2}, p=$pf_p done (load $(cut -d' ' -f1-3 /proc/loadavg))"
	done
fi
ex() { # FILE CMD...: one extra run, its JSON in $res/FILE
	local f=$1
	shift
	late "$f" && return
	timeout "${RUN_TIMEOUT:-120}" "$@" --json="$res/$f" >/dev/null 2>>"$res/stderr.txt" ||
		echo "device16: $f failed" | tee -a "$res/stderr.txt"
}
if [ "${EXTRAS:-1}" != 0 ]; then
	pp=(--min-size 8 --max-size 8 --iters 20000 --bw-iters 2000)
	sp=${SCALE_P:-64}
	for ((i = 1; i <= reps; i++)); do
		ex "ex_pp_gorma_$i.json" "$B/golaunch" -n 2 --tag-output=false "$B/pingpong" "${pp[@]}"
		ex "ex_pp_ompi_$i.json" "${OMPI[@]}" -n 2 "$B/pingpong_ompi" "${pp[@]}"
		ex "ex_pptrace_gorma_$i.json" "$B/golaunch" -n 2 --tag-output=false --trace "$res/trace_$i.json" "$B/pingpong" "${pp[@]}" --test latency
		ex "ex_pp_mpich_$i.json" "${MPICH[@]}" -n 2 "$B/pingpong_mpich" "${pp[@]}"
		rm -f "$res/trace_$i.json"
		if [ "${RMA:-1}" != 0 ]; then
			# 8 B with every case osc/sm has (it creates no window from user memory: no
			# alloc_free.create); 1 MiB with the cases that take a size.
			for rs in 8:put_lat,get_lat,put_bw,get_bw,acc_lat,fop_lat,cas_lat,busy_get,fence,lock_put,alloc_free.allocate \
				1M:put_lat,get_lat,put_bw,get_bw,acc_lat; do
				f=_${rs%%:*}
				[ "$f" = _8 ] && f=
				ra=(--min-size "${rs%%:*}" --max-size "${rs%%:*}" --test "${rs#*:}")
				ex "ex_rma_gorma_$i$f.json" "$B/golaunch" -n 2 --bind-to core --tag-output=false "$B/rmabench" "${ra[@]}"
				ex "ex_rma_ompi_$i$f.json" "${OMPI[@]}" -n 2 --mca osc sm "$B/rmabench_ompi" "${ra[@]}"
				ex "ex_rma_mpich_$i$f.json" "${MPICH[@]}" -n 2 "$B/rmabench_mpich" "${ra[@]}"
			done
		fi
		ex "ex_scale_gorma_$i.json" "$B/golaunch" -n "$sp" --tag-output=false "$B/scalebench" --launch-ns "$(date +%s%N)"
		ex "ex_scale_ompi_$i.json" "${OMPI[@]}" -n "$sp" "$B/scalebench_ompi" --launch-ns "$(date +%s%N)"
	done
	echo "device16: extras done (load $(cut -d' ' -f1-3 /proc/loadavg))"
fi
for pr in ${PROFILES:-}; do
	late "profile $pr" && continue
	mkdir -p "$res/prof"
	timeout "${RUN_TIMEOUT:-120}" "$B/golaunch" -n "$pf_p" --tag-output=false "$B/allreducebench" --test "${pr%%:*}" --sizes "${pr##*:}" \
		--iters 20000 --min-iters 2000 --size-time 2s --cpuprofile "$res/prof/${pr%%:*}_${pr##*:}" >/dev/null 2>>"$res/stderr.txt" ||
		echo "device16: profile $pr failed" | tee -a "$res/stderr.txt"
done
tar -C "$res" -czf "$OUT/device16.tar.gz" .
echo "device16: wrote $OUT/device16.tar.gz ($(ls "$res" | wc -l) files)"
