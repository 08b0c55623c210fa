#!/usr/bin/env bash
# One-sided (RMA), side by side in one run: apps/rmabench through golaunch (shm) against
# its C twin (bench/mpi/rmabench.c) under Open MPI's mpirun, twice: with osc/sm forced
# (the peer of the targets: one-sided operations as loads and stores on shared memory)
# and with Open MPI's default one-sided component (osc/rdma over vader here); under
# MPICH too when mpicc.mpich and mpiexec.mpich are installed. Every tool runs NP ranks
# (default 2, an even count): ranks pair up (0 with 1, 2 with 3, ...), every even rank
# measures against its partner at once and rank 0's figures are shown; the Fences and
# alloc_free span all NP ranks. The tools alternate within each repetition, under flock
# /tmp/gorma-bench.lock (other benchmarks share the machine), so a change of the machine's
# speed state hits all of them; the tables give the medians over the repetitions
# (median_us of each row, MB/s for the bandwidth cases) and the ratio gorma / peer. The
# fence case adds the tables fence.p99 and fence.max (its tail), busy_get busy_get.max.
# A summary follows: every case's gorma / osc/sm at its smallest and largest size, against
# the goal of every case at or under osc/sm (a bandwidth at or above it). Then the targets:
#   Put and Get 8 B + Flush (LockAll)           no slower than Open MPI osc/sm
#   Lock(exclusive) + Put 8 B + Unlock          no slower than Open MPI osc/sm
#   empty Fence, NP ranks                       at or under 0.8x the best peer (and 0.6 us)
#   empty Fence p99                             no slower than the best peer's p99
#   window Allocate (NoZero: uncleared, as MPI_Win_allocate) + Free, 1 MiB   under 50 us
#   Lock + Get + Unlock, target computing       under 5 us (median; the max is shown)
# Open MPI 4.1.4's default component crashes (SIGSEGV at the target) in
# MPI_Compare_and_swap, and osc/sm cannot MPI_Win_create: those runs skip the case.
# The output (the load average at the start, a Markdown table per case, the summary, the
# targets, the load average at the end) is what bench/chart collect parses. The summary is
# plain columns, not a pipe table: collect reads every pipe table of the output as a
# case's or as the targets.
# BASE=REV adds gorma built at git revision REV as the tool base, run in the same
# alternation: its column and gorma/base show what the work since REV changed.
# MPICH=0 leaves MPICH out: its progress busy-polls, so at NP above the cores each of its
# runs waits for time slices and a repetition takes many minutes.
# gorma's ranks are bound as mpirun binds the C twin's by default: to a core each at NP 2
# or less, unbound above (Open MPI binds to the package there, and not at all when the
# ranks oversubscribe the host). Unbound, two ranks on two cores sometimes share one for
# a whole run, which makes Lock + Put + Unlock 1.6 times slower in that run. BIND (auto,
# core or none: golaunch's --bind-to) overrides it.
# Usage: scripts/compare-rma.sh [REPS]   (environment: NP, TESTS, MIN_SIZE, MAX_SIZE, ITERS, BUSY, BASE, MPICH, BIND)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
tests=${TESTS:-all}
min_size=${MIN_SIZE:-8}
max_size=${MAX_SIZE:-1M}
iters=${ITERS:-10000}
busy=${BUSY:-200ms}
np=${NP:-2}
base=${BASE:-}
if ! [[ $np =~ ^[0-9]+$ ]] || ((np < 2 || np % 2)); then
	echo "compare-rma: NP=$np: rmabench pairs rank r with rank r^1, so the rank count must be even and at least 2: set NP=2 or NP=4" >&2
	exit 2
fi
for tool in mpirun.openmpi mpicc.openmpi; do
	command -v "$tool" >/dev/null || { echo "compare-rma: $tool missing: apt-get install openmpi-bin libopenmpi-dev" >&2; exit 2; }
done
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)" # chart collect reads both load lines
read -r load1 _ < /proc/loadavg
if awk -v l="$load1" -v n="$(nproc)" 'BEGIN {exit !(l >= n / 2)}'; then
	echo "compare-rma: WARNING: load average $load1 on $(nproc) cores: other work shares the machine, read the ratios, not the figures" >&2
