#!/usr/bin/env bash
# net.Conn between two processes, side by side in one run: gorma's sockets (gorma-shm,
# gorma-tcp: transport/sockets) against the kernel's Unix and TCP sockets (apps/sockbench)
# and shmipc-go (bench/sockpeers, a module of its own, which also runs the gRPC test over
# every transport). Each repetition runs every transport once, in turn, under flock
# /tmp/gorma-bench.lock, so that a change of the machine's speed hits all of them; a
# cell's figure is the median of REPS repetitions, with the spread (every repetition)
# beside it. The figures: the round trip at 64 B, 4 KiB, 64 KiB and 1 MiB and a gRPC
# unary round trip at 64 B (median of each run's round trips), one-way throughput in
# writes of 64 KiB, 4 KiB and 1 MiB, connections per second (dial + close) and net/http
# requests per second (16 keep-alive clients, 1 KiB responses). The targets:
#   64 B round trip, gorma-shm       at most 0.5x unix, below shmipc
#   64 KiB stream, gorma-shm         at least 2x unix, at least shmipc
#   HTTP requests/s, gorma-tcp       at least 1.5x tcp (loopback; the dialer is gorma's)
# gorma's transports run when the tree holds transport/sockets; otherwise their cells
# are empty. Prints each cell's repetitions, median and spread, then the ratios; writes
# the same as a section of docs/benchmarks.json to JSON (default
# results/compare/sockets.json), which `chart collect --section` appends
# (compare-all.sh), and each transport's last sockbench JSON beside it
# (sockets_TRANSPORT.json).
# Usage: scripts/compare-sockets.sh [REPS]   (environment: JSON, TRANSPORTS, ITERS=5000,
#        STREAM_BYTES=64M, STREAM_REPS=3, DURATION=500ms, RUN_TIMEOUT=300 seconds a program)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
json=${JSON:-results/compare/sockets.json}
out=$(dirname "$json")
iters=${ITERS:-5000}
stream_bytes=${STREAM_BYTES:-64M}
stream_reps=${STREAM_REPS:-3}
duration=${DURATION:-500ms}
lock=/tmp/gorma-bench.lock
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v jq >/dev/null || { echo "compare-sockets: jq missing: apt-get install jq" >&2; exit 2; }
load0=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ',') # the section's load at the start; the end is read when it is written

mkdir -p bin "$out"
CGO_ENABLED=0 go build -o bin/ ./apps/sockbench
(cd bench/sockpeers && CGO_ENABLED=0 go build -o ../../bin/sockpeers .)
read -r -a transports <<<"${TRANSPORTS:-gorma-shm gorma-tcp unix tcp shmipc}"
columns=(gorma-shm gorma-tcp unix tcp shmipc)

common=(--iters "$iters" --stream-bytes "$stream_bytes" --reps "$stream_reps" --duration "$duration")
run_timeout=${RUN_TIMEOUT:-300}
# cell TRANSPORT REP: this transport's tests, the JSON documents to $tmp/TRANSPORT.REP.*.json.
cell() {
	local t=$1 r=$2
	local to=(timeout --kill-after=10 "$run_timeout")
	if [[ $t == shmipc ]]; then
		"${to[@]}" bin/sockpeers --transport "$t" "${common[@]}" --json="$tmp/$t.$r.main.json" >/dev/null
	else
		"${to[@]}" bin/sockbench --transport "$t" "${common[@]}" --json="$tmp/$t.$r.main.json" >/dev/null
		"${to[@]}" bin/sockpeers --transport "$t" --test grpc "${common[@]}" --json="$tmp/$t.$r.grpc.json" >/dev/null
	fi
}
for ((r = 0; r < reps; r++)); do
	for t in "${transports[@]}"; do
		flock "$lock" bash -c "$(declare -p common tmp run_timeout); $(declare -f cell); cell $t $r" ||
			echo "compare-sockets: $t, repetition $r: failed" >&2
	done
done
for t in "${transports[@]}"; do
	last=$tmp/$t.$((reps - 1)).main.json
	if [[ -s $last ]]; then cp "$last" "$out/sockets_$t.json"; fi
done

