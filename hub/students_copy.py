"""The copy of the series that students pull: this checkout's HEAD without the instructor's files.

nbgitpuller clones a whole branch, so the answers must not be on the branch its link names.
This builds that branch in a bare repository (``make students``; default
``build/students.git``, branch ``main``): the tree of HEAD minus :data:`EXCLUDED`, committed
on top of the copy's previous commit, so a student who clicks the link again gets an
ordinary new commit that nbgitpuller merges into their edited files. Nothing else of the
checkout's history reaches the copy (its objects are fetched, used and pruned again), so a
clone of it, or a look through its object store, finds no solution.

Serve it as it is (``file://`` path, as the tests and ``make hub`` do, or ``git daemon``),
or push its ``main`` to the Git host the course uses.

Usage::

    python hub/students_copy.py build/students.git [--source .]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

#: Paths left out of the students' copy, with the reason.
EXCLUDED = {
    "notebooks/solutions": "the exercises' master, answers included",
    "tests": "the checkers' tests hold right answers (exercise_mistakes.py, test_exercises.py)",
    "hub": "the instructor's hub, proxy and nbgrader setup",
    "deploy": "the instructor's Kubernetes deployment",
}
BRANCH = "main"
AUTHOR = ("attention-notebooks", "students-copy@localhost")


def git(*args: str, git_dir: Path, env: dict[str, str] | None = None) -> str:
    out = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    return out.stdout.strip()


def build(target: Path, source: Path = Path(".")) -> str:
    """Commit HEAD of ``source`` minus :data:`EXCLUDED` to ``target``'s ``main``; return its id.

    The same tree as the copy's last commit makes no new commit.
    """
    target = Path(target).resolve()
    if not (target / "HEAD").exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "init", "-q", "--bare", f"--initial-branch={BRANCH}", str(target)], check=True
        )
    source_head = subprocess.run(
        ["git", "-C", str(source), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    git("fetch", "-q", "--no-tags", str(Path(source).resolve()), source_head, git_dir=target)
    with tempfile.TemporaryDirectory() as scratch:
        # A scratch index, and an empty work tree so that git compares with nothing on disk.
        index = {"GIT_INDEX_FILE": str(Path(scratch) / "index"), "GIT_WORK_TREE": scratch}
        git("read-tree", source_head, git_dir=target, env=index)
        git(
            "rm",
            "-r",
            "-q",
            "-f",
            "--cached",
            "--ignore-unmatch",
            *EXCLUDED,
            git_dir=target,
            env=index,
        )
        tree = git("write-tree", git_dir=target, env=index)
    try:
        previous = git("rev-parse", "-q", "--verify", f"refs/heads/{BRANCH}", git_dir=target)
    except subprocess.CalledProcessError:
        previous = ""
    if previous and git("rev-parse", f"{previous}^{{tree}}", git_dir=target) == tree:
        commit = previous
    else:
        name, email = AUTHOR
        who = {
            f"GIT_{role}_{part}": value
            for role in ("AUTHOR", "COMMITTER")
            for part, value in (("NAME", name), ("EMAIL", email))
        }
        parents = ["-p", previous] if previous else []
        message = f"Students' copy of {source_head[:12]} (without {', '.join(EXCLUDED)})"
        commit = git("commit-tree", tree, *parents, "-m", message, git_dir=target, env=who)
        git("update-ref", f"refs/heads/{BRANCH}", commit, git_dir=target)
    # The fetched history (solutions included) is referenced by nothing but FETCH_HEAD:
    # drop it, so the copy's object store holds only what its branch needs.
    (target / "FETCH_HEAD").unlink(missing_ok=True)
    git("reflog", "expire", "--expire=now", "--all", git_dir=target)
    git("gc", "-q", "--prune=now", git_dir=target)
    return commit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", type=Path, help="bare repository to create or update")
    parser.add_argument("--source", type=Path, default=Path("."), help="checkout (default .)")
    args = parser.parse_args(argv)
    commit = build(args.target, args.source)
    print(f"{args.target}: branch {BRANCH} at {commit[:12]} (left out: {', '.join(EXCLUDED)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
