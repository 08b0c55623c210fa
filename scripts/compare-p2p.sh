#!/usr/bin/env bash
# Point-to-point, side by side in one run: apps/pingpong through golaunch against its C twin
# (bench/mpi/pingpong.c) under Open MPI's mpirun, and gorma's tcp transport against the raw
# TCP loopback round trip that verbsperf measures (tcp_pp). The tools alternate within each
# repetition, so a change of the machine's speed state hits all of them; the table gives
# the medians over the repetitions:
#   8 B half round trip, shm (gorma) vs Open MPI         target: gorma no slower
#   1 MiB bandwidth, shm (gorma) vs Open MPI             target: gorma no lower
#   8 B half round trip, tcp (gorma) vs raw TCP RTT/2    target: within 1.2x
# pingpong's latency is OSU's (total time / 2 / round trips, a mean), so the tcp floor is
# tcp_pp's mean too (its avg column: total time / round trips), halved: the same statistic
# on both sides (scheduling hiccups weigh in both). tcp_pp's median, which leaves them out
# of the floor alone, gives a second, stricter row for reference. Needs openmpi-bin and
# libopenmpi-dev (named explicitly: mpicc.openmpi, mpirun.openmpi); MPICH's figures are
# added when mpicc.mpich and mpiexec.mpich are installed.
# The tcp pair runs TCP_REPS times (15 by default), more than the shm figures' REPS: on
# this machine kind the raw floor is bimodal from run to run (two levels about a factor
# of two apart in consecutive runs), so the median of three pairs would be a draw between
# the two levels. The order within a tcp pair alternates.
# The last lines are a Markdown table (figure | gorma | peer | ratio | target) that
# bench/chart collect parses, and the load average at the end (the first line: at the start).
# Usage: scripts/compare-p2p.sh [REPS]   (environment: TCP_REPS, LAT_ITERS, TCP_ITERS, BW_ITERS)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
tcp_reps=${TCP_REPS:-15}
lat_iters=${LAT_ITERS:-100000} # 8 B round trips per shm run (a tenth more as warmup)
tcp_iters=${TCP_ITERS:-20000}  # 8 B round trips per tcp run
bw_iters=${BW_ITERS:-500}      # bandwidth windows below 16 KiB; a fifth of that at 1 MiB
for tool in mpirun.openmpi mpicc.openmpi; do
	command -v "$tool" >/dev/null || { echo "compare-p2p: $tool missing: apt-get install openmpi-bin libopenmpi-dev" >&2; exit 2; }
done
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)" # chart collect reads both load lines
mkdir -p bin
CGO_ENABLED=0 go build -o bin/ ./launcher/cmd/golaunch ./apps/pingpong ./apps/verbsperf
mpicc.openmpi -O2 -o bin/pingpong_mpi bench/mpi/pingpong.c
mpich=0
if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
	mpicc.mpich -O2 -o bin/pingpong_mpich bench/mpi/pingpong.c && mpich=1
fi

gorma() { bin/golaunch -n 2 --timeout 5m --tag-output=false "$@"; }
ompi() { mpirun.openmpi --allow-run-as-root -n 2 bin/pingpong_mpi "$@"; }
mpich_run() { mpiexec.mpich -n 2 bin/pingpong_mpich "$@"; }
row() { awk -v n="$1" '$1 == n {v = $2} END {if (v == "") exit 1; print v}'; } # figure of size n
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# tcp_floor prints tcp_pp's mean and median round trip, halved.
tcp_floor() { bin/verbsperf --provider tcp --test tcp_pp --max-size 8 | awk '/^# raw tcp_pp/ {t=1} t && $1 == 8 {print $4 / 2, $3 / 2; exit}'; }

