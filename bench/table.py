#!/usr/bin/env python3
"""Prints the comparison table of bench/compare.sh from the results it collected.

Inputs (all optional; a missing one shows as "—"):
  target/criterion/<group>/<id>/new/estimates.json   our criterion benches
  bench/results/adk-rust.jsonl                       the adk-rust anchor (one JSON per line)
  bench/results/python/*_r*.json                     the Python anchors (run_all.sh output)
  bench/results/w5_memory.txt                        our W5 memory bench output
"""
import glob, json, os, re, statistics, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CRIT = os.path.join(ROOT, "target", "criterion")
RES = os.path.join(ROOT, "bench", "results")


def crit_ns(path):
    f = os.path.join(CRIT, path, "new", "estimates.json")
    if not os.path.exists(f):
        return None
    return json.load(open(f))["median"]["point_estimate"]


def ours(kind):
    out = {}
    ns = crit_ns(f"w1_transfer/{kind}")
    out["W1"] = ns / 1e6 if ns else None
    for h in (10, 100, 1000):
        ns = crit_ns(f"w2_history/{kind}/{h}")
        out[f"W2 H={h}"] = ns / 1e6 if ns else None
    ns = crit_ns(f"w3_stream/{kind}")
    out["W3"] = 10_000 / (ns / 1e9) if ns else None
    ns = crit_ns(f"w4_chain/{kind}/10")
    out["W4 D=10"] = ns / 1e6 if ns else None
    ns = crit_ns(f"w5_concurrent/{kind}/10000")
    out["W5"] = 10_000 / (ns / 1e9) if ns else None
    return out


def adk_rust():
    f = os.path.join(RES, "adk-rust.jsonl")
    out = {}
    if os.path.exists(f):
        for line in open(f):
            line = line.strip()
            if line.startswith("{"):
                d = json.loads(line)
                out[d["workload"]] = d["value"]
    return out


PY_KEYS = {
    "adk": ("W1_transfer", "W2_history_H{h}", "W3_stream", "W4_depth_D10"),
    "openai_agents": ("W1_transfer", "W2_history_H{h}", "W3_stream", "W4_depth_D10"),
    "langgraph": ("raw_W1_transfer", "raw_W2_history_H{h}", "W3_stream_messages_mode", "raw_W4_depth_D10"),
    "langgraph_swarm": ("swarm_W1_transfer", "swarm_W2_history_H{h}", None, "swarm_W4_depth_D10"),
}


def python():
    runs = {}
    for p in sorted(glob.glob(os.path.join(RES, "python", "*_r*.json"))):
        fw = re.sub(r"_r\d+\.json$", "", os.path.basename(p))
        if fw == "calibration":
            continue
        runs.setdefault(fw, []).append(json.load(open(p))["results"])
    out = {}
    for name, (w1, w2, w3, w4) in PY_KEYS.items():
        reps = runs.get("langgraph" if name == "langgraph_swarm" else name, [])

        def med(key, field):
            vals = [r[key][field] for r in reps if key and isinstance(r.get(key), dict) and field in r[key]]
            return statistics.median(vals) if vals else None

        d = {"W1": med(w1, "median_ms"), "W4 D=10": med(w4, "median_ms"),
             "W3": med(w3, "median_chunks_per_s")}
        for h in (10, 100, 1000):
            d[f"W2 H={h}"] = med(w2.format(h=h), "median_ms")
        out[name] = d
    return out


def fmt(v, unit):
    if v is None:
        return "—"
    if unit == "chunks/s" or unit == "sessions/s":
        return f"{v:,.0f}"
    if v < 0.01:
        return f"{v * 1000:.2f} µs"
    return f"{v:.3f} ms" if v < 1 else f"{v:.2f} ms"


def ratio(anchor, mine, unit):
    if anchor is None or mine is None:
        return "—"
    r = mine / anchor if unit in ("chunks/s", "sessions/s") else anchor / mine
    return f"{r:,.0f}×" if r >= 10 else f"{r:.1f}×"


def main():
    chat, fn, ar, py = ours("chat_model_agent"), ours("fn_agent"), adk_rust(), python()
    rows = [("W1 one transfer", "W1", "ms"), ("W2 H=10", "W2 H=10", "ms"), ("W2 H=100", "W2 H=100", "ms"),
            ("W2 H=1000", "W2 H=1000", "ms"), ("W3 stream 10,000 chunks (chunks/s)", "W3", "chunks/s"),
            ("W4 chain of 10", "W4 D=10", "ms")]
    names = ["google-adk 2.13", "openai-agents 0.24", "langgraph 1.2 (raw)", "langgraph-swarm 0.1"]
    keys = ["adk", "openai_agents", "langgraph", "langgraph_swarm"]
    print("| workload | ours: ChatModelAgent | ours: FnAgent | adk-rust 2.3 | " + " | ".join(names)
          + " | adk-rust ÷ ours | best Python ÷ ours |")
    print("|" + " --- |" * (5 + len(names) + 1))
    for label, k, unit in rows:
        pys = [py.get(n, {}).get(k) for n in keys]
        present = [v for v in pys if v is not None]
        best = (max(present) if unit == "chunks/s" else min(present)) if present else None
        cells = [fmt(chat.get(k), unit), fmt(fn.get(k), unit), fmt(ar.get(k), unit)] + [fmt(v, unit) for v in pys]
        print(f"| {label} | " + " | ".join(cells) + f" | {ratio(ar.get(k), chat.get(k), unit)} | "
              f"{ratio(best, chat.get(k), unit)} |")
    if chat.get("W5") or fn.get("W5"):
        print(f"| W5 10,000 concurrent sessions (sessions/s) | {fmt(chat.get('W5'), 'sessions/s')} | "
              f"{fmt(fn.get('W5'), 'sessions/s')} | — | — | — | — | — | — | — |")
    print()
    print("Ratios compare the ChatModelAgent variant (a model calling the transfer tool, like the "
          "anchors); × means ours is that many times faster.")
    mem = os.path.join(RES, "w5_memory.txt")
    if os.path.exists(mem):
        print()
        print(open(mem).read().strip())


if __name__ == "__main__":
    sys.exit(main())