# figures: ID|LABEL|UNIT|TEST|BYTES|FIELD
figures=(
	"rt64|64 B|us|pingpong|64|median_us"
	"rt4k|4 KiB|us|pingpong|4096|median_us"
	"rt64k|64 KiB|us|pingpong|65536|median_us"
	"rt1m|1 MiB|us|pingpong|1048576|median_us"
	"grpc|gRPC, 64 B|us|grpc|64|median_us"
	"st64k|stream, 64 KiB writes|MB/s|stream|65536|MB_per_s"
	"st4k|stream, 4 KiB writes|MB/s|stream|4096|MB_per_s"
	"st1m|stream, 1 MiB writes|MB/s|stream|1048576|MB_per_s"
	"conn|connections (dial + close)|conn/s|connrate|0|per_s"
	"http|HTTP requests, 16 clients|req/s|http|1024|per_s"
)
declare -A vals
for f in "${figures[@]}"; do
	IFS='|' read -r id _ _ test bytes field <<<"$f"
	for t in "${transports[@]}"; do
		for ((r = 0; r < reps; r++)); do
			for doc in "$tmp/$t.$r.main.json" "$tmp/$t.$r.grpc.json"; do
				[[ -s $doc ]] || continue
				v=$(jq -r --arg n "$test" --argjson b "$bytes" --arg f "$field" \
					'.results[] | select(.name == $n) | .rows[] | select(.bytes == $b) | .[$f] // empty' "$doc")
				[[ -z $v ]] || vals["$id $t"]+="$v "
			done
		done
	done
done

