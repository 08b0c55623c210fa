#!/usr/bin/env bash
# trace-scale.sh: what golaunch --trace costs a job's end at scale. One host, RANKS ranks of
# tests/obsprog's fill mode: each fills its flight recorder (GORMA_TRACE_EVENTS, 131072 by
# default) with regions, makes ROUNDS Sendrecvs around the ring, and times its Finalize.
# The timeline is written to a file under a temporary folder (removed at the end).
#
# Output, one figure a line: ranks, events (RANKS × EVENTS: what the timeline holds), wall_s (golaunch from start
# to exit), finalize_median_s and finalize_max_s (over the ranks; the gatherer's Finalize
# also merges the timeline, after the others have passed its fence), trace_bytes, and the
# load average at the start and the end. Figures depend on the machine and its load: the
# script prints them, nothing checks them.
#
# Usage: scripts/trace-scale.sh
#   environment: RANKS=64 ROUNDS=200 EVENTS=131072, GOLAUNCH_FLAGS (added to golaunch's
#   command line, e.g. "--hang-report 0")
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=${RANKS:-64}
rounds=${ROUNDS:-200}
events=${EVENTS:-131072}
read -r -a flags <<<"${GOLAUNCH_FLAGS:-}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -o "$work/" ./launcher/cmd/golaunch ./tests/obsprog
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date +%s.%N)
"$work/golaunch" -n "$ranks" --tag-output=false --timeout 30m "${flags[@]}" -x GORMA_TRACE_EVENTS="$events" \
	--trace "$work/t.json" "$work/obsprog" fill "$rounds" >"$work/out" 2>"$work/err" ||
	{ echo "trace-scale: golaunch failed:" >&2; tail -20 "$work/err" >&2; exit 1; }
end=$(date +%s.%N)
echo "ranks $ranks"
echo "events $((ranks * events))"
echo "wall_s $(echo "$end - $start" | bc)"
awk '/^fill / {print $3}' "$work/out" | sort -n | awk '{v[NR]=$1} END {print "finalize_median_s " v[int((NR+1)/2)]; print "finalize_max_s " v[NR]}'
echo "trace_bytes $(stat -c %s "$work/t.json")"
echo "load_start $load_start"
echo "load_end $(cut -d' ' -f1-3 /proc/loadavg)"
