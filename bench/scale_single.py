"""The single-machine audit at scale: streaming through DuckDB in bounded memory (issue 13).

    python bench/scale_single.py --data /work/scale-data/100m                   # stream 100M rows
    python bench/scale_single.py --data /work/scale-data/10m --compare          # also in memory; compare

Each audit runs in a fresh child process, which reports its wall time and its peak resident memory
(``getrusage(RUSAGE_SELF).ru_maxrss``: DuckDB runs in-process, its threads included). An audit is the
pipeline's work without the report and trail: stage the Parquet inputs (globs), validate them with the Great
Expectations suites, align and cube (``streaming``: ``tasks/cube_sql.stream_cube``, the rows never leave
DuckDB; ``in_memory``: ``tasks/align.align_inputs`` into Arrow and ``fairgate.build_cube``), every slicing's
metrics with bootstrap intervals, and the judged document. ``--compare`` checks the streaming document against
the in-memory one: identical counts, every metric to 1e-12, and each histogram AUC within its stated bound of
the exact AUC. Data: ``bench/scale_data.py`` (``--rows`` generates it into ``--data`` when absent).
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

POLICY = {
    "sensitive_attributes": [
        {"name": "race", "values": ["White", "Black", "Hispanic", "Asian", "Other"], "reference_group": "White"},
        {"name": "sex", "values": ["Male", "Female"], "reference_group": "Male"},
        {"name": "age_group", "values": ["18-25", "26-40", "41-60", "60+"]},
        {"name": "region", "values": ["North", "South", "East", "West"]},
    ],
    "metrics": [
        {"name": "demographic_parity_difference", "threshold": 0.1},
        {"name": "equal_opportunity_difference", "threshold": 0.1},
        {"name": "roc_auc_difference", "threshold": 0.05},
    ],
    "intersectional_analysis": {"enabled": True, "min_group_size": 30},
    "statistics": {"n_bootstrap": 200},
}


def run_audit(data: Path, path: str, memory_limit: str, auc: str, auc_bins: int) -> dict[str, Any]:
    """One audit in this process (the child); returns the document's comparable parts and the measurements."""
    import fairgate
    from tasks.audit import build_cube
    from tasks.inputs.align import align_inputs, release, stage
    from tasks.inputs.cube_sql import configure, stream_cube
    from tasks.validation.validate import validate_aligned, validate_inputs

    streaming = "always" if path == "streaming" else "never"
    execution = {"streaming": streaming, "memory_limit": memory_limit, "auc": auc, "auc_bins": auc_bins}
    policy = fairgate.Policy.from_mapping({"fairness_checker": {**POLICY, "execution": execution}})
    started = time.perf_counter()
    staged = stage(policy, *(str(data / role / "*.parquet") for role in ("predictions", "labels", "attributes")))
    with tempfile.TemporaryDirectory(prefix="fairgate-bench-spill-") as spill:
        if path == "streaming":  # DuckDB spills here beyond memory_limit
            configure(staged.con, memory_limit, Path(spill))
        validation = validate_inputs.fn(staged)
        if path == "streaming":
            aligned, cube = stream_cube.fn(staged)
        else:
            aligned = align_inputs.fn(staged)
            cube = build_cube.fn(aligned.table, policy)
            aligned.table = aligned.table.schema.empty_table()
        validate_aligned.fn(staged, aligned, validation)
        release(staged)
    cubed = time.perf_counter()
    parts = [fairgate.compute_slicing(cube, s, policy) for s in fairgate.plan_slicings(cube, policy)]
    document = fairgate.adjudicate(cube, parts, policy).to_dict()
    finished = time.perf_counter()
    return {
        "path": path,
        "rows": cube.n_rows,
        "auc_method": cube.auc_method,
        "seconds": round(finished - started, 1),
        "seconds_to_cube": round(cubed - started, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "alignment": aligned.join_report,
        "groups": document["groups"],
        "results": document["results"],
        "verdict": document["verdict"],
    }


def in_child(data: Path, path: str, memory_limit: str, auc: str, auc_bins: int) -> dict[str, Any]:
    """Run one audit in a fresh Python process, so that its peak memory is its own."""
    command = [sys.executable, __file__, "--child", path, "--data", str(data), "--memory-limit", memory_limit]
    command += ["--auc", auc, "--auc-bins", str(auc_bins)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{path} audit failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def compare(streamed: dict[str, Any], memory: dict[str, Any]) -> list[str]:
    """Differences between the streaming and the in-memory documents beyond the stated tolerances."""
    problems = []
    if streamed["rows"] != memory["rows"] or streamed["alignment"] != memory["alignment"]:
        problems.append("row counts or join report differ")
    if streamed["verdict"] != memory["verdict"]:
        problems.append(f"verdict {streamed['verdict']} != {memory['verdict']}")
    worst_bound = 0.0
    for left, right in zip(streamed["groups"], memory["groups"], strict=True):
        if (left["group"], left["n"], left["rows"]) != (right["group"], right["n"], right["rows"]):
            problems.append(f"group {left['group']} counts differ")
        for name, estimate in left["metrics"].items():
            exact = right["metrics"][name]["value"]
            value = estimate["value"]
            if value is None or exact is None:
                if value != exact:
                    problems.append(f"{name} {left['group']}: {value} != {exact}")
                continue
            bound = estimate.get("error_bound")
            if bound is not None:  # histogram AUC against the exact AUC: within its bound
                worst_bound = max(worst_bound, bound)
                if abs(value - exact) > bound + 1e-12:
                    problems.append(f"{name} {left['group']}: |{value} - {exact}| > bound {bound}")
            elif not math.isclose(value, exact, rel_tol=1e-12, abs_tol=1e-12):
                problems.append(f"{name} {left['group']}: {value} != {exact}")
    print(f"largest AUC error bound: {worst_bound:.2e}")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="a bench/scale_data.py directory")
    parser.add_argument("--rows", type=lambda s: int(s.replace("_", "")), help="generate this many rows if absent")
    parser.add_argument("--parts", type=int, default=20)
    parser.add_argument("--memory-limit", default="2GB", help="DuckDB's memory_limit on the streaming path")
    parser.add_argument("--auc", default="histogram", choices=["exact", "histogram", "auto"])
    parser.add_argument("--auc-bins", type=int, default=8192, help="score histogram bins (execution.auc_bins)")
    parser.add_argument("--compare", action="store_true", help="also audit in memory (exact AUC) and compare")
    parser.add_argument("--child", choices=["streaming", "in_memory"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        auc = args.auc if args.child == "streaming" else "exact"
        print(json.dumps(run_audit(args.data, args.child, args.memory_limit, auc, args.auc_bins)))
        return
    if not (args.data / "manifest.json").exists():
        if args.rows is None:
            raise SystemExit(f"{args.data} holds no generated data; pass --rows to generate it")
        from scale_data import generate  # this script's folder is on sys.path

        generate(args.data, args.rows, args.parts)
    streamed = in_child(args.data, "streaming", args.memory_limit, args.auc, args.auc_bins)
    print(
        f"streaming: {streamed['rows']:,} rows in {streamed['seconds']} s "
        f"(cube after {streamed['seconds_to_cube']} s), peak RSS {streamed['peak_rss_mb']:,} MB, "
        f"AUC {streamed['auc_method']} ({args.auc_bins} bins), DuckDB memory_limit {args.memory_limit}"
    )
    if args.compare:
        memory = in_child(args.data, "in_memory", args.memory_limit, "exact", args.auc_bins)
        print(
            f"in memory: {memory['rows']:,} rows in {memory['seconds']} s, peak RSS {memory['peak_rss_mb']:,} MB, "
            f"AUC {memory['auc_method']}"
        )
        problems = compare(streamed, memory)
        print("results equal (counts identical, metrics to 1e-12, AUC within bound)" if not problems else "DIFFER:")
        for problem in problems[:20]:
            print(f"  {problem}")
        if problems:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
