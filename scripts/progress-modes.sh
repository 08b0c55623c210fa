#!/usr/bin/env bash
# The progress-mode table: apps/pingpong's 8 B half round trip (OSU latency) under
# GORMA_PROGRESS=spin, hybrid and block, with 2 ranks (one pair) and with 4 ranks (two
# concurrent pairs, --pairs: rank 0 reports the median over the pairs) on this host's
# cores. Every configuration runs RUNS times, in alternation; the table gives medians.
# Usage: scripts/progress-modes.sh [RUNS]   (environment: ITERS2, ITERS4: round trips per run)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
iters2=${ITERS2:-20000}
iters4=${ITERS4:-2000} # 4 ranks on 2 cores: a spinning waiter can cost a scheduler slice
mkdir -p bin
CGO_ENABLED=0 go build -o bin/ ./launcher/cmd/golaunch ./apps/pingpong

modes=(spin hybrid block)
declare -A res
for ((i = 0; i < runs; i++)); do
	for n in 2 4; do
		for mode in "${modes[@]}"; do
			it=$iters2 pairs=()
			[[ $n == 4 ]] && it=$iters4 pairs=(--pairs)
			v=$(bin/golaunch -n "$n" --timeout 5m --tag-output=false -x GORMA_PROGRESS="$mode" bin/pingpong "${pairs[@]}" \
				--test latency --min-size 8 --max-size 8 --iters "$it" | awk '$1 == 8 {print $2}')
			res[$n.$mode]+="$v "
		done
	done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo "# $(date -u +%FT%TZ) $(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), kernel $(uname -r), $(go env GOVERSION); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# 8 B half round trip in us (OSU latency; the round trip is twice this), median of $runs runs; runs in brackets"
printf '| %-8s | %-40s | %-40s |\n' "mode" "2 ranks (1 pair)" "4 ranks (2 pairs, 2 cores)"
printf '|----------|------------------------------------------|------------------------------------------|\n'
for mode in "${modes[@]}"; do
	a=${res[2.$mode]} b=${res[4.$mode]}
	printf '| %-8s | %-40s | %-40s |\n' "$mode" "$(median <<<"$a") (${a% })" "$(median <<<"$b") (${b% })"
done
