"""Tag a release of the book and archive its built site (``make release``; ``--dry-run`` checks only).

Steps, each of which stops the release when it fails:

1. the work tree has no uncommitted changes to tracked files;
2. the version (``pyproject.toml``, the one source) has no tag ``vX.Y.Z`` yet;
3. ``CITATION.cff`` says the same version, and the Changes and corrections page has a section
   ``## X.Y.Z`` (the corrections that this release carries);
4. ``_build/html`` was built from this very commit (its footer says so, without local changes);
5. ``_build/release/sattn-book-X.Y.Z.tar.gz`` is written from ``_build/html`` (with the PDF and the
   runnable kit when the build made them), then the annotated tag ``vX.Y.Z`` is created.

Pushing the tag and uploading the archive are left to the maintainer (``git push origin vX.Y.Z``).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import book_version  # noqa: E402

ROOT = book_version.ROOT


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", ROOT, *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def checks(html: str) -> tuple[str, list[str]]:
    version = book_version.version()
    problems = []
    if git("status", "--porcelain", "--untracked-files=no"):
        problems.append("the work tree has uncommitted changes: commit them first")
    tag = f"v{version}"
    if git("tag", "--list", tag):
        problems.append(f"tag {tag} exists already: raise the version in pyproject.toml")
    cff = open(os.path.join(ROOT, "CITATION.cff"), encoding="utf-8").read()
    m = re.search(r'^version:\s*"?([^"\n]+)"?', cff, re.M)
    if not m or m.group(1) != version:
        problems.append(f"CITATION.cff says version {m.group(1) if m else None}, pyproject.toml {version}")
    changes = open(os.path.join(ROOT, "chapters", "changes.md"), encoding="utf-8").read()
    if not re.search(rf"^## {re.escape(version)}\b", changes, re.M):
        problems.append(f"chapters/changes.md has no section '## {version}' for this release")
    intro = os.path.join(html, "chapters", "intro.html")
    head = git("rev-parse", "--short", "HEAD")
    if not os.path.exists(intro):
        problems.append(f"no built site in {html}: run make book")
    else:
        text = open(intro, encoding="utf-8").read()
        m = re.search(r'class="book-version-commit">([^<]+)<', text)
        if not m or m.group(1) != head:
            problems.append(f"{html} was built from commit {m.group(1) if m else '?'}, not from "
                            f"HEAD {head}: run make book (make release does)")
    return version, problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--html", default=os.path.join(ROOT, "_build", "html"))
    ap.add_argument("--dry-run", action="store_true", help="run the checks only")
    args = ap.parse_args(argv)
    version, problems = checks(args.html)
    if problems:
        print("release " + version + " stopped:\n  - " + "\n  - ".join(problems), file=sys.stderr)
        return 1
    if args.dry_run:
        print(f"release {version}: all checks passed (dry run, nothing written)")
        return 0
    out_dir = os.path.join(ROOT, "_build", "release")
    os.makedirs(out_dir, exist_ok=True)
    archive = os.path.join(out_dir, f"sattn-book-{version}.tar.gz")
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(args.html, arcname=f"sattn-book-{version}")
    git("tag", "-a", f"v{version}", "-m", f"Release {version} of the book")
    print(f"release {version}: tagged v{version} at {git('rev-parse', '--short', 'HEAD')}; "
          f"site archived in {os.path.relpath(archive, ROOT)} "
          f"({os.path.getsize(archive) / 1e6:.1f} MB). Push with: git push origin v{version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
