#!/usr/bin/env bash
# Publish the book in one command: build it (site + reader notebooks) and push
# the site to the branch the launch buttons open, with ghp-import.
#
#   bash scripts/publish.sh [--remote NAME] [--no-build] [--dry-run]
#
# Where it goes is read from _config.yml, the one place it is set:
# repository.url (the GitHub repository; also every set-up cell's REPO_URL)
# and repository.branch (default gh-pages). The pushed branch holds the HTML
# and, next to each chapter's page, its reader notebook (notebooks/NN.ipynb),
# which is what "Launch in Colab" and the download button serve. Enable GitHub
# Pages for that branch once, in the repository's settings.
#
# The reader notebooks install the library at the commit they were built from,
# so this stops unless the working tree is clean and that commit is on the
# remote already (push it first). --remote: the git remote whose URL is
# repository.url (default origin). --dry-run: build and check, push nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
REMOTE=origin BUILD=1 DRY=0
while [ $# -gt 0 ]; do
  case "$1" in
    --remote) REMOTE=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --dry-run) DRY=1; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "publish.sh: unknown argument $1 (use --remote NAME, --no-build, --dry-run)" >&2; exit 2 ;;
  esac
done
die() { echo "publish.sh: $*" >&2; exit 1; }
[ -x .venv/bin/python ] || bash scripts/setup.sh
read -r URL BRANCH < <(.venv/bin/python -c '
import yaml
repo = yaml.safe_load(open("_config.yml"))["repository"]
print(repo["url"].rstrip("/"), repo.get("branch") or "gh-pages")')
[ "$BRANCH" != main ] && [ "$BRANCH" != master ] || die "repository.branch in _config.yml is $BRANCH; it must be a branch for the built site (e.g. gh-pages), not the sources"

# the remote must be the repository the launch buttons and set-up cells name
norm() { echo "$1" | sed -E 's#^git@github.com:#https://github.com/#; s#\.git$##; s#/$##'; }
REMOTE_URL=$(git remote get-url "$REMOTE" 2>/dev/null) || die "no git remote '$REMOTE' (add it: git remote add $REMOTE $URL)"
[ "$(norm "$REMOTE_URL")" = "$(norm "$URL")" ] || \
  die "remote '$REMOTE' is $REMOTE_URL, but _config.yml's repository.url is $URL; fix one of them or pass --remote"

[ -z "$(git status --porcelain --untracked-files=no)" ] || \
  die "the working tree has uncommitted changes; the reader notebooks pin the commit they are built from, so commit first"
SHA=$(git rev-parse HEAD)
git fetch -q "$REMOTE" || die "cannot fetch from $REMOTE ($REMOTE_URL)"
[ -n "$(git branch -r --contains "$SHA" --list "$REMOTE/*")" ] || \
  die "commit $SHA is not on $REMOTE yet; push it (the reader notebooks' set-up cells install the library from it)"

[ "$BUILD" = 0 ] || bash scripts/build_book.sh
.venv/bin/python - "$SHA" <<'EOF'
import json, sys
from pathlib import Path
import yaml
sha = sys.argv[1]
toc = yaml.safe_load(open("_toc.yml"))
docs = [c["file"] for part in toc["parts"] for c in part["chapters"] if Path(f"{c['file']}.ipynb").exists()]
for doc in docs:
    page = Path("_build/html") / f"{doc}.ipynb"
    if not page.exists():
        sys.exit(f"publish.sh: {page} missing: the build did not write the reader notebooks")
    commit = json.loads(page.read_text())["metadata"]["distbook"]["commit"]
    if commit != sha:
        sys.exit(f"publish.sh: {page} was built from {commit or 'no commit'}, not HEAD {sha}: build again")
print(f"{len(docs)} reader notebooks, built from {sha}")
EOF
if [ "$DRY" = 1 ]; then
  echo "dry run: would push _build/html to $REMOTE ($URL) branch $BRANCH"
  exit 0
fi
.venv/bin/ghp-import --no-jekyll --push --force --remote "$REMOTE" --branch "$BRANCH" \
  --message "Publish the book built from $SHA" _build/html
OWNER_REPO=${URL#https://github.com/}
echo "Published to $URL (branch $BRANCH). Site: https://${OWNER_REPO%%/*}.github.io/${OWNER_REPO#*/}/"
echo "Colab: https://colab.research.google.com/github/$OWNER_REPO/blob/$BRANCH/notebooks/01_ring.ipynb"
