#!/usr/bin/env python3
"""Pairs rsag with its peers, round by round, from what gpu-proof.sh's
sidebyside piece left in DIR:

  nt-all_reduce-R.txt, nt-reduce_scatter-R.txt   nccl-tests' output
  rsag-batched-R.json                            rsag's summary.json, batched
  seed-R/rank0_*.csv, rsag-ch7-R/rank0_*.csv     the seed's and rsag's CSVs

and prints, per collective and size, the median over the rounds of the
paired ratio rsag / peer (below 1: rsag is faster), with the lowest and
highest; then the seed's contracts and memory rows beside rsag's.

  sidebyside.py DIR ROUNDS
"""
import csv
import json
import statistics
import sys
from pathlib import Path


def nccl_tests(path):
    """Out-of-place time in us by size, from an nccl-tests output."""
    times = {}
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return times
    for line in lines:
        f = line.split()
        if len(f) >= 8 and f[0].isdigit():
            try:
                times[int(f[0])] = float(f[5])
            except ValueError:
                pass
    return times


def rsag_batched(path, mode):
    """rsag's batched median us per operation by size, for mode."""
    try:
        d = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return {t["size_bytes"]: t["median_us"] for t in d.get("timing", [])
            if (t["method"], t["mode"], t["dtype"], t["op"], t["placement"]) ==
            ("batched", mode, "float32", "sum", "out-of-place")}


def rows(path):
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


def per_op(folder):
    """The median of rank 0's durations by (mode, size), from its timings CSV."""
    by = {}
    for r in rows(Path(folder) / "rank0_timings.csv"):
        by.setdefault((r["mode"], int(r["size_bytes"])), []).append(float(r["duration_us"]))
    return {k: statistics.median(v) for k, v in by.items()}


def paired(name, rounds, rsag_of, peer_of, keys):
    print(f"{name}: rsag / peer, the median of {rounds} paired rounds [lowest..highest]")
    for key in keys:
        ratios = []
        for r in range(1, rounds + 1):
            a, b = rsag_of(r).get(key), peer_of(r).get(key)
            if a and b:
                ratios.append(a / b)
        if ratios:
            print(f"  {str(key):>24}  {statistics.median(ratios):6.3f}  [{min(ratios):.3f}..{max(ratios):.3f}]  "
                  f"({len(ratios)} rounds)")
        else:
            print(f"  {str(key):>24}  no pair")


def main():
    d, rounds = Path(sys.argv[1]), int(sys.argv[2])
    sizes = [4096, 65536, 1048576, 16777216]
    for coll, mode in (("all_reduce", "direct"), ("reduce_scatter", "reduce-scatter")):
        paired(f"nccl-tests {coll}_perf (out-of-place time) vs rsag batched {mode}", rounds,
               lambda r, mode=mode: rsag_batched(d / f"rsag-batched-{r}.json", mode),
               lambda r, coll=coll: nccl_tests(d / f"nt-{coll}-{r}.txt"), sizes)
        if (d / "rsag-batched200-1.json").exists():
            paired(f"nccl-tests {coll}_perf vs rsag batched {mode}, 200 operations a sample as nccl-tests' -n 200",
                   rounds, lambda r, mode=mode: rsag_batched(d / f"rsag-batched200-{r}.json", mode),
                   lambda r, coll=coll: nccl_tests(d / f"nt-{coll}-{r}.txt"), sizes)
    keys = [(m, s) for m in ("direct", "decomposed") for s in sizes]
    paired("the seed's per-op medians (rank 0) vs rsag's ch7 (rank 0)", rounds,
           lambda r: per_op(d / f"rsag-ch7-{r}"), lambda r: per_op(d / f"seed-{r}"), keys)
    seed, ours = d / "seed-1", d / "rsag-ch7-1"
    print("contracts (round 1, rank 0): name, the seed's correct, rsag's correct")
    mine = {r["name"]: r["correct"] for r in rows(ours / "rank0_contracts.csv")}
    for r in rows(seed / "rank0_contracts.csv"):
        print(f"  {r['name']:>40}  {r['correct']:>5}  {mine.get(r['name'], 'absent'):>6}")
    print("memory (round 1, rank 0): mode, steady and peak deltas, the seed's / rsag's")
    mine = {r["mode"]: r for r in rows(ours / "rank0_memory.csv")}
    for r in rows(seed / "rank0_memory.csv"):
        m = mine.get(r["mode"])
        if m is None:
            print(f"  {r['mode']:>26}  rsag has no such row")
            continue
        same = "same" if (r["steady_delta_bytes"], r["peak_delta_bytes"]) == (m["steady_delta_bytes"], m["peak_delta_bytes"]) else "DIFFER"
        print(f"  {r['mode']:>26}  steady {r['steady_delta_bytes']} / {m['steady_delta_bytes']}  "
              f"peak {r['peak_delta_bytes']} / {m['peak_delta_bytes']}  {same}")


if __name__ == "__main__":
    main()
