"""benchmarks/compile.py, the compile table's script, keeps running its cases.

Each case is a student's first call in a fresh process; a case that fails prints
"failed" in its row instead of a time, and the table is read by people, not tests. So
here one case of each kind runs once, in the default (tiered) mode, where the first
call compiles nothing and takes a fraction of a second.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_each_kind_of_case_of_the_compile_table_runs_its_first_call(tmp_path):
    out = tmp_path / "table.json"
    env = {**os.environ, "STRAIGHTDOPE_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "benchmarks.compile", "--quick",
                           "--only", "mlp2,lenet,blocks2,chain1k", "--mode", "tiered", "--json", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(out.read_text())["results"]
    # (the blocks cases' labels once had the wrong shape for their (8, 16, 16, 16) output)
    assert {"mlp2/forward", "mlp2/train", "lenet/train", "blocks2/train",
            "chain1k/forward"} <= set(results)
    failed = {case: r["error"] for case, r in results.items() if "error" in r}
    assert not failed, failed
    assert all(r["first_call"] > 0 for r in results.values())
