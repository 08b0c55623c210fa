#!/usr/bin/env bash
# Prints a verbsperf JSON document (verbsperf --json=FILE) as Markdown:
# the machine, the summary checks, and one table per test.
# Usage: scripts/bench-summary.sh results/verbsperf.json [--tables]
set -euo pipefail
if [ $# -lt 1 ] || [ ! -f "$1" ]; then
	echo "usage: $0 VERBSPERF.json [--tables]" >&2
	exit 2
fi
command -v python3 >/dev/null || { echo "$0: needs python3" >&2; exit 1; }
python3 - "$@" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
tables = "--tables" in sys.argv[2:]
m = doc["machine"]
print(f"Run {doc['timestamp']}, {doc['go_version']}, {m['cpu_model']}, nproc {m['nproc']}, "
      f"kernel {m['kernel']}, wait={doc['config']['wait']}, {doc['elapsed_s']} s\n")
print("| check | figure | target | verdict |")
print("|---|---|---|---|")
for c in doc["summary"]:
    met = c.get("met")
    fig = "not measured" if met is None else f"{c['value']:.3f} {c['unit']}"
    verdict = "n/a" if met is None else ("ok" if met else "MISS")
    detail = f" ({c['detail']})" if c.get("detail") else ""
    print(f"| {c['name']} | {fig}{detail} | {c['target']} | {verdict} |")
if not tables:
    sys.exit(0)
for r in doc["results"]:
    name = " ".join(x for x in (r["provider"], r["test"], r.get("mode", "")) if x)
    print(f"\n#### {name}\n\n{r.get('title', '')}\n")
    if r.get("skipped"):
        print(f"skipped: {r['skipped']}")
        continue
    if r["kind"] == "latency":
        print("| bytes | iterations | median us | avg us | p99 us |\n|---:|---:|---:|---:|---:|")
        for w in r["rows"]:
            print(f"| {w['bytes']} | {w['iterations']} | {w.get('median_us', 0):.3f} | {w.get('avg_us', 0):.3f} | {w.get('p99_us', 0):.3f} |")
    else:
        print("| bytes | iterations | GB/s | Mmsg/s |\n|---:|---:|---:|---:|")
        for w in r["rows"]:
            print(f"| {w['bytes']} | {w['iterations']} | {w.get('gbps', 0):.3f} | {w.get('mmsg_per_s', 0):.3f} |")
    if r.get("note"):
        print(f"\n{r['note']}")
PY
