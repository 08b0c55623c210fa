#!/usr/bin/env bash
# Allreduce and Barrier, side by side in one run: apps/allreducebench through golaunch
# against its C twin (bench/mpi/allreducebench.c) under Open MPI (mpirun.openmpi) and
# MPICH (mpiexec.mpich, when installed), at each rank count of NPS on this host, plus
# gorma with --fresh (new user buffers per call) and with --scratch fresh (scratch mapped,
# faulted in, registered and released per call, as the MPIs do: what the arena buys)
# from 64 KiB. Each repetition runs every
# configuration once, under flock /tmp/gorma-bench.lock, so a change of the machine's
# speed state hits all of them; every run writes its JSON to OUT. Then bench/chart
# prints the medians over the repetitions (Markdown) and draws docs/charts/allreduce_*.svg,
# their points to OUT/chart_allreduce_*.json (chart collect --chart). The first and the
# last line of the output give the load average at the start and at the end.
# Sizes: powers of two from 8 B to 64 MiB plus 24 MiB (the target compares 64 MiB with
# 24 MiB). --size-time caps each size's measured calls (MPICH busy-polls: with 4 ranks on
# 2 cores one call can take milliseconds).
# Usage: scripts/compare-allreduce.sh [REPS]
#   (environment: NPS="2 4", ITERS=1000, MIN_ITERS=10, SIZE_TIME=150ms, OUT=results/compare,
#    CHARTS=docs/charts)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
nps=${NPS:-2 4}
iters=${ITERS:-1000}
min_iters=${MIN_ITERS:-10}
size_time=${SIZE_TIME:-150ms}
out=${OUT:-results/compare}
charts=${CHARTS:-docs/charts}
for tool in mpirun.openmpi mpicc.openmpi; do
	command -v "$tool" >/dev/null || { echo "compare-allreduce: $tool missing: apt-get install openmpi-bin libopenmpi-dev" >&2; exit 2; }
done
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)" # chart collect reads both load lines
mkdir -p bin "$out" "$charts"
CGO_ENABLED=0 go build -o bin/ ./launcher/cmd/golaunch ./apps/allreducebench
go build -o bin/chart ./bench/chart
mpicc.openmpi -O2 -Wall -Wextra -o bin/allreducebench_ompi bench/mpi/allreducebench.c
mpich=0
if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
	mpicc.mpich -O2 -Wall -Wextra -o bin/allreducebench_mpich bench/mpi/allreducebench.c && mpich=1
else
	echo "compare-allreduce: MPICH not installed (mpicc.mpich, mpiexec.mpich): skipping it" >&2
fi

sizes=8
for ((s = 16; s <= 64 << 20; s *= 2)); do
	sizes+=",$s"
	((s == 16 << 20)) && sizes+=",$((24 << 20))"