fi
if ((np > $(nproc))); then
	echo "compare-rma: NP=$np ranks on $(nproc) cores share them: a runtime that busy-polls (MPICH) waits for time slices" >&2
fi
mkdir -p bin
CGO_ENABLED=0 go build -o bin/ ./launcher/cmd/golaunch ./apps/rmabench
mpicc.openmpi -O2 -Wall -o bin/rmabench_mpi bench/mpi/rmabench.c
if [[ -n $base ]]; then
	src=$(mktemp -d)
	git worktree add -q --detach "$src/tree" "$base"
	mkdir -p bin/base
	(cd "$src/tree" && CGO_ENABLED=0 go build -o "$OLDPWD/bin/base/" ./launcher/cmd/golaunch ./apps/rmabench)
	git worktree remove --force "$src/tree"
	rm -rf "$src"
fi
mpich=0
if [[ ${MPICH:-1} == 0 ]]; then
	echo "compare-rma: MPICH=0: leaving MPICH out" >&2
elif command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
	mpicc.mpich -O2 -Wall -o bin/rmabench_mpich bench/mpi/rmabench.c && mpich=1
else
	echo "compare-rma: MPICH not installed (mpicc.mpich, mpiexec.mpich): skipping it" >&2
fi

args=(--min-size "$min_size" --max-size "$max_size" --iters "$iters" --busy "$busy")
# rmabench_mpi takes sizes with K/M suffixes and durations in ms, like rmabench.
bind=${BIND:-}
[[ -z $bind ]] && { ((np <= 2)) && bind=core || bind=auto; }
gorma() { bin/golaunch -n "$np" --bind-to "$bind" --timeout 10m --tag-output=false bin/rmabench "${args[@]}" --test "$1"; }
gorma_base() { bin/base/golaunch -n "$np" --bind-to "$bind" --timeout 10m --tag-output=false bin/base/rmabench "${args[@]}" --test "$1"; }
# --oversubscribe lets NP exceed the cores; at NP <= cores Open MPI binds as without it.
ompi() { mpirun.openmpi --allow-run-as-root --oversubscribe -n "$np" "${@:2}" bin/rmabench_mpi "${args[@]}" --test "$1"; }
mpich_run() { mpiexec.mpich -n "$np" bin/rmabench_mpich "${args[@]}" --test "$1"; }
# rows: "TOOL CASE BYTES FIGURE" from a run's text output
# (busy_get adds a row for its max: case busy_get.max; fence its p99 and max)
rows() {
	awk -v t="$1" '/^# [a-z_.0-9]+: / {c = $2; sub(/:$/, "", c)} /^[0-9]/ && c != "" {print t, c, $1, $3
		if (c == "busy_get") print t, c ".max", $1, $4
		if (c == "fence") {print t, c ".p99", $1, $5; print t, c ".max", $1, $6}}'
}

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
all_groups=put_lat,get_lat,put_bw,get_bw,acc_lat,fop_lat,cas_lat,busy_get,fence,lock_put,alloc_free
list=$tests
[[ $list == all ]] && list=$all_groups
# drop NAME...: the list without the named cases (a group name expands to its cases first)
drop() { tr ',' '\n' <<<"$list" | sed 's/^alloc_free$/alloc_free.allocate\nalloc_free.create/' | grep -vxF -f <(printf '%s\n' "$@") | paste -sd, -; }
sm_tests=$(drop alloc_free.create)
default_tests=$(drop cas_lat)
fail() { echo "compare-rma: rep $i: the $1 run failed (its rows so far are kept)" >&2; }
for ((i = 1; i <= reps; i++)); do
	(
		flock 9
		gorma "$list" | rows gorma >>"$out/rows" || fail gorma
		if [[ -n $base ]]; then gorma_base "$list" | rows base >>"$out/rows" || fail "gorma at $base"; fi
		ompi "$sm_tests" --mca osc sm | rows ompi-sm >>"$out/rows" || fail "Open MPI osc/sm"
		ompi "$default_tests" | rows ompi >>"$out/rows" || fail "Open MPI"
		if ((mpich)); then mpich_run "$list" | rows mpich >>"$out/rows" || fail MPICH; fi
	) 9>/tmp/gorma-bench.lock
	echo "rep $i of $reps done ($(cut -d' ' -f1-3 /proc/loadavg))" >&2
done

