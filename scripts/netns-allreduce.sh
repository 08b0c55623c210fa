#!/usr/bin/env bash
# Large Allreduce across 4 network-namespace "hosts" against the bandwidth bound
# 2(p-1)/p * n / B, with the link bandwidth B measured in the same run.
#
# Builds 4 network namespaces on a private bridge (10.231.X.0/24 inside namespaces this
# script creates, as launcher/internal/netns does for the tests: the root namespace has
# no route there, so nothing leaves the machine), starts a `golaunch agent` in each with
# a fresh cluster key, and a tcpstream sink (apps/internal/tcpstream). Then, REPS times,
# under flock /tmp/gorma-bench.lock so that the figures of one repetition share the
# machine's speed state:
#   - B single: one raw TCP stream h0 -> h1 (the others idle);
#   - B busy: four streams at once, every host to its ring successor (h0->h1, h1->h2,
#     h2->h3, h3->h0), each host sending and receiving, as a ring Allreduce loads every
#     link; B busy is their mean per link; and the same four streams again tuned as
#     gorma's tcp provider tunes its connections: TCP_NOTSENT_LOWAT as set on those that
#     carry traffic both ways (LOWAT, tcpstream --notsent-lowat), and the provider's TCP
#     congestion control (CC, tcpstream --congestion; the kernel's default may differ):
#     on these links, which are CPU time, a short unsent queue keeps the bytes in cache
#     between the sender's copy and the receiver's, and BBR, where it is the kernel's
#     default, moved half of what CUBIC did, so the tuned streams may move more than the
#     default ones. The bound takes whichever of the two is higher, so the transport's
#     socket tuning cannot pass for a better algorithm;
#   - with A2A=1, B all-to-all: twelve streams at once, every host to each of the three
#     others, as a round of the direct algorithm loads the links (three flows each way on
#     every link); reported per host (the sum of its three streams), for comparison only:
#     it checks that the links, shaped or not, carry that pattern as fast as the ring's
#     (with the default and with the tuned streams);
#   - golaunch --join ... -n 4 -H h0:1,h1:1,h2:1,h3:1 allreducebench (1 rank per host, tcp
#     between all ranks), and, with PPH containing 2, -n 8 with 2 ranks per host (shm on
#     a host, the hierarchical algorithm).
# The summary (python3) gives, per size, the median Allreduce time over the repetitions,
# the bound 2(H-1)/H * n / B with H = 4 hosts (a host's link carries at least that much
# each way, however many ranks the host runs) for each B, and time/bound (the median of
# each repetition's ratio to its own B); it is also written to OUT/summary.md. Since all 4
# "hosts" share the machine's cores, a single stream gets CPU that four concurrent ones
# must share: B busy is the fair B for an Allreduce that keeps every link busy at once.
#
# RATE shapes every link: a token bucket (tc tbf) of that rate on both ends of each host's
# veth, so each host gets a full-duplex link of its own, as hosts on a switch do. Without
# it a "link" runs as fast as the 2 cores copy, and every host's on-host work (the shm
# phases at 2 ranks per host, the combination) takes CPU from every other host's link,
# which no real network does; with a rate well below what the cores copy (1gbit: the four
# links together need about a quarter of them), the links are the bottleneck the bound
# is about. B is measured through the shaped links in the same run, as without RATE.
#
# Usage (as root): scripts/netns-allreduce.sh [REPS]
#   environment: SIZES=1M,4M,16M,64M  PPH="1 2"  ALGO=auto (GORMA_ALLREDUCE)
#                RATE= (unshaped; or a tc rate such as 1gbit)
#                QDELAY=50ms (with RATE, the tbf queue; deep enough that the bursts in
#                which the shared cores run the senders do not overflow it: 2 ms with a
#                64 KiB burst starves four concurrent streams)
#                SCRATCH=arena  STREAM=3s (each B measurement)  MIN_ITERS=10
#                OUT=results/netns-allreduce  BIN=bin (make build first)
#                XENV="NAME=VALUE ..." (more environment for the ranks, such as
#                GORMA_EAGER_LIMIT=1M or GORMA_PROGRESS=block, each passed with -x)
#                ARGS="..." (more allreducebench flags, such as --cpuprofile /tmp/ar.prof)
#                A2A= (1: measure B all-to-all too)
#                LOWAT=32K (the tuned streams' TCP_NOTSENT_LOWAT: the tcp provider's value)
#                CC=cubic (the tuned streams' congestion control: the tcp provider's default;
#                set it alike when XENV sets GORMA_TCP_CONGESTION; empty: the kernel's)
# Cleans up every namespace and process it made on exit (trap).
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
sizes=${SIZES:-1M,4M,16M,64M}
pph=${PPH:-1 2}
algo=${ALGO:-auto}
scratch=${SCRATCH:-arena}
stream=${STREAM:-3s}
rate=${RATE:-}
qdelay=${QDELAY:-50ms}
min_iters=${MIN_ITERS:-10}
lowat=${LOWAT:-32K}
cc=${CC-cubic}
tuned=(--notsent-lowat "$lowat")
[[ -z $cc ]] || tuned+=(--congestion "$cc")
out=${OUT:-results/netns-allreduce}
bin=$(cd "${BIN:-bin}" && pwd)
xenv=()
for kv in ${XENV:-}; do
	[[ $kv == *=* ]] || { echo "netns-allreduce: XENV: want NAME=VALUE, got $kv" >&2; exit 2; }
	xenv+=(-x "$kv")
