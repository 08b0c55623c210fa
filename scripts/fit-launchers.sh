#!/usr/bin/env bash
# fit-launchers.sh [REPS]: a 2-rank Allreduce loop (8 B and 64 KiB) under each launcher's
# binding, beside golaunch's, from one run, to show what the waiting rule decides from the
# ranks' true processors (docs/api.md, "The host's processors"). Cases:
#   golaunch        golaunch -n 2, unbound
#   srun-cores      srun -n 2 --cpu-bind=cores (scripts/slurm-local.sh up)
#   hydra-core      mpiexec.hydra -n 2 -bind-to core
#   mpirun-core     mpirun.openmpi --bind-to core -n 2
#   quota1          golaunch -n 2 in a cgroup whose CPU quota is one processor
#   pinned1         taskset -c 0 golaunch -n 2: both ranks on one processor
#   shared          golaunch -n 2 beside BURNERS (2) busy loops of another "job"
#   shared-pinned1  pinned1 beside the same busy loops
# ITERS (2000) and MIN_ITERS (200) are allreducebench's --iters and --min-iters: 20000 and
# 20000 measure a long loop, past the first moments beside the busy loops.
# With BASE=REV it also runs REV's allreducebench and golaunch in every case, alternated
# with this tree's. It prints the median, lowest and highest of each figure, in µs per
# call. Runs as root (the cgroup). Only ratios from one run mean anything.
set -euo pipefail
reps=${1:-5}
burners=${BURNERS:-2}
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
cg=""
pids=""
cleanup() {
	[[ -n $pids ]] && kill $pids 2>/dev/null
	[[ -n $cg ]] && rmdir "$cg" 2>/dev/null
	git -C "$root" worktree remove --force "$work/src-base" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

build() { # build SRC OUT
	mkdir -p "$2"
	(cd "$1" && CGO_ENABLED=0 go build -o "$2/golaunch" ./launcher/cmd/golaunch &&
		CGO_ENABLED=0 go build -o "$2/allreducebench" ./apps/allreducebench)
}
build "$root" "$work/new"
builds=(new)
if [[ -n ${BASE:-} ]]; then
	git -C "$root" worktree add -q --detach "$work/src-base" "$BASE"
	build "$work/src-base" "$work/base"
	builds=(base new)
fi

# A cgroup with one processor's quota: v2's cpu.max, or v1's cpu controller.
name=gorma-fit-$$
if grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
	cg=/sys/fs/cgroup/$name
	mkdir "$cg"
	echo "100000 100000" >"$cg/cpu.max"
else
	for d in /sys/fs/cgroup/cpu,cpuacct /sys/fs/cgroup/cpu; do
		[[ -f $d/cpu.cfs_quota_us ]] && { cg=$d/$name; break; }
	done
	[[ -n $cg ]] || { echo "fit-launchers: no cgroup cpu controller" >&2; exit 1; }
	mkdir "$cg"
	echo 100000 >"$cg/cpu.cfs_period_us"
	echo 100000 >"$cg/cpu.cfs_quota_us"
fi

"$root/scripts/slurm-local.sh" up >/dev/null
eval "$("$root/scripts/slurm-local.sh" env)"

bench=(--test allreduce --sizes 8,64K --iters "${ITERS:-2000}" --min-iters "${MIN_ITERS:-200}")
burn() { local i; for ((i = 0; i < burners; i++)); do (while :; do :; done) & pids="$pids $!"; done; }
unburn() { kill $pids 2>/dev/null; wait $pids 2>/dev/null || true; pids=""; }

one() { # one BUILD CASE: lines "CASE/BUILD SIZE us"
	local b=$work/$1 j=$work/out.json
	rm -f "$j"
	local ab=("$b/allreducebench" "${bench[@]}" --json="$j")
	case $2 in
	golaunch) "$b/golaunch" -n 2 "${ab[@]}" ;;
	srun-cores) srun -n 2 --mpi=pmi2 --cpu-bind=cores "${ab[@]}" ;;
	hydra-core) mpiexec.hydra -n 2 -bind-to core "${ab[@]}" ;;
	mpirun-core) mpirun.openmpi --allow-run-as-root --bind-to core -n 2 "${ab[@]}" ;;
	quota1) sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$b/golaunch" -n 2 "${ab[@]}" ;;
	pinned1) taskset -c 0 "$b/golaunch" -n 2 "${ab[@]}" ;;
	shared) burn; "$b/golaunch" -n 2 "${ab[@]}"; unburn ;;
	shared-pinned1) burn; taskset -c 0 "$b/golaunch" -n 2 "${ab[@]}"; unburn ;;
	esac >/dev/null 2>&1
	jq -r --arg l "$2/$1" '.allreduce[] | "\($l) \(.bytes) \(.avg_us)"' "$j"
}

cases=(golaunch srun-cores hydra-core mpirun-core quota1 pinned1 shared shared-pinned1)
for ((i = 0; i < reps; i++)); do
	for c in "${cases[@]}"; do
		if ((i % 2)); then for b in "${builds[@]}"; do one "$b" "$c"; done
		else for ((k = ${#builds[@]} - 1; k >= 0; k--)); do one "${builds[k]}" "$c"; done; fi
	done
done >"$work/runs.txt"

echo "# $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $reps repetitions; us per Allreduce call: median [lowest, highest]${BASE:+; base $BASE}"
awk '{k = $1 " " $2; v[k] = v[k] " " $3; keys[k] = 1}
END {
	for (k in keys) {
		n = split(v[k], a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		med = n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		printf "%-28s %8s B %10.3f [%g, %g]\n", substr(k, 1, index(k, " ") - 1), substr(k, index(k, " ") + 1), med, a[1], a[n]
	}
}' "$work/runs.txt" | sort -k2,2n -k1,1
