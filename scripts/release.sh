#!/usr/bin/env bash
# A release (`make release VERSION=x.y.z`): the version written in every place that holds it
# (pyproject.toml, src/bladefl/__init__.py, CITATION.cff with its date), CHANGELOG.md's "Unreleased"
# section become the release's (a new empty one opened above it), one commit "Release x.y.z" and an
# annotated tag vx.y.z on it. Refuses, before changing anything, a version that is not x.y.z, one not
# above the current, a tag that exists, a work tree that is not clean and an empty Unreleased section.
# tests/test_release.py runs it in a throw-away clone; tests/test_cli_surface.py holds the places equal.
set -euo pipefail
version=${VERSION:-}
if ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "VERSION: x.y.z (digits), got '$version'" >&2
  exit 2
fi
cd "$(git rev-parse --show-toplevel)"
current=$(sed -n 's/^version = "\([0-9.]*\)"$/\1/p' pyproject.toml)
newest=$(printf '%s\n%s\n' "$current" "$version" | sort -V | tail -1)
if [ "$version" = "$current" ] || [ "$newest" != "$version" ]; then
  echo "VERSION: $version is not above the current version $current" >&2
  exit 2
fi
if git rev-parse -q --verify "refs/tags/v$version" > /dev/null; then
  echo "VERSION: the tag v$version exists" >&2
  exit 2
fi
if [ -n "$(git status --porcelain)" ]; then
  echo "the work tree is not clean (commit or stash first): a release is one commit of the version alone" >&2
  exit 2
fi
notes=$(awk '/^## \[Unreleased\]/{on=1; next} /^## \[/{on=0} on' CHANGELOG.md | grep -v '^[[:space:]]*$' || true)
if [ -z "$notes" ]; then
  echo "CHANGELOG.md: the Unreleased section is empty: say what the release holds first" >&2
  exit 2
fi
# The commit must be able to happen before any file changes: an identity, and the hooks (pre-commit,
# commit-msg) run now on an empty commit that is thrown away; a refusal changes nothing.
if ! git var GIT_AUTHOR_IDENT > /dev/null 2>&1 || ! git var GIT_COMMITTER_IDENT > /dev/null 2>&1; then
  echo "git has no identity (git config user.name and user.email): the release commit would fail; nothing changed" >&2
  exit 2
fi
if ! probe=$(git commit --allow-empty -q -m "Release $version (probe)" 2>&1); then
  echo "git commit refuses here (${probe%%$'\n'*}): nothing changed" >&2
  exit 2
fi
git reset -q --soft HEAD~1
files=(pyproject.toml src/bladefl/__init__.py CITATION.cff CHANGELOG.md)
# From here on a failure puts every file back as it was, so a later call starts from the same clean tree.
restore() { git checkout -q HEAD -- "${files[@]}"; git reset -q -- "${files[@]}"; echo "release $version: not made; every file put back" >&2; }
trap 'restore' ERR
today=$(date -u +%F)
python3 - "$version" "$today" <<'EOF'
import re
import sys
from pathlib import Path

version, today = sys.argv[1], sys.argv[2]


def replace(path: str, pattern: str, new: str) -> None:
    text = Path(path).read_text()
    out, n = re.subn(pattern, new, text, count=1, flags=re.M)
    if n != 1:
        sys.exit(f"{path}: no line matching {pattern!r}")
    Path(path).write_text(out)


replace("pyproject.toml", r'^version = "[0-9.]+"$', f'version = "{version}"')
replace("src/bladefl/__init__.py", r'^__version__ = "[0-9.]+"$', f'__version__ = "{version}"')
replace("CITATION.cff", r"^version: [0-9.]+$", f"version: {version}")
replace("CITATION.cff", r"^date-released: .*$", f'date-released: "{today}"')
replace("CHANGELOG.md", r"^## \[Unreleased\]$", f"## [Unreleased]\n\n## [{version}] - {today}")
EOF
git add "${files[@]}"
git commit -q -m "Release $version"
trap - ERR
git tag -a "v$version" -m "bladefl $version"
echo "released $version: commit $(git rev-parse --short HEAD), tag v$version (push both: git push --follow-tags)"