done
lock=/tmp/gorma-bench.lock

[[ $(id -u) == 0 ]] || { echo "netns-allreduce: network namespaces need root" >&2; exit 2; }
command -v ip >/dev/null || { echo "netns-allreduce: needs iproute2 (ip)" >&2; exit 2; }
[[ -z $rate ]] || command -v tc >/dev/null || { echo "netns-allreduce: RATE needs tc (iproute2)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "netns-allreduce: needs python3 for the summary" >&2; exit 2; }
for b in golaunch allreducebench tcpstream; do
	[[ -x $bin/$b ]] || { echo "netns-allreduce: $bin/$b missing: run make build" >&2; exit 2; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/*.json "$out"/*.txt "$out"/*.log

id=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
prefix=gar$id
subnet=10.231.$((16#${id:0:2} % 250 + 1))
sw=$prefix-sw
hosts=()
cleanup() {
	set +e
	for h in "${hosts[@]}"; do
		pids=$(ip netns pids "$h" 2>/dev/null)
		[[ -n $pids ]] && kill -9 $pids 2>/dev/null
	done
	sleep 0.1
	for h in "${hosts[@]}"; do ip netns del "$h" 2>/dev/null; done
	ip netns del "$sw" 2>/dev/null
	rm -f "$out/cluster.key"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$sw"
ip -n "$sw" link add br0 type bridge
ip -n "$sw" link set br0 up
ip -n "$sw" link set lo up
addr=()
for i in 0 1 2 3; do
	h=$prefix-h$i
	hosts+=("$h")
	addr+=("$subnet.$((i + 1))")
	link=v$id$i
	ip netns add "$h"
	ip -n "$h" link set lo up
	ip -n "$sw" link add "$link" type veth peer name eth0 netns "$h"
	ip -n "$sw" link set "$link" master br0 up
	ip -n "$h" addr add "${addr[i]}/24" dev eth0
	ip -n "$h" link set eth0 up
	if [[ -n $rate ]]; then
		# Both directions: the host's egress, and the switch port's egress towards it.
		# A 256 KiB burst: 2 ms at 1gbit, several GSO packets of 64 KiB.
		ip netns exec "$h" tc qdisc add dev eth0 root tbf rate "$rate" burst 256kb latency "$qdelay"
		ip netns exec "$sw" tc qdisc add dev "$link" root tbf rate "$rate" burst 256kb latency "$qdelay"
	fi
done
in_host() { local i=$1; shift; ip netns exec "${hosts[i]}" "$@"; }

umask 077
od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$out/cluster.key"
echo >>"$out/cluster.key"
umask 022
seed=${addr[0]}:7946
for i in 0 1 2 3; do
	join=()
	((i > 0)) && join=(--join "$seed")
	in_host "$i" "$bin/golaunch" agent --bind "${addr[i]}:7946" --slots 2 --keyfile "$out/cluster.key" --name "h$i" "${join[@]}" \
		>"$out/agent-h$i.log" 2>&1 &
	for ((t = 0; t < 100; t++)); do
		grep -q "golaunch agent h$i: gossip" "$out/agent-h$i.log" && break
		sleep 0.1
	done
	grep -q "golaunch agent h$i: gossip" "$out/agent-h$i.log" || { echo "netns-allreduce: agent h$i did not start:" >&2; cat "$out/agent-h$i.log" >&2; exit 1; }
	in_host "$i" "$bin/tcpstream" sink --listen "${addr[i]}:9000" >"$out/sink-h$i.log" 2>&1 &
done
sleep 0.5

# stream FILE I:J... : one raw TCP stream per pair, host I to host J, started together,
# each with the tcpstream options in the array sopt.
sopt=()
stream() {
	local file=$1 pair i j
	shift
	local at=$(($(date +%s%N) + 300000000))
	local pids=()
	for pair in "$@"; do
		i=${pair%:*} j=${pair#*:}
		in_host "$i" "$bin/tcpstream" send --to "${addr[j]}:9000" --duration "$stream" --start-at "$at" "${sopt[@]}" >"$file.h$i$j" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p"; done
	cat "$file".h* >"$file"
	rm -f "$file".h*
}
ring=(0:1 1:2 2:3 3:0)
a2a=(0:1 0:2 0:3 1:0 1:2 1:3 2:0 2:1 2:3 3:0 3:1 3:2)

ar() { # ar NP HOSTLIST REP
	local np=$1 hl=$2 rep=$3
	in_host 0 env GORMA_ALLREDUCE="$algo" "$bin/golaunch" --join "$seed" --keyfile "$out/cluster.key" -n "$np" -H "$hl" \
		--timeout 10m --tag-output=false -x GORMA_ALLREDUCE "${xenv[@]}" \
		"$bin/allreducebench" --test allreduce --sizes "$sizes" --min-iters "$min_iters" --scratch "$scratch" \
		--json="$out/ar_n${np}_$rep.json" ${ARGS:-} >"$out/ar_n${np}_$rep.txt" 2>&1 ||
		{ echo "netns-allreduce: rep $rep, n=$np failed:" >&2; cat "$out/ar_n${np}_$rep.txt" >&2; exit 1; }
}

for ((rep = 1; rep <= reps; rep++)); do
	(
		flock 9
		stream "$out/b_single_$rep.txt" 0:1
		stream "$out/b_busy_$rep.txt" "${ring[@]}"
		sopt=("${tuned[@]}")
		stream "$out/b_busyl_$rep.txt" "${ring[@]}"
		sopt=()
		if [[ -n ${A2A:-} ]]; then
			stream "$out/b_a2a_$rep.txt" "${a2a[@]}"
			sopt=("${tuned[@]}")
			stream "$out/b_a2al_$rep.txt" "${a2a[@]}"
			sopt=()
		fi
		for k in $pph; do
			case $k in
			1) ar 4 h0:1,h1:1,h2:1,h3:1 "$rep" ;;
			2) ar 8 h0:2,h1:2,h2:2,h3:2 "$rep" ;;
			*) echo "netns-allreduce: PPH: want 1 and/or 2, got $k" >&2; exit 2 ;;
			esac
		done
		stream "$out/b_busy_after_$rep.txt" "${ring[@]}"
		sopt=("${tuned[@]}")
		stream "$out/b_busyl_after_$rep.txt" "${ring[@]}"
	) 9>"$lock"
	echo "netns-allreduce: rep $rep of $reps done ($(cut -d' ' -f1-3 /proc/loadavg))" >&2
done

python3 - "$out" "$reps" "$pph" <<'PY' | tee "$out/summary.md"
import json, re, statistics, sys, os
out, reps, pph = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
def rates(path):
    return [float(m.group(1)) for m in re.finditer(r"([0-9.]+) GB/s", open(path).read())]
med = statistics.median
single = [rates(f"{out}/b_single_{r}.txt")[0] for r in range(1, reps + 1)]
busy = [statistics.mean(rates(f"{out}/b_busy_{r}.txt")) for r in range(1, reps + 1)]
busy_after = [statistics.mean(rates(f"{out}/b_busy_after_{r}.txt")) for r in range(1, reps + 1)]
busy_min = [min(rates(f"{out}/b_busy_{r}.txt")) for r in range(1, reps + 1)]
busyl = [statistics.mean(rates(f"{out}/b_busyl_{r}.txt")) for r in range(1, reps + 1)]
busyl_after = [statistics.mean(rates(f"{out}/b_busyl_after_{r}.txt")) for r in range(1, reps + 1)]
# per repetition, the B of the bound: the higher of the default and the tuned streams,
# each the mean of its measurements before and after the Allreduce runs
bbusy = [max((busy[r] + busy_after[r]) / 2, (busyl[r] + busyl_after[r]) / 2) for r in range(reps)]
print(f"# netns-allreduce: 4 namespace hosts, {reps} repetitions (medians)")
if os.environ.get("RATE"):
    print(f"links shaped to {os.environ['RATE']} each way (tc tbf on both ends of every veth, queue {os.environ.get('QDELAY', '50ms')})")
if os.environ.get("XENV"):
    print(f"rank environment: {os.environ['XENV']}")
print(f"B single stream h0->h1:           {med(single):.3f} GB/s  (runs: {', '.join(f'{x:.3f}' for x in single)})")
print(f"B busy, 4 ring links at once:     {med(busy):.3f} GB/s per link before, {med(busy_after):.3f} after; slowest link {med(busy_min):.3f}")
cc = os.environ.get('CC', 'cubic') or "the kernel's congestion control"
print(f"  same, TCP_NOTSENT_LOWAT {os.environ.get('LOWAT', '32K')}, {cc}: {med(busyl):.3f} GB/s per link before, {med(busyl_after):.3f} after")
print(f"  B busy of the bound (the higher): {med(bbusy):.3f} GB/s  (runs: {', '.join(f'{x:.3f}' for x in bbusy)})")
if os.environ.get("A2A"):
    a2a = [sum(rates(f"{out}/b_a2a_{r}.txt")) / 4 for r in range(1, reps + 1)]
    a2al = [sum(rates(f"{out}/b_a2al_{r}.txt")) / 4 for r in range(1, reps + 1)]
    print(f"B all-to-all, 12 streams at once: {med(a2a):.3f} GB/s per host each way, {med(a2al):.3f} tuned (not used in the bound)")
for k in pph:
    np = 4 * int(k)
    runs = [json.load(open(f"{out}/ar_n{np}_{r}.json")) for r in range(1, reps + 1)]
    # The bound is per link: every host's link must carry 2(H-1)/H*n bytes each way
    # whatever the ranks per host (H hosts), so p here is the number of hosts.
    p = len(runs[0]["hosts"])
    tr = runs[0]["transport"] if p == runs[0]["ranks"] else "shm on a host, tcp across"
    print(f"\n## n={np} ({k} per host), transport {tr}, algorithm {runs[0]['algorithm']}, scratch {runs[0].get('scratch', '?')}")
    print("| bytes | Allreduce us (median) | link GB/s, 2(H-1)/H*n/t | bound us, B busy | time/bound busy | bound us, B single | time/bound single |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for i, row in enumerate(runs[0]["allreduce"]):
        n = row["bytes"]
        t = [r["allreduce"][i]["avg_us"] for r in runs]
        # per repetition: bound with that repetition's B busy (bbusy)
        bb = [2 * (p - 1) / p * n / (bbusy[r] * 1e3) for r in range(reps)]
        bs = [2 * (p - 1) / p * n / (single[r] * 1e3) for r in range(reps)]
        rb = med([t[r] / bb[r] for r in range(reps)])
        rs = med([t[r] / bs[r] for r in range(reps)])
        bus = 2 * (p - 1) / p * n / (med(t) * 1e3)
        print(f"| {n} | {med(t):.1f} | {bus:.3f} | {med(bb):.1f} | {rb:.2f} | {med(bs):.1f} | {rs:.2f} |")
PY