done
fresh_sizes=${sizes#*,32768,}
args=(--iters "$iters" --min-iters "$min_iters" --size-time "$size_time")
fail() { echo "compare-allreduce: rep $i: the $1 run failed" >&2; }
rm -f "$out"/ar_*.json
for ((i = 1; i <= reps; i++)); do
	for p in $nps; do
		(
			flock 9
			bin/golaunch -n "$p" --timeout 10m --tag-output=false bin/allreducebench "${args[@]}" --sizes "$sizes" --json="$out/ar_gorma_p${p}_$i.json" >/dev/null || fail "gorma p=$p"
			mpirun.openmpi --allow-run-as-root --oversubscribe -n "$p" bin/allreducebench_ompi "${args[@]}" --sizes "$sizes" --json="$out/ar_ompi_p${p}_$i.json" >/dev/null || fail "Open MPI p=$p"
			if ((mpich)); then
				timeout 10m mpiexec.mpich -n "$p" bin/allreducebench_mpich "${args[@]}" --sizes "$sizes" --json="$out/ar_mpich_p${p}_$i.json" >/dev/null || fail "MPICH p=$p"
			fi
			bin/golaunch -n "$p" --timeout 10m --tag-output=false bin/allreducebench "${args[@]}" --test allreduce --fresh --sizes "$fresh_sizes" --json="$out/ar_gormafresh_p${p}_$i.json" >/dev/null || fail "gorma --fresh p=$p"
			bin/golaunch -n "$p" --timeout 10m --tag-output=false bin/allreducebench "${args[@]}" --test allreduce --scratch fresh --sizes "$fresh_sizes" --json="$out/ar_gormascratch_p${p}_$i.json" >/dev/null || fail "gorma --scratch fresh p=$p"
		) 9>/tmp/gorma-bench.lock
		echo "compare-allreduce: rep $i of $reps, p=$p done ($(cut -d' ' -f1-3 /proc/loadavg))" >&2
	done
done

# series NAME KEY FIELD [TABLE]: the chart tool's series argument (only if a file exists)
series() { compgen -G "$out/ar_$2_p${p}_*.json" >/dev/null && printf -- '--series\0%s=%s@%s:%s\0' "$1" "$out/ar_$2_p${p}_*.json" "${4:-allreduce}" "$3"; }
systems() { # FIELD [TABLE]
	series gorma gorma "$@"
	series "Open MPI" ompi "$@"
	((mpich)) && series MPICH mpich "$@"
	return 0
}
echo "# $(date -u +%FT%TZ) $(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), kernel $(uname -r), $(go env GOVERSION); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# medians of $reps alternating repetitions; each figure the average over the ranks of their mean per call"
for p in $nps; do
	mapfile -d '' lat < <(systems avg_us)
	mapfile -d '' bw < <(systems busbw_GBps)
	mapfile -d '' bar < <(systems avg_us barrier)
	mapfile -d '' fr < <(series "gorma, reused buffers" gorma busbw_GBps; series "gorma, fresh buffers" gormafresh busbw_GBps; series "gorma, fresh scratch" gormascratch busbw_GBps)
	echo
	echo "### Allreduce, $p ranks: latency (us, lower is better)"
	echo
	bin/chart table --sizes 8,1K,64K,1M,16M,24M,64M "${lat[@]}"
	echo
	echo "### Allreduce, $p ranks: bus bandwidth (GB/s, higher is better)"
	echo
	bin/chart table --sizes 64K,1M,16M,24M,32M,64M "${bw[@]}" | tee "$out/ar_bw_p$p.md"
	awk -F' *[|] *' '$2 ~ /24M/ {for (i = 3; i < NF; i++) a[i] = $i} $2 ~ /64M/ {for (i = 3; i < NF; i++) b[i] = $i} NR == 1 {for (i = 3; i < NF; i++) h[i] = $i}
		END {printf "\n64 MiB against 24 MiB bus bandwidth:"; for (i = 3; i < NF; i++) if (h[i] !~ /\// && a[i] + 0 > 0) printf " %s %.2f;", h[i], b[i] / a[i]; print " (target for gorma: at least 0.80)"}' "$out/ar_bw_p$p.md"
	echo
	echo "### Barrier, $p ranks (us)"
	echo
	bin/chart table "${bar[@]}"
	echo
	echo "### gorma with fresh buffers (--fresh) or fresh scratch (--scratch fresh) per call, $p ranks: bus bandwidth (GB/s)"
	echo
	bin/chart table --sizes 64K,1M,16M,24M,64M "${fr[@]}"
	mapfile -d '' frl < <(series "gorma, fresh buffers" gormafresh busbw_GBps; series "gorma, fresh scratch" gormascratch busbw_GBps)
	bin/chart svg --out "$charts/allreduce_p${p}_latency.svg" --json "$out/chart_allreduce_p${p}_latency.json" --table "Allreduce, $p ranks: latency" \
		--title "Allreduce (float64 sum), $p ranks on $(nproc) cores" --ylabel "latency (us)" --logy "${lat[@]}"
	bin/chart svg --out "$charts/allreduce_p${p}_busbw.svg" --json "$out/chart_allreduce_p${p}_busbw.json" \
		--title "Allreduce (float64 sum), $p ranks on $(nproc) cores" --ylabel "bus bandwidth (GB/s)" "${bw[@]}" "${frl[@]}"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
