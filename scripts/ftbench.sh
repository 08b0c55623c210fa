#!/usr/bin/env bash
# Fault-tolerance figures (make ftbench): apps/ftbench's recovery times and the failure-free
# cost of golaunch --ft. Every strike is a fresh job; the script strikes from outside and
# writes the time to the job's mark file just before (bash's EPOCHREALTIME, then the kill
# builtin or the agent's start). `go doc ./apps/ftbench` defines what is timed.
#
# Cases (CASES, default "rank agent join verdicts cost"):
#   rank   golaunch --ft -n NP (one host); SIGKILL to one rank, each rank in turn; KILLS jobs.
#   agent  as root: 3 network-namespace hosts of 2 slots, -n 6; SIGKILL to every process
#          of h1 or h2 in turn (its agent and ranks), the agent restarted after each job.
#   join   as root: -n 4 on h0 and h1 (2 slots each, all taken), ftbench --grow-to 6; the
#          strike starts an agent on h2, which joins the cluster; SIGTERM ends it after.
#   verdicts  as root: launcher's TestNetnsLoadFTNoFalseVerdicts at VERDICT_JOBS (100)
#          jobs: real-runtime --ft jobs over 3 network-namespace hosts beside CPU
#          burners, none struck; every failure verdict in them is false.
#   cost   RUNS alternated pairs, with and without --ft, in turn first, 2 ranks:
#          allreducebench --test allreduce --sizes 8 --iters 20000, rmabench --test
#          put_lat.lock_all at 8 B.
# The namespaces are built as scripts/netns-allreduce.sh builds them (10.231.X.0/24 inside
# namespaces of their own; nothing leaves the machine). Without root, agent and join are
# skipped with a line on stderr.
#
# Output: OUT (results/ftbench) holds each job's JSON and text, meta.json and failed.txt.
# Then `chart ft` writes docs/ft.json and `chart page` docs/benchmarks.md (NO_PAGE=1: not).
# COST_FROM=DIR takes the cost from another run's OUT instead (CASES=cost on a machine with
# more cores, its results copied here).
#
# Usage: scripts/ftbench.sh
#   environment: KILLS=20 RUNS=9 NP=4 PAUSE=1ms VERDICT_JOBS=100 CASES="rank agent join verdicts cost"
#                OUT=results/ftbench BIN=bin (make build first)
set -euo pipefail
export LC_ALL=C # EPOCHREALTIME with a decimal point
cd "$(dirname "$0")/.."
kills=${KILLS:-20}
runs=${RUNS:-9}
np=${NP:-4}
pause=${PAUSE:-1ms}
cases=${CASES:-rank agent join verdicts cost}
out=${OUT:-results/ftbench}
bin=$(cd "${BIN:-bin}" && pwd)
lock=/tmp/gorma-bench.lock
for b in golaunch ftbench allreducebench rmabench; do
	[[ -x $bin/$b ]] || { echo "ftbench: $bin/$b missing: run make build" >&2; exit 2; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/*.json "$out"/*.txt "$out"/*.log
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
fail() { echo "$1" >>"$out/failed.txt"; echo "ftbench: $1" >&2; }

# wait_ready DIR PID: waits until DIR/ready exists (0) or the job PID ended (1), 60 s at most.
wait_ready() {
	local t
	for ((t = 0; t < 6000; t++)); do
		[[ -e $1/ready ]] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.01
	done
	return 1
}

# strike_job NAME K DIR ACTION CMD...: runs CMD (a golaunch job of ftbench) in the
# background, waits for DIR/ready, runs ACTION (which writes DIR/mark and strikes), waits for
# the job. A job that ends before it is ready starts again, 5 times at most.
strike_job() {
	local name=$1 k=$2 dir=$3 action=$4 try gl rc
	shift 4
	for ((try = 1; try <= 5; try++)); do
		rm -rf "$dir"
		mkdir -p "$dir"
		"$@" --state-dir "$dir" --mark "$dir/mark" --json="$out/${name}_$k.json" >"$out/${name}_$k.txt" 2>&1 &
		gl=$!
		if wait_ready "$dir" "$gl"; then
			"$action" "$dir" "$k"
			rc=0
			wait "$gl" || rc=$?
			if ((rc != 0)); then
				fail "$name $k: golaunch exited $rc ($out/${name}_$k.txt)"
				rm -f "$out/${name}_$k.json"
			fi
			return 0
		fi
		kill -9 "$gl" 2>/dev/null || true
		wait "$gl" 2>/dev/null || true
		sleep 1
	done
	fail "$name $k: the job never became ready ($out/${name}_$k.txt)"
	rm -f "$out/${name}_$k.json"
}

# kill_rank DIR K: SIGKILL to rank (K-1) mod NP.
kill_rank() {
	local pid host
	read -r pid host <"$1/rank$((($2 - 1) % np)).pid"
	printf '%s\n' "$EPOCHREALTIME" >"$1/mark"
	kill -9 "$pid"
}

work=$(mktemp -d)
hosts=()
cleanup() {
	set +e
	for h in "${hosts[@]}"; do
		pids=$(ip netns pids "$h" 2>/dev/null)
		[[ -n $pids ]] && kill -9 $pids 2>/dev/null
	done
	sleep 0.1
	for h in "${hosts[@]}"; do ip netns del "$h" 2>/dev/null; done
	[[ -n ${sw:-} ]] && ip netns del "$sw" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [[ " $cases " == *" rank "* ]]; then
	for ((k = 1; k <= kills; k++)); do
		strike_job kill_rank "$k" "$work/rank" kill_rank \
			"$bin/golaunch" --ft -n "$np" --timeout 2m --tag-output=false "$bin/ftbench" --case kill --pause "$pause"
	done
	echo "ftbench: rank done" >&2
fi

netns=
if [[ " $cases " == *" agent "* || " $cases " == *" join "* ]]; then
	if [[ $(id -u) == 0 ]] && command -v ip >/dev/null; then
		netns=1
	else
		echo "ftbench: agent and join need root and iproute2 (network namespaces): skipped" >&2
	fi
fi
if [[ -n $netns ]]; then
	id=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
	prefix=gft$id
	subnet=10.231.$((16#${id:0:2} % 250 + 1))
	sw=$prefix-sw
	ip netns add "$sw"
	ip -n "$sw" link add br0 type bridge
	ip -n "$sw" link set br0 up
	addr=()
	for i in 0 1 2; do
		h=$prefix-h$i
		hosts+=("$h")
		addr+=("$subnet.$((i + 1))")
		ip netns add "$h"
		ip -n "$h" link set lo up
		ip -n "$sw" link add "v$id$i" type veth peer name eth0 netns "$h"
		ip -n "$sw" link set "v$id$i" master br0 up
		ip -n "$h" addr add "${addr[i]}/24" dev eth0
		ip -n "$h" link set eth0 up
	done
	umask 077
	od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$work/cluster.key"
	echo >>"$work/cluster.key"
	umask 022
	seed=${addr[0]}:7946
	# agent I: starts host I's agent (2 slots) and waits for its gossip line.
	agent() {
		local i=$1 join=() t
		((i > 0)) && join=(--join "$seed")
		: >"$out/agent-h$i.log"
		ip netns exec "${hosts[i]}" "$bin/golaunch" agent --bind "${addr[i]}:7946" --slots 2 --keyfile "$work/cluster.key" --name "h$i" "${join[@]}" \
			>>"$out/agent-h$i.log" 2>&1 &
		disown # stop_host ends it, by its namespace
		for ((t = 0; t < 100; t++)); do
			grep -qs "golaunch agent h$i: gossip" "$out/agent-h$i.log" && return 0
			sleep 0.1
		done
		echo "ftbench: agent h$i did not start:" >&2
		cat "$out/agent-h$i.log" >&2
		exit 1
	}
	# stop_host I: SIGTERM to every process of host I (its agent leaves the cluster), SIGKILL
	# to what is left after 10 s.
	stop_host() {
		local t pids
		pids=$(ip netns pids "${hosts[$1]}")
		[[ -n $pids ]] && kill -TERM $pids 2>/dev/null
		for ((t = 0; t < 100; t++)); do
			[[ -z $(ip netns pids "${hosts[$1]}") ]] && return 0
			sleep 0.1
		done
		pids=$(ip netns pids "${hosts[$1]}")
		[[ -n $pids ]] && kill -9 $pids 2>/dev/null
		return 0
	}
	# submit ARGS: golaunch --ft ARGS from h0; strike_job runs it in the background, a subshell
	# that exec makes the job itself.
	submit() { exec ip netns exec "${hosts[0]}" "$bin/golaunch" --join "$seed" --keyfile "$work/cluster.key" --ft --timeout 2m --tag-output=false "$@"; }
	agent 0
	agent 1
	if [[ " $cases " == *" agent "* ]]; then
		agent 2
		sleep 1
		# kill_host DIR K: SIGKILL to every process of h1 (K odd) or h2 (K even).
		kill_host() {
			local v=$((2 - $2 % 2)) pids
			pids=$(ip netns pids "${hosts[v]}")
			printf '%s\n' "$EPOCHREALTIME" >"$1/mark"
			kill -9 $pids 2>/dev/null || true # ip netns pids may list a process that just ended
			victim=$v
		}
		for ((k = 1; k <= kills; k++)); do
			victim=
			strike_job kill_agent "$k" "$work/job" kill_host submit -n 6 -H h0:2,h1:2,h2:2 "$bin/ftbench" --case kill --pause "$pause"
			if [[ -n $victim ]]; then
				stop_host "$victim"
				agent "$victim"
				sleep 1 # the others see it alive again
			fi
		done
		stop_host 2
		sleep 1
		echo "ftbench: agent done" >&2
	fi
	if [[ " $cases " == *" join "* ]]; then
		# join_host DIR K: starts h2's agent, which joins the cluster.
		join_host() {
			printf '%s\n' "$EPOCHREALTIME" >"$1/mark"
			agent 2
		}
		for ((k = 1; k <= kills; k++)); do
			strike_job join "$k" "$work/job" join_host submit -n 4 -H h0:2,h1:2 "$bin/ftbench" --case join --grow-to 6 --pause "$pause"
			stop_host 2
			sleep 1 # the others see it leave
		done
		echo "ftbench: join done" >&2
	fi
fi

if [[ " $cases " == *" verdicts "* ]]; then
	if [[ $(id -u) == 0 ]] && command -v ip >/dev/null; then
		GORMA_TEST_LOAD_FT_JOBS=${VERDICT_JOBS:-100} go test -count=1 -v -run '^TestNetnsLoadFTNoFalseVerdicts$' ./launcher/ \
			>"$out/verdicts.log" 2>&1 || fail "verdicts: the test failed ($out/verdicts.log)"
		echo "ftbench: verdicts done" >&2
	else
		echo "ftbench: verdicts need root and iproute2 (network namespaces): skipped" >&2
	fi
fi

if [[ " $cases " == *" cost "* ]]; then
	# cost FT R: one run of both operations, with --ft (FT=ft) or without (FT=base).
	cost() {
		local ft=() name=$1 r=$2
		[[ $name == ft ]] && ft=(--ft)
		"$bin/golaunch" "${ft[@]}" -n 2 --tag-output=false "$bin/allreducebench" --test allreduce --sizes 8 --iters 20000 \
			--json="$out/cost_ar_${name}_$r.json" >"$out/cost_ar_${name}_$r.txt" 2>&1 || fail "cost_ar $name $r: golaunch exited $?"
		"$bin/golaunch" "${ft[@]}" -n 2 --tag-output=false "$bin/rmabench" --test put_lat.lock_all --min-size 8 --max-size 8 \
			--json="$out/cost_rma_${name}_$r.json" >"$out/cost_rma_${name}_$r.txt" 2>&1 || fail "cost_rma $name $r: golaunch exited $?"
	}
	# pair R: run R of both, --ft first in odd runs.
	pair() {
		if (($1 % 2)); then cost ft "$1"; cost base "$1"; else cost base "$1"; cost ft "$1"; fi
	}
	for ((r = 1; r <= runs; r++)); do
		if command -v flock >/dev/null; then
			(
				flock 9
				pair "$r"
			) 9>"$lock"
		else
			pair "$r"
		fi
	done
	echo "ftbench: cost done" >&2
fi

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//; s/"/\\"/g')
printf '{"command": "make ftbench", "cores": %d, "cpu": "%s", "load_start": "%s", "load_end": "%s"}\n' \
	"$(nproc)" "$cpu" "$load_start" "$(cut -d' ' -f1-3 /proc/loadavg)" >"$out/meta.json"
[[ -n ${NO_PAGE:-} ]] && exit 0
go run ./bench/chart ft --in "$out" ${COST_FROM:+--cost "$COST_FROM"} --out docs/ft.json
go run ./bench/chart page --in docs/benchmarks.json --out docs/benchmarks.md