median() { tr ' ' '\n' | { grep . || true; } | sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
spread() { tr ' ' '\n' | { grep . || true; } | sort -g | awk 'NR==1 {lo=$1} {hi=$1} END {if (NR) print lo "-" hi}'; }
med() { median <<<"${vals["$1 $2"]:-}"; }

# Text report: every cell's repetitions, median and spread.
for f in "${figures[@]}"; do
	IFS='|' read -r id label unit _ <<<"$f"
	for t in "${transports[@]}"; do
		v=${vals["$id $t"]:-}
		if [[ -z $v ]]; then echo "$label ($unit), $t: not measured"; continue; fi
		echo "$label ($unit), $t: ${v% }; median $(med "$id" "$t"), spread $(spread <<<"$v")"
	done
done

# target LABEL A B OP X: the ratio A/B against OP X (<=, <, >=).
targets=(
	"64 B round trip, gorma-shm vs unix|rt64|gorma-shm|unix|<=|0.50|us"
	"64 B round trip, gorma-shm vs shmipc|rt64|gorma-shm|shmipc|<|1.00|us"
	"64 KiB stream, gorma-shm vs unix|st64k|gorma-shm|unix|>=|2.00|MB/s"
	"64 KiB stream, gorma-shm vs shmipc|st64k|gorma-shm|shmipc|>=|1.00|MB/s"
	"HTTP requests/s, gorma-tcp vs tcp|http|gorma-tcp|tcp|>=|1.50|req/s"
)
ratio() { if [[ -n $1 && -n $2 ]]; then awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; fi; }
ok() {
	[[ -n $1 ]] || { echo null; return; }
	awk -v q="$1" -v op="$2" -v x="$3" 'BEGIN {r = op == "<=" ? q <= x : op == "<" ? q < x : q >= x; print (r ? "true" : "false")}'
}
for tg in "${targets[@]}"; do
	IFS='|' read -r label id a b op x _ <<<"$tg"
	q=$(ratio "$(med "$id" "$a")" "$(med "$id" "$b")")
	o=$(ok "$q" "$op" "$x")
	echo "ratio $label: ${q:-not measured} (target $op ${x}x $(case $o in true) echo ok ;; false) echo MISS ;; *) echo - ;; esac))"
done

# JSON helpers: a number or null; a string.
jnum() { if [[ -n $1 ]]; then echo "$1"; else echo null; fi; }
jstr() { printf '"%s"' "$(sed 's/\\/\\\\/g; s/"/\\"/g' <<<"$1")"; }
# target_json ID: the target of figure ID's row (its targets' texts, ok when all are met), or nothing.
target_json() {
	local text="" all=true label id a b op x q o
	for tg in "${targets[@]}"; do
		IFS='|' read -r label id a b op x _ <<<"$tg"
		[[ $id == "$1" ]] || continue
		q=$(ratio "$(med "$id" "$a")" "$(med "$id" "$b")")
		o=$(ok "$q" "$op" "$x")
		if [[ $text == "$a "* ]]; then text+=", $op ${x}x $b"; else text+="${text:+; }$a $op ${x}x $b"; fi
		if [[ $o == null ]]; then all=null; elif [[ $o == false && $all != null ]]; then all=false; fi
	done
	[[ -z $text ]] || printf ', "target": {"text": %s, "ok": %s}' "$(jstr "$text")" "$all"
}
# rowjson ID LABEL UNIT: a row of every column's median, the first column's ratio to each
# other one, and the row's target.
rowjson() {
	local id=$1 vs=() qs=() first c v
	first=$(med "$id" "${columns[0]}")
	for c in "${columns[@]}"; do
		v=$(med "$id" "$c")
		vs+=("$(jnum "$v")")
		[[ $c == "${columns[0]}" ]] || qs+=("$(jnum "$(ratio "$first" "$v")")")
	done
	printf '{"label": %s, "unit": %s, "values": [%s], "ratios": [%s]%s}' "$(jstr "$2")" "$(jstr "$3")" \
		"$(IFS=,; echo "${vs[*]}")" "$(IFS=,; echo "${qs[*]}")" "$(target_json "$id")"
}
# table TITLE UNIT BETTER IDS...: a table of the figures IDS.
table() {
	local title=$1 unit=$2 better=$3 sep="" id f
	shift 3
	printf '{"title": %s, "key": "figure", "unit": %s, "better": %s, "columns": [%s], "rows": [\n' "$(jstr "$title")" \
		"$(jstr "$unit")" "$(jstr "$better")" "$(printf '"%s",' "${columns[@]}" | sed 's/,$//')"
	for id in "$@"; do
		for f in "${figures[@]}"; do
			IFS='|' read -r fid label funit _ <<<"$f"
			[[ $fid == "$id" ]] || continue
			[[ -n $unit ]] && funit=""
			printf '%s' "$sep"
			rowjson "$id" "$label" "$funit"
			sep=$',\n'
		done
	done
	printf '\n]}'
}
missing=()
for c in "${columns[@]}"; do [[ " ${transports[*]} " == *" $c "* ]] || missing+=("$c"); done
note=""
if ((${#missing[@]})); then note="Not in this run: ${missing[*]}."; fi

{
	printf '{\n"id": "sockets",\n"title": "net.Conn: gorma'"'"'s sockets, Unix and TCP sockets, shmipc-go",\n'
	printf '"intro": %s,\n' "$(jstr "\`apps/sockbench\` and \`bench/sockpeers\` (shmipc-go, and gRPC over every transport) between two processes (\`scripts/compare-sockets.sh\`): round trips (median of $iters at up to 4 KiB, fewer above), one-way streams of $stream_bytes bytes (median of $stream_reps), connections for $duration, HTTP requests for $duration after a 1 s warm-up (every connection's buffers in use). Medians of $reps repetitions, each running every transport once, in turn; every repetition is in \`results/compare/sockets.txt\`. gorma-tcp is a TCP listener whose gorma dialers on the same host get shm; shmipc's Dial opens a stream of one shared link, without a round trip.${note:+ $note}")"
	printf '"load": {"start": [%s], "end": [%s]},\n' "$load0" "$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ',')"
	printf '"tables": [\n'
	table "Round trip" us lower rt64 rt4k rt64k rt1m grpc
	printf ',\n'
	table "Throughput and rates (higher is better)" "" "" st64k st4k st1m conn http
	printf '\n]\n}\n'
} >"$tmp/section.json"
jq -e . "$tmp/section.json" >/dev/null || { echo "compare-sockets: the section JSON is malformed" >&2; exit 1; }
cp "$tmp/section.json" "$json" # whole or not at all: chart collect rejects a cut document
echo "compare-sockets: wrote $json" >&2