declare -a gl ol gb ob tl fl fd hl hb
lat=(--test latency --min-size 8 --max-size 8)
for ((i = 0; i < reps; i++)); do
	gl+=("$(gorma bin/pingpong "${lat[@]}" --iters "$lat_iters" | row 8)")
	ol+=("$(ompi "${lat[@]}" --iters "$lat_iters" | row 8)")
	gb+=("$(gorma bin/pingpong --test bw --min-size 1M --max-size 1M --bw-iters "$bw_iters" | row 1048576)")
	ob+=("$(ompi --test bw --min-size 1048576 --max-size 1048576 --bw-iters "$bw_iters" | row 1048576)")
	if ((mpich)); then
		hl+=("$(mpich_run "${lat[@]}" --iters "$lat_iters" | row 8)")
		hb+=("$(mpich_run --test bw --min-size 1048576 --max-size 1048576 --bw-iters "$bw_iters" | row 1048576)")
	fi
	echo "rep $((i + 1)): shm 8B us gorma ${gl[i]} ompi ${ol[i]}; 1MiB MB/s gorma ${gb[i]} ompi ${ob[i]}"
done
tcp_gorma() { tl+=("$(gorma --transport tcp bin/pingpong "${lat[@]}" --iters "$tcp_iters" | row 8)"); }
tcp_raw() {
	read -r fmean fmed < <(tcp_floor)
	fl+=("$fmean")
	fd+=("$fmed")
}
for ((i = 0; i < tcp_reps; i++)); do
	if ((i % 2)); then tcp_raw; tcp_gorma; else tcp_gorma; tcp_raw; fi
	echo "tcp rep $((i + 1)): 8B us gorma ${tl[i]} raw/2 ${fl[i]} (median ${fd[i]})"
done
m() { printf '%s\n' "$@" | median; }
glm=$(m "${gl[@]}") olm=$(m "${ol[@]}") gbm=$(m "${gb[@]}") obm=$(m "${ob[@]}") tlm=$(m "${tl[@]}") flm=$(m "${fl[@]}") fdm=$(m "${fd[@]}")
echo
echo "# $(date -u +%FT%TZ) $(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), kernel $(uname -r), $(go env GOVERSION), $(mpirun.openmpi --version | head -1); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# medians of $reps alternating repetitions ($tcp_reps for the tcp pair)"
printf '| %-38s | %12s | %12s | %8s | %-18s |\n' "figure" "gorma" "peer" "ratio" "target"
printf '|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..40})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..14})" "$(printf -- '-%.0s' {1..10})" "$(printf -- '-%.0s' {1..20})"
awk -v g="$glm" -v p="$olm" 'BEGIN {printf "| %-38s | %9.3f us | %9.3f us | %7.2fx | %-18s |\n", "8 B half RTT, shm vs Open MPI", g, p, g / p, "<= 1.00x " (g <= p ? "ok" : "MISS")}'
awk -v g="$gbm" -v p="$obm" 'BEGIN {printf "| %-38s | %7.0f MB/s | %7.0f MB/s | %7.2fx | %-18s |\n", "1 MiB bandwidth, shm vs Open MPI", g, p, g / p, ">= 1.00x " (g >= p ? "ok" : "MISS")}'
awk -v g="$tlm" -v p="$flm" 'BEGIN {printf "| %-38s | %9.3f us | %9.3f us | %7.2fx | %-18s |\n", "8 B half RTT, tcp vs raw TCP RTT/2", g, p, g / p, "<= 1.20x " (g <= 1.2 * p ? "ok" : "MISS")}'
awk -v g="$tlm" -v p="$fdm" 'BEGIN {printf "| %-38s | %9.3f us | %9.3f us | %7.2fx | %-18s |\n", "8 B half RTT, tcp vs raw median RTT/2", g, p, g / p, "(reference)"}'
if ((mpich)); then
	hlm=$(m "${hl[@]}") hbm=$(m "${hb[@]}")
	awk -v g="$glm" -v p="$hlm" 'BEGIN {printf "| %-38s | %9.3f us | %9.3f us | %7.2fx | %-18s |\n", "8 B half RTT, shm vs MPICH", g, p, g / p, "<= 1.00x " (g <= p ? "ok" : "MISS")}'
	awk -v g="$gbm" -v p="$hbm" 'BEGIN {printf "| %-38s | %7.0f MB/s | %7.0f MB/s | %7.2fx | %-18s |\n", "1 MiB bandwidth, shm vs MPICH", g, p, g / p, ">= 1.00x " (g >= p ? "ok" : "MISS")}'
fi
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
