#!/usr/bin/env bash
# compare-builds.sh OLD [NEW] [REPS]: the hidden cost of a change, measured. Builds
# golaunch, pingpong, rmabench and allreducebench at two git revisions (NEW defaults to
# the working tree), then runs them in alternated pairs on this host: the 8 B half round
# trip (2 ranks), Put+Flush 8 B under LockAll (2 ranks), and Allreduce 8 B and 1 MiB
# (4 ranks). It prints the median, lowest and highest of each figure and NEW/OLD.
# Only the ratios mean anything; see "Method" in docs/benchmarks.md.
set -euo pipefail
old=${1:?usage: compare-builds.sh OLD-REVISION [NEW-REVISION] [REPS]}
new=${2:-}
reps=${3:-12}
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$work/src-old" 2>/dev/null; git -C "$root" worktree remove --force "$work/src-new" 2>/dev/null; rm -rf "$work"' EXIT

build() { # build SRC OUT
	mkdir -p "$2"
	(cd "$1" && CGO_ENABLED=0 go build -o "$2/golaunch" ./launcher/cmd/golaunch &&
		CGO_ENABLED=0 go build -o "$2/pingpong" ./apps/pingpong &&
		CGO_ENABLED=0 go build -o "$2/rmabench" ./apps/rmabench &&
		CGO_ENABLED=0 go build -o "$2/allreducebench" ./apps/allreducebench)
}
git -C "$root" worktree add -q --detach "$work/src-old" "$old"
build "$work/src-old" "$work/old"
if [[ -n $new ]]; then
	git -C "$root" worktree add -q --detach "$work/src-new" "$new"
	build "$work/src-new" "$work/new"
else
	build "$root" "$work/new"
fi

run() { # run BIN LABEL: one line per figure, "LABEL FIGURE VALUE"
	local b=$1 j=$work/out.json
	"$b/golaunch" -n 2 --tag-output=false "$b/pingpong" --test latency --min-size 8 --max-size 8 --iters 20000 --json="$j" >/dev/null
	echo "$2 p2p_8B_us $(jq .latency[0].latency_us "$j")"
	"$b/golaunch" -n 2 --tag-output=false "$b/rmabench" --test put_lat --min-size 8 --max-size 8 --iters 20000 --json="$j" >/dev/null
	echo "$2 putflush_8B_us $(jq '.tables[] | select(.name == "put_lat.lock_all") | .rows[0].median_us' "$j")"
	"$b/golaunch" -n 4 --tag-output=false "$b/allreducebench" --test allreduce --sizes 8,1M --iters 1000 --min-iters 20 --json="$j" >/dev/null
	jq -r --arg l "$2" '.allreduce[] | "\($l) allreduce_\(.bytes)B_us \(.avg_us)"' "$j"
}
for ((i = 0; i < reps; i++)); do
	if ((i % 2)); then run "$work/new" new; run "$work/old" old; else run "$work/old" old; run "$work/new" new; fi
done >"$work/runs.txt"

echo "# $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $reps alternated pairs; old $old, new ${new:-working tree}"
awk '{v[$2 " " $1] = v[$2 " " $1] " " $3; f[$2] = 1}
END {
	for (k in f) {
		for (s = 0; s < 2; s++) {
			side = s ? "new" : "old"; n = split(v[k " " side], a, " ")
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			med[side] = n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2; lo[side] = a[1]; hi[side] = a[n]
		}
		printf "%-22s old %10.4g [%g, %g]  new %10.4g [%g, %g]  new/old %.2f\n", k, med["old"], lo["old"], hi["old"], med["new"], lo["new"], hi["new"], med["new"] / med["old"]
	}
}' "$work/runs.txt" | sort