echo "# $(date -u +%FT%TZ) $(nproc) cores, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), kernel $(uname -r), $(go env GOVERSION), $(mpirun.openmpi --version | head -1); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# medians of $reps alternating repetitions; latency in us (median of the run's samples), bandwidth in MB/s"
echo "# ompi-sm: Open MPI with --mca osc sm; ompi: Open MPI's default osc component"
echo "# ranks: $np (pairs 0 with 1, 2 with 3, ...: the even ranks measure at once, rank 0's figures; the Fences and alloc_free span all $np); gorma --bind-to $bind"
tools="gorma ompi-sm ompi"
[[ -n $base ]] && tools="gorma base ompi-sm ompi" && echo "# base: gorma at $base ($(git rev-parse --short "$base"))"
((mpich)) && tools+=" mpich"
awk -v tools="$tools" '
function med(key,   n, a, i, j, t) {
	n = split(vals[key], a, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
{ key = $1 SUBSEP $2 SUBSEP $3; vals[key] = vals[key] " " $4; if (!(($2 SUBSEP $3) in seen)) { seen[$2 SUBSEP $3] = 1; order[++n] = $2 SUBSEP $3 }; if (!($2 in cs)) { cs[$2] = 1; corder[++nc] = $2 } }
END {
	nt = split(tools, tl, " ")
	for (c = 1; c <= nc; c++) {
		name = corder[c]; bw = name ~ /_bw$/
		printf "\n## %s (%s)\n", name, bw ? "MB/s, higher is better" : "us, lower is better"
		hdr = sprintf("| %-8s |", "bytes"); sep = "|----------|"
		for (t = 1; t <= nt; t++) { hdr = hdr sprintf(" %10s |", tl[t]); sep = sep "------------|" }
		for (t = 2; t <= nt; t++) { hdr = hdr sprintf(" %13s |", "gorma/" tl[t]); sep = sep "---------------|" }
		print hdr; print sep
		for (k = 1; k <= n; k++) {
			split(order[k], p, SUBSEP); if (p[1] != name) continue
			line = sprintf("| %-8s |", p[2])
			for (t = 1; t <= nt; t++) { key = tl[t] SUBSEP p[1] SUBSEP p[2]; f[t] = (key in vals) ? med(key) : ""
				line = line (f[t] == "" ? sprintf(" %10s |", "-") : sprintf(" %10.3f |", f[t])) }
			for (t = 2; t <= nt; t++) line = line ((f[1] == "" || f[t] == "" || f[t] == 0) ? sprintf(" %13s |", "-") : sprintf(" %12.2fx |", f[1] / f[t]))
			print line
		}
	}
	# The summary: gorma / ompi-sm per case at its smallest and largest size. MPI_Win_allocate
	# leaves the memory uncleared, so alloc_free.nozero is held against ompi-sm alloc_free.allocate.
	printf "\n## every case against osc/sm: gorma/ompi-sm at the smallest and the largest size; ok at or under 1.00x (_bw: at or above)\n"
	printf "%-22s %10s %9s %-6s %10s %9s %s\n", "case", "bytes", "ratio", "target", "bytes", "ratio", "target"
	for (c = 1; c <= nc; c++) {
		name = corder[c]; peer = name == "alloc_free.nozero" ? "alloc_free.allocate" : name
		small = ""; large = ""
		for (k = 1; k <= n; k++) { split(order[k], p, SUBSEP); if (p[1] != name) continue; if (small == "") small = p[2]; large = p[2] }
		line = sprintf("%-22s", name) verdict(name, peer, small)
		line = line (large != small ? verdict(name, peer, large) : sprintf(" %10s %9s %-6s", "-", "-", "-"))
		sub(/ +$/, "", line)
		print line
	}
	printf "cells: %d ok, %d MISS, %d without an osc/sm figure\n", nok, nmiss, nnone
}
function verdict(name, peer, size,   g, s, ok) {
	g = ("gorma" SUBSEP name SUBSEP size) in vals ? med("gorma" SUBSEP name SUBSEP size) : ""
	s = ("ompi-sm" SUBSEP peer SUBSEP size) in vals ? med("ompi-sm" SUBSEP peer SUBSEP size) : ""
	if (g == "" || s == "" || s == 0) { nnone++; return sprintf(" %10s %9s %-6s", size, "-", "-") }
	ok = name ~ /_bw$/ ? g + 0 >= s + 0 : g + 0 <= s + 0
	if (ok) nok++; else nmiss++
	return sprintf(" %10s %8.2fx %-6s", size, g / s, ok ? "ok" : "MISS")
}' "$out/rows"

# the targets
fig() { awk -v t="$1" -v c="$2" -v b="$3" '$1 == t && $2 == c && $3 == b {v = v " " $4} END {n = split(v, a, " "); if (!n) {print ""; exit}
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) {x = a[j]; a[j] = a[j-1]; a[j-1] = x}
	print (n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2)}' "$out/rows"; }
echo
echo "## targets"
printf '| %-50s | %10s | %10s | %8s | %-24s |\n' "figure" "gorma" "peer" "ratio" "target"
printf '|%s|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..52})" "$(printf -- '-%.0s' {1..12})" "$(printf -- '-%.0s' {1..12})" "$(printf -- '-%.0s' {1..10})" "$(printf -- '-%.0s' {1..26})"
target() { # LABEL GORMA PEER KIND (peer: <= 1.00x the peer; peer:X: <= X times; abs:US: < US; ref)
	awk -v l="$1" -v g="$2" -v p="$3" -v k="$4" 'BEGIN {
		if (g == "") { printf "| %-50s | %10s | %10s | %8s | %-24s |\n", l, "-", p, "-", "not measured"; exit }
		if (k == "ref") { printf "| %-50s | %7.3f us | %10s | %8s | %-24s |\n", l, g, "-", "-", "(reference)"; exit }
		if (k ~ /^peer/) { x = k == "peer" ? 1 : substr(k, 6) + 0
			if (p == "") { printf "| %-50s | %7.3f us | %10s | %8s | %-24s |\n", l, g, "-", "-", "no peer figure"; exit }
			ok = g <= x * p; printf "| %-50s | %7.3f us | %7.3f us | %7.2fx | %-24s |\n", l, g, p, g / p, sprintf("<= %.2fx ", x) (ok ? "ok" : "MISS"); exit }
		split(k, lim, ":"); ok = g < lim[2]
		printf "| %-50s | %7.3f us | %10s | %8s | %-24s |\n", l, g, (p == "" ? "-" : sprintf("%7.3f us", p)), "-", "< " lim[2] " us " (ok ? "ok" : "MISS") }'
}
best() { for t in ompi-sm ompi mpich; do fig "$t" "$1" "$2"; done | sort -g | awk 'NF {print; exit}'; } # CASE BYTES: the best peer's figure
target "Put 8 B + Flush (vs osc/sm)" "$(fig gorma put_lat.lock_all 8)" "$(fig ompi-sm put_lat.lock_all 8)" peer
target "Get 8 B + Flush (vs osc/sm)" "$(fig gorma get_lat.lock_all 8)" "$(fig ompi-sm get_lat.lock_all 8)" peer
target "Lock(excl) + Put 8 B + Unlock (vs osc/sm)" "$(fig gorma lock_put 8)" "$(fig ompi-sm lock_put 8)" peer
target "empty Fence (vs the best peer)" "$(fig gorma fence 0)" "$(best fence 0)" peer:0.8
target "empty Fence p99 (vs the best peer)" "$(fig gorma fence.p99 0)" "$(best fence.p99 0)" peer
target "empty Fence (absolute)" "$(fig gorma fence 0)" "" "abs:0.6"
# MPI_Win_allocate leaves the memory as it finds it; gorma's Allocate clears it unless
# given NoZero, so the like-for-like figure is alloc_free.nozero; the cleared one follows.
target "Allocate + Free 1 MiB, not zeroed (peer: osc/sm)" "$(fig gorma alloc_free.nozero 1048576)" "$(fig ompi-sm alloc_free.allocate 1048576)" "abs:50"
target "Allocate + Free 1 MiB, zeroed (gorma's default)" "$(fig gorma alloc_free.allocate 1048576)" "" ref
target "busy target Lock+Get+Unlock, median (peer: ompi)" "$(fig gorma busy_get 8)" "$(fig ompi busy_get 8)" "abs:5"
target "busy target Lock+Get+Unlock, max (peer: ompi)" "$(fig gorma busy_get.max 8)" "$(fig ompi busy_get.max 8)" "abs:5"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
