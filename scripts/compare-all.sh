#!/usr/bin/env bash
# The whole comparison with Open MPI and MPICH on this host (make compare): startup at 2
# and 4 ranks (compare-startup.sh), point-to-point (compare-p2p.sh), one-sided
# (compare-rma.sh), Allreduce and Barrier at 2 and 4 ranks (compare-allreduce.sh), plus
# one sweep over sizes of the point-to-point and RMA twins for the charts. Every step's
# output goes to OUT (results/compare); the charts (SVG, drawn by bench/chart) to
# docs/charts; then the section between the compare-all markers of docs/benchmarks.md is
# rewritten with the machine, the load, the tables and the charts. Benchmarks run under
# flock /tmp/gorma-bench.lock (the step scripts take it per repetition themselves).
# Budget: under 15 minutes on the 2-core machine kind; the counts below are chosen for it.
# Usage: scripts/compare-all.sh   (environment: REPS=3, STARTUP_RUNS=9, OUT, DOC)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${REPS:-3}
startup_runs=${STARTUP_RUNS:-9}
out=${OUT:-results/compare}
charts=docs/charts
doc=${DOC:-docs/benchmarks.md}
lock=/tmp/gorma-bench.lock
t0=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date -u '+%Y-%m-%d %H:%M UTC')
mkdir -p bin "$out" "$charts"
rm -f "$out"/*.txt "$out"/*.err "$out"/*.json
CGO_ENABLED=0 go build -o bin/ ./launcher/cmd/golaunch ./apps/...
go build -o bin/chart ./bench/chart
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
step p2p env LAT_ITERS=50000 flock "$lock" scripts/compare-p2p.sh "$reps"
step rma env ITERS=5000 BUSY=100ms scripts/compare-rma.sh "$reps"
sweeps() { # one run of each twin over the sizes, for the charts
	local pp=(--iters 2000 --bw-iters 20 --max-size 4194304) rma=(--test put_lat.lock_all,get_lat.lock_all,put_bw --iters 2000 --bw-iters 20)
	bin/golaunch -n 2 --tag-output=false bin/pingpong "${pp[@]}" --json="$out/pp_gorma.json" >/dev/null
	mpirun.openmpi --allow-run-as-root -n 2 bin/pingpong_mpi "${pp[@]}" >"$out/pp_ompi.txt"
	mpiexec.mpich -n 2 bin/pingpong_mpich "${pp[@]}" >"$out/pp_mpich.txt"
	bin/golaunch -n 2 --tag-output=false bin/rmabench "${rma[@]}" --json="$out/rma_gorma.json" >/dev/null
	mpirun.openmpi --allow-run-as-root -n 2 --mca osc sm bin/rmabench_mpi "${rma[@]}" >"$out/rma_ompi.txt"
	mpiexec.mpich -n 2 bin/rmabench_mpich "${rma[@]}" >"$out/rma_mpich.txt"
}
step sweeps flock "$lock" bash -c "$(declare -f sweeps); out=$out; sweeps"
step allreduce env OUT="$out" CHARTS="$charts" scripts/compare-allreduce.sh "$reps"

chart() { bin/chart svg "$@" || echo "compare-all: chart $*: failed" >&2; }
chart --out "$charts/p2p_latency.svg" --title "Point-to-point half round trip, 2 ranks" --ylabel "latency (us)" --logy \
	--series "gorma=$out/pp_gorma.json@latency:latency_us" --series "Open MPI=$out/pp_ompi.txt@latency:2" --series "MPICH=$out/pp_mpich.txt@latency:2"
chart --out "$charts/p2p_bandwidth.svg" --title "Point-to-point bandwidth (window of 64), 2 ranks" --ylabel "bandwidth (MB/s)" \
	--series "gorma=$out/pp_gorma.json@bandwidth:MB_per_s" --series "Open MPI=$out/pp_ompi.txt@bandwidth:2" --series "MPICH=$out/pp_mpich.txt@bandwidth:2"
chart --out "$charts/rma_put_latency.svg" --title "Put + Flush (LockAll), 2 ranks" --ylabel "latency (us, median)" --logy \
	--series "gorma=$out/rma_gorma.json@put_lat.lock_all:median_us" --series "Open MPI osc/sm=$out/rma_ompi.txt@put_lat.lock_all:3" --series "MPICH=$out/rma_mpich.txt@put_lat.lock_all:3"
chart --out "$charts/rma_put_bandwidth.svg" --title "Put bandwidth (64 Puts + Flush), 2 ranks" --ylabel "bandwidth (MB/s)" \
	--series "gorma=$out/rma_gorma.json@put_bw:MB_per_s" --series "Open MPI osc/sm=$out/rma_ompi.txt@put_bw:3" --series "MPICH=$out/rma_mpich.txt@put_bw:3"

secs=$(($(date +%s) - t0))
load1=$(cut -d' ' -f1-3 /proc/loadavg)
section=$out/section.md
{
	echo "<!-- compare-all: begin (written by scripts/compare-all.sh; edits here are overwritten) -->"
	echo "## Side by side with Open MPI and MPICH (make compare)"
	echo
	echo "Run of $start, $((secs / 60)) min $((secs % 60)) s, $reps repetitions of each comparison."
	echo "Machine: $(nproc) cores \"$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)\", kernel $(uname -r),"
	echo "$(go env GOVERSION), $(mpirun.openmpi --version | head -1 | sed 's/.*(OpenRTE) /Open MPI /') (Debian's openmpi-bin),"
	echo "MPICH $(mpiexec.mpich --version | awk '/Version:/ {print $2; exit}') (Debian's mpich); load average (1, 5, 15 min) $load0 at the start, $load1 at the end."
	echo "Binaries built from the working tree of the moment. Compare within this run only: the machine"
	echo "switches speed states within minutes, so figures of different runs do not compare."
	echo
	echo "Choices that keep \`make compare\` under 15 minutes: startup $startup_runs runs per launcher and"
	echo "rank count; point-to-point 50000 round trips at 8 B; RMA 5000 operations per size and a"
	echo "100 ms busy target; Allreduce 1000 calls up to 16 KiB scaled down above (at least 10), each"
	echo "size capped at about 150 ms of calls (\`--size-time\`: MPICH busy-polls, and with 4 ranks on"
	echo "2 cores one of its calls takes milliseconds), warmup a tenth; gorma's \`--fresh\` and \`--scratch fresh\` runs from"
	echo "64 KiB only; the chart sweeps of the point-to-point and RMA twins one run each with 2000"
	echo "operations per size. MPI runs use each library's defaults (Open MPI: vader, osc/sm forced"
	echo "for RMA as the targets name it; \`--oversubscribe\` at 4 ranks)."
	echo
	echo "### Startup: wall time of a whole hello job"
	echo
	echo '```'
	cat "$out/startup_p2.txt" "$out/startup_p4.txt"
	echo '```'
	echo
	echo "### Point-to-point, 2 ranks (medians of $reps repetitions; ${TCP_REPS:-15} for the tcp pair)"
	echo
	grep '^|' "$out/p2p.txt" || echo "(failed: see $out/p2p.err)"
	echo
	echo "![point-to-point latency](charts/p2p_latency.svg)"
	echo "![point-to-point bandwidth](charts/p2p_bandwidth.svg)"
	echo
	echo "### RMA, 2 ranks (compare-rma.sh: medians of $reps repetitions; the targets)"
	echo
	awk '/^## targets/ {t = 1; next} t && /^\|/' "$out/rma.txt"
	echo
	echo "![Put latency](charts/rma_put_latency.svg)"
	echo "![Put bandwidth](charts/rma_put_bandwidth.svg)"
	echo
	echo "The per-case tables (every size, every system) are in \`$out/rma.txt\` after a run."
	echo
	echo "### Allreduce and Barrier at 2 and 4 ranks"
	echo
	echo "\`apps/allreducebench\` against \`bench/mpi/allreducebench.c\` (OSU osu_allreduce: float64 sum,"
	echo "each call timed, a Barrier after each; avg over the ranks of each rank's mean; bus bandwidth"
	echo "= bytes / avg x 2(p-1)/p). Ratios are gorma / peer: below 1 is better for latency, above 1"
	echo "for bandwidth."
	echo
	sed -n '/^###/,$p' "$out/allreduce.txt" | sed 's/^###/####/'
	echo
	for p in 2 4; do
		echo "![Allreduce latency, $p ranks](charts/allreduce_p${p}_latency.svg)"
		echo "![Allreduce bus bandwidth, $p ranks](charts/allreduce_p${p}_busbw.svg)"
	done
	echo "<!-- compare-all: end -->"
} >"$section"
awk -v f="$section" '
	/^<!-- compare-all: begin/ {while ((getline l < f) > 0) print l; skip = 1; done = 1; next}
	/^<!-- compare-all: end/ {skip = 0; next}
	!skip {print}
	END {if (!done) {print ""; while ((getline l < f) > 0) print l}}' "$doc" >"$doc.tmp" && mv "$doc.tmp" "$doc"
echo "compare-all: done in $((secs / 60)) min $((secs % 60)) s; wrote $doc and $charts/*.svg" >&2
