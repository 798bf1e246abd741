#!/usr/bin/env bash
# The public API of the root package and of httplock at HEAD against a base
# commit (issue 49: no public name removed or changed), by apidiff
# (golang.org/x/exp/cmd/apidiff, installed from the Go module proxy when
# missing). It prints each package's changes, compatible ones (names
# added) included, and fails when one is incompatible.
#   scripts/apidiff/run.sh [BASE]   (BASE defaults to 91f778b, issue 49's start)
set -euo pipefail
cd "$(dirname "$0")/../.."
base=${1:-91f778b}
git cat-file -e "$base^{commit}" || { echo "no commit $base" >&2; exit 2; }
apidiff=$(go env GOPATH)/bin/apidiff
test -x "$apidiff" || GOFLAGS= go install golang.org/x/exp/cmd/apidiff@latest
export GOWORK=off # the library's module alone
mod=$(go list -m)
out=$(mktemp -d)
cleanup() { git worktree remove --force "$out/base" >/dev/null 2>&1 || true; rm -rf "$out"; }
trap cleanup EXIT
git worktree add --detach -q "$out/base" "$base"
head=$PWD
bad=0
for pkg in "" /httplock; do
  name=${pkg#/}
  file=${name:-root}
  (cd "$out/base" && "$apidiff" -w "$out/$file.base" "$mod$pkg")
  (cd "$head" && "$apidiff" -w "$out/$file.head" "$mod$pkg")
  echo "== ${name:-.} ($mod$pkg): $(git rev-parse --short "$base") -> HEAD $(git rev-parse --short HEAD)"
  diffs=$("$apidiff" "$out/$file.base" "$out/$file.head")
  echo "${diffs:-no changes}"
  test -z "$("$apidiff" -incompatible "$out/$file.base" "$out/$file.head")" || bad=1
done
test "$bad" = 0 || { echo "incompatible changes to the public API" >&2; exit 1; }
