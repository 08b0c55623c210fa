#!/usr/bin/env bash
# The whole comparison with Open MPI and MPICH on this host (make compare): startup at 2
# and 4 ranks (compare-startup.sh), startup under srun, mpiexec.hydra and golaunch at 4 and
# 16 ranks when srun or mpiexec.hydra is installed (compare-launchers.sh, a section JSON
# that `chart collect --section` appends), point-to-point (compare-p2p.sh), one-sided
# (compare-rma.sh), Allreduce and Barrier at 2 and 4 ranks (compare-allreduce.sh),
# net.Conn over gorma's sockets against Unix and TCP sockets and shmipc-go
# (compare-sockets.sh, a section JSON too), a halo column exchange with a vector datatype
# at 2 ranks (compare-halo.sh, a section JSON too), a 16 MiB Iallreduce beside a
# computation at 2 ranks (compare-overlap.sh, a section JSON too), one job at 8 to 256 ranks on this host
# (compare-scale.sh, SCALE_REPS repetitions; a section JSON too), plus one sweep over sizes
# of the point-to-point and RMA twins for the charts. Every step's
# output goes to OUT (results/compare), with the run's machine, times and commit in OUT/run.env,
# and each step records the load average at its start and end. Then `chart collect`
# parses the step outputs and the charts' points (OUT/chart_*.json) into
# docs/benchmarks.json, and `chart page` renders docs/benchmarks.md and draws
# docs/charts/*.svg from it: the page is never edited by hand. RENDER_ONLY=1 skips the measurements and
# renders the last run's outputs in OUT again (after a change of the template or of a
# parser). Benchmarks run under flock /tmp/gorma-bench.lock (the step scripts take it
# per repetition themselves).
# Budget: under 15 minutes on the 2-core machine kind without the scale step. The scale
# step is the longest (MPICH's 256-rank job above all; each cell times out at
# RUN_TIMEOUT): the run prints what each step took ("compare-all: scale took N s").
# Usage: scripts/compare-all.sh   (environment: REPS=3, STARTUP_RUNS=9, LAUNCHER_RUNS=5,
#        SCALE_REPS=1, SCALE_NS="8 16 32 64 128 256", OUT, RENDER_ONLY)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-3}
startup_runs=${STARTUP_RUNS:-9}
launcher_runs=${LAUNCHER_RUNS:-5}
out=${OUT:-results/compare}
charts=docs/charts
json=docs/benchmarks.json
doc=docs/benchmarks.md
lock=/tmp/gorma-bench.lock
mkdir -p bin "$out" "$charts"
go build -o bin/chart ./bench/chart

