#!/usr/bin/env bash
# observe-pictures.sh: the pictures of "Seeing what a job does" (docs/api.md,
# docs/launcher.md), from real 16-rank runs on this host. It writes docs/observe/:
#   - halo16-matrix.svg, halo16-summary.txt, halo16-prof0.txt: apps/halobench (a ring of
#     halo exchanges) under golaunch --profile --summary: the heat map, the summary, and
#     the head of rank 0's .prof file;
#   - halo16-external.mat: Debian's profile2mat's byte matrix of the same files, when
#     profile2mat is installed (openmpi-bin);
#   - ar16-timeline.svg, ar16-one.svg: apps/allreducebench (recursive doubling, 64 KiB)
#     under golaunch --trace, drawn by chart timeline: the whole run, and rank 0's last
#     Allreduce with the messages of its steps.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
make build >/dev/null
out=docs/observe
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"

bin/golaunch -n 16 --tag-output=false --profile "$tmp/prof" --summary \
	bin/halobench --sizes 256 --iters 200 --warmup 20 >"$tmp/halo.txt" 2>"$tmp/halo.err"
cp "$tmp/prof/matrix.svg" "$out/halo16-matrix.svg"
cp "$tmp/prof/summary.txt" "$out/halo16-summary.txt"
head -c 2000 "$tmp/prof/prof.0.prof" | cut -c1-120 | head -12 >"$out/halo16-prof0.txt"
if command -v profile2mat >/dev/null; then
	cat "$tmp"/prof/prof.*.prof >"$tmp/job.prof"
	(cd "$tmp" && profile2mat job.prof >/dev/null)
	cp "$tmp/job_size_external.mat" "$out/halo16-external.mat"
fi

bin/golaunch -n 16 --tag-output=false --trace "$tmp/ar16.json" \
	bin/allreducebench --algo recdbl --sizes 64K --iters 20 --min-iters 20 >"$tmp/ar.txt"
go run ./bench/chart timeline --title "allreducebench, 16 ranks, recursive doubling, 64 KiB" \
	"$tmp/ar16.json" >"$out/ar16-timeline.svg"
# Rank 0's last Allreduce, with a margin of a tenth of its length on each side.
read -r from to < <(jq -r '[.traceEvents[] | select(.ph == "X" and .cat == "coll" and .pid == 1
	and (.name | startswith("Allreduce")))] | last | "\(.ts - .dur / 10) \(.ts + .dur * 1.1)"' "$tmp/ar16.json")
go run ./bench/chart timeline --from "$from" --to "$to" \
	--title "one Allreduce of 64 KiB, 16 ranks, recursive doubling" "$tmp/ar16.json" >"$out/ar16-one.svg"
echo "observe-pictures: wrote $out ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg))"
