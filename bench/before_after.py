"""Benchmark a change: run bench scripts of two git revisions alternately, side by side.

Each revision is checked out into a temporary git worktree and runs its own bench script on its
own package (``PYTHONPATH`` set to the worktree, the working directory outside both trees), in
fresh processes, alternating ``old``, ``new``, ``old``, ``new``, ... so that drifts of a shared
machine hit both sides alike. The scripts' own output (their ratios to their baselines: the
plain-transformers floor, the naive renderer) is printed for each run; compare those ratios
between the sides rather than raw seconds.

Usage::

    python bench/before_after.py fb62b33 HEAD
    python bench/before_after.py fb62b33 HEAD --rounds 3 \\
        --script "logit_lens.py --shapes 8x64,16x256 --kinds step,floor --rounds 1" \\
        --script "demo_model.py --rounds 5" --script "payload_size.py" \\
        --script "widget_render.py --runs 15"
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SCRIPTS = (
    "logit_lens.py --shapes 8x64,16x256 --kinds step,floor --rounds 1",
    "demo_model.py --rounds 5",
    "payload_size.py",
)


def worktree(revision: str, where: Path) -> Path:
    """A checkout of ``revision`` at ``where`` (a git worktree, removed by the caller)."""
    subprocess.run(
        ["git", "worktree", "add", "--detach", "-f", str(where), revision],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return where


def run(tree: Path, script: str) -> str:
    """One bench script of ``tree`` on ``tree``'s package, in a fresh process."""
    name, *args = shlex.split(script)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, str(tree / "bench" / name), *args],
        cwd=tempfile.gettempdir(),  # not inside either tree: its package must not shadow
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return "\n".join(lines[-12:]) if done.returncode == 0 else f"failed: {done.stderr[-2000:]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", help="the revision before the change (e.g. fb62b33)")
    parser.add_argument("new", help="the revision after it (e.g. HEAD)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--script", action="append", help="a bench script and its arguments")
    args = parser.parse_args()
    scripts = args.script or list(DEFAULT_SCRIPTS)
    with tempfile.TemporaryDirectory() as scratch:
        trees = {}
        try:
            for side in ("old", "new"):
                revision = getattr(args, side)
                trees[side] = worktree(revision, Path(scratch) / side)
            for script in scripts:
                for round_ in range(1, args.rounds + 1):
                    for side in ("old", "new"):
                        print(f"== {script} | {side} ({getattr(args, side)}) round {round_}")
                        print(run(trees[side], script), flush=True)
        finally:
            for tree in trees.values():
                subprocess.run(
                    ["git", "worktree", "remove", "--force", str(tree)],
                    cwd=ROOT,
                    capture_output=True,
                    check=False,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