# measure runs the steps and writes OUT/run.env.
measure() {
	t0=$(date +%s)
	load0=$(cut -d' ' -f1-3 /proc/loadavg)
	start=$(date -u +%FT%TZ)
	# The code measured: HEAD, with -dirty when tracked files differ from it ("" outside git).
	commit=$(git rev-parse --short HEAD 2>/dev/null || true)
	if [[ -n $commit ]] && ! git diff --quiet HEAD --; then commit=$commit-dirty; fi
	rm -f "$out"/*.txt "$out"/*.err "$out"/*.json "$out"/run.env
	CGO_ENABLED=0 go build -o bin/ ./launcher/cmd/golaunch ./apps/...
	mpicc.openmpi -O2 -Wall -o bin/pingpong_mpi bench/mpi/pingpong.c
	mpicc.openmpi -O2 -Wall -o bin/rmabench_mpi bench/mpi/rmabench.c
	mpicc.mpich -O2 -Wall -o bin/pingpong_mpich bench/mpi/pingpong.c
	mpicc.mpich -O2 -Wall -o bin/rmabench_mpich bench/mpi/rmabench.c

	# step NAME CMD...: run a step, its stdout to OUT/NAME.txt; a failed step is reported, not fatal
	step() {
		local name=$1 s=$SECONDS
		shift
		echo "compare-all: $name ($(cut -d' ' -f1-3 /proc/loadavg))" >&2
		"$@" >"$out/$name.txt" 2> >(tee "$out/$name.err" >&2) || echo "compare-all: step $name failed (exit $?)" >&2
		echo "compare-all: $name took $((SECONDS - s)) s" >&2
	}
	step startup_p2 flock "$lock" scripts/compare-startup.sh 2 "$startup_runs"
	step startup_p4 flock "$lock" scripts/compare-startup.sh 4 "$startup_runs"
	if command -v srun >/dev/null || command -v mpiexec.hydra >/dev/null; then
		step launchers env JSON="$out/launchers.json" flock "$lock" scripts/compare-launchers.sh "$launcher_runs"
	fi
	step p2p env LAT_ITERS=50000 flock "$lock" scripts/compare-p2p.sh "$reps"
	step rma env ITERS=5000 BUSY=100ms scripts/compare-rma.sh "$reps"
	sweeps() { # one run of each twin over the sizes, for the charts
		local pp=(--iters 2000 --bw-iters 20 --max-size 4194304) rma=(--test put_lat.lock_all,get_lat.lock_all,put_bw --iters 2000 --bw-iters 20)
		bin/golaunch -n 2 --tag-output=false bin/pingpong "${pp[@]}" --json="$out/pp_gorma.json" >/dev/null
		mpirun.openmpi --allow-run-as-root -n 2 bin/pingpong_mpi "${pp[@]}" >"$out/pp_ompi.txt"
		mpiexec.mpich -n 2 bin/pingpong_mpich "${pp[@]}" >"$out/pp_mpich.txt"
		bin/golaunch -n 2 --bind-to core --tag-output=false bin/rmabench "${rma[@]}" --json="$out/rma_gorma.json" >/dev/null
		mpirun.openmpi --allow-run-as-root -n 2 --mca osc sm bin/rmabench_mpi "${rma[@]}" >"$out/rma_ompi.txt"
		mpiexec.mpich -n 2 bin/rmabench_mpich "${rma[@]}" >"$out/rma_mpich.txt"
	}
	step sweeps flock "$lock" bash -c "$(declare -f sweeps); out=$out; sweeps"
	step allreduce env OUT="$out" CHARTS="$charts" scripts/compare-allreduce.sh "$reps"
	step sockets env JSON="$out/sockets.json" scripts/compare-sockets.sh "$reps"
	step halo env JSON="$out/halo.json" scripts/compare-halo.sh "$reps"
	step overlap env JSON="$out/overlap.json" scripts/compare-overlap.sh "$reps"
	step scale env JSON="$out/scale.json" NS="${SCALE_NS:-8 16 32 64 128 256}" scripts/compare-scale.sh "${SCALE_REPS:-1}"

	secs=$(($(date +%s) - t0))
	{
		printf 'start=%q\nsecs=%q\nreps=%q\nstartup_runs=%q\nload0=%q\nload1=%q\ncommit=%q\n' "$start" "$secs" "$reps" "$startup_runs" "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)" "$commit"
		printf 'cpu=%q\nkernel=%q\ngover=%q\n' "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)" "$(uname -r)" "$(go env GOVERSION)"
		printf 'ompi=%q\nmpich=%q\ntcp_reps=%q\n' "$(mpirun.openmpi --version | head -1 | sed 's/.*(OpenRTE) //')" \
			"$(mpiexec.mpich --version | awk '/Version:/ {print $2; exit}')" "${TCP_REPS:-15}"
	} >"$out/run.env"
}

if [[ ${RENDER_ONLY:-0} != 1 ]]; then measure; fi
[[ -f $out/run.env ]] || { echo "compare-all: no $out/run.env: run once without RENDER_ONLY=1" >&2; exit 2; }
# shellcheck source=/dev/null
source "$out/run.env"

# The sweeps' points (medians over one run each), for chart collect --chart; chart page
# draws every chart, the sockets and scale ones from their sections' tables.
sweep="one sweep of each program, 2000 operations a size, a run apart from the tables"
chart() { bin/chart svg --source "$sweep" "$@" || echo "compare-all: chart $*: failed" >&2; }
chart --json "$out/chart_p2p_latency.json" --title "Point-to-point half round trip, 2 ranks" --ylabel "latency (us)" --logy \
	--series "gorma=$out/pp_gorma.json@latency:latency_us" --series "Open MPI=$out/pp_ompi.txt@latency:2" --series "MPICH=$out/pp_mpich.txt@latency:2"
chart --json "$out/chart_p2p_bandwidth.json" --title "Point-to-point bandwidth (window of 64), 2 ranks" --ylabel "bandwidth (MB/s)" \
	--series "gorma=$out/pp_gorma.json@bandwidth:MB_per_s" --series "Open MPI=$out/pp_ompi.txt@bandwidth:2" --series "MPICH=$out/pp_mpich.txt@bandwidth:2"
chart --json "$out/chart_rma_put_latency.json" --title "Put + Flush (LockAll), 2 ranks" --ylabel "latency (us, median)" --logy \
	--series "gorma=$out/rma_gorma.json@put_lat.lock_all:median_us" --series "Open MPI osc/sm=$out/rma_ompi.txt@put_lat.lock_all:3" --series "MPICH=$out/rma_mpich.txt@put_lat.lock_all:3"
chart --json "$out/chart_rma_put_bandwidth.json" --title "Put bandwidth (64 Puts + Flush), 2 ranks" --ylabel "bandwidth (MB/s)" \
	--series "gorma=$out/rma_gorma.json@put_bw:MB_per_s" --series "Open MPI osc/sm=$out/rma_ompi.txt@put_bw:3" --series "MPICH=$out/rma_mpich.txt@put_bw:3"

intro() { printf -- '--intro\0%s=%s\0' "$1" "$2"; }
mapfile -d '' intros < <(
	intro startup "\`golaunch -n N apps/hello\` against \`mpirun.openmpi\` and \`mpiexec.mpich -n N\` of \`bench/mpi/hello.c\` (\`scripts/compare-startup.sh\`): the wall time of the whole job, $startup_runs runs per launcher and rank count, in turn."
	intro p2p "\`apps/pingpong\` against \`bench/mpi/pingpong.c\` (\`scripts/compare-p2p.sh\`): over shm the 8 B half round trip (50000 round trips a run) and the 1 MiB bandwidth, medians of $reps repetitions; gorma's tcp against the raw TCP loopback round trip (verbsperf's \`tcp_pp\`), halved, in $tcp_reps alternated pairs. The charts are one sweep of each program, 2000 operations a size."
	intro rma "\`apps/rmabench\` against \`bench/mpi/rmabench.c\` (\`scripts/compare-rma.sh\`): 5000 operations a size, a 100 ms busy target, medians of $reps repetitions, gorma's ranks bound to a core each as mpirun binds its twin's; latency is the median of a run's samples. ompi-sm is Open MPI with \`--mca osc sm\`, ompi its default one-sided component (it crashes in MPI_Compare_and_swap, and osc/sm cannot MPI_Win_create: those cells are empty). Every size of every case is in \`results/compare/rma.txt\` after a run; the charts are one sweep, 2000 operations a size."
	intro allreduce "\`apps/allreducebench\` against \`bench/mpi/allreducebench.c\` (\`scripts/compare-allreduce.sh\`): float64 sum, 1000 calls a size up to 16 KiB and fewer above (at least 10), each size capped at about 150 ms of calls (\`--size-time\`: MPICH busy-polls, and with 4 ranks on 2 cores one of its calls can take milliseconds); medians of $reps repetitions. gorma's runs with \`--fresh\` (new buffers per call) and \`--scratch fresh\` (scratch mapped, registered and released per call, as the MPIs do), from 64 KiB, are in \`results/compare/allreduce.txt\` after a run."
)
extra=()
for f in launchers sockets halo overlap scale; do
	if [[ -s $out/$f.json ]]; then extra+=(--section "$out/$f.json"); fi
done
bin/chart collect --dir "$out" --out "$json" --commit "${commit:-}" "${intros[@]}" "${extra[@]}" \
	--cpu "$cpu" --kernel "$kernel" --go "$gover" --openmpi "$ompi" --mpich "$mpich" \
	--start "$start" --duration "$secs" --reps "$reps" --load-start "$load0" --load-end "$load1" \
	--chart "p2p:charts/p2p_latency.svg:point-to-point latency" --chart "p2p:charts/p2p_bandwidth.svg:point-to-point bandwidth" \
	--chart "rma:charts/rma_put_latency.svg:Put latency" --chart "rma:charts/rma_put_bandwidth.svg:Put bandwidth" \
	--chart "allreduce:charts/allreduce_p2_latency.svg:Allreduce latency, 2 ranks" --chart "allreduce:charts/allreduce_p2_busbw.svg:Allreduce bus bandwidth, 2 ranks" \
	--chart "allreduce:charts/allreduce_p4_latency.svg:Allreduce latency, 4 ranks" --chart "allreduce:charts/allreduce_p4_busbw.svg:Allreduce bus bandwidth, 4 ranks"
bin/chart page --in "$json" --out "$doc" # and every chart, into docs/charts
echo "compare-all: done in $((secs / 60)) min $((secs % 60)) s; wrote $json, $doc and $charts/*.svg" >&2
