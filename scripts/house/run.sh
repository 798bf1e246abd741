#!/usr/bin/env bash
# The house's figures (issue 49): the library's import graph drawn by
# package. A room is a package of the library's module that a user's
# program can link: the root, internal/*, httplock and cmd/* (not
# examples/, scripts/ or the other modules of go.work, and not test
# support: a package that imports "testing", such as internal/testkit). An
# arrow is an import from one room to another (test files not counted).
#
# The rooms stand in this order, top to bottom; an arrow may only point
# down or across one floor:
#   floor 0  cmd/*         the commands
#   floor 1  httplock      the HTTP layer over the public API
#   floor 2  the root      the plugin's public API
#   floor 3  internal/*    the concepts below it (model, guard, lockstore,
#                          sqlscan); Go forbids cycles among them
# An arrow runs back up when it goes from a room to a room on a higher
# floor (a smaller number): internal/lockstore importing the root, or the
# root importing httplock, would each be one.
#   scripts/house/run.sh [-v]   (-v lists the rooms and the arrows)
set -euo pipefail
cd "$(dirname "$0")/../.."
export GOWORK=off # the library's module alone
mod=$(go list -m)
verbose=${1:-}

floor() { # import path -> floor number, or nothing when not a room
  local p=${1#"$mod"}
  case "$p" in
    /cmd/*) echo 0 ;;
    /httplock | /httplock/*) echo 1 ;;
    "") echo 2 ;;
    /internal/*) echo 3 ;;
  esac
}

name() { # import path -> its path in the module, "." for the root
  local p=${1#"$mod"}
  echo "${p:-/.}" | cut -c2-
}

declare -A room
lines=$(go list -f '{{.ImportPath}}|{{join .Imports " "}}' ./...)
while IFS='|' read -r pkg imports; do
  f=$(floor "$pkg")
  [ -n "$f" ] || continue
  case " $imports " in *" testing "*) continue ;; esac # test support
  room[$pkg]=$f
done <<<"$lines"

arrows=0 up=0
while IFS='|' read -r pkg imports; do
  [ -n "${room[$pkg]:-}" ] || continue
  for imp in $imports; do
    [ -n "${room[$imp]:-}" ] || continue
    arrows=$((arrows + 1))
    mark=""
    if [ "${room[$imp]}" -lt "${room[$pkg]}" ]; then
      up=$((up + 1))
      mark="  (back up)"
    fi
    if [ "$verbose" = -v ]; then echo "arrow $(name "$pkg") -> $(name "$imp")$mark"; fi
  done
done <<<"$lines"
if [ "$verbose" = -v ]; then
  for r in "${!room[@]}"; do echo "room floor ${room[$r]} $(name "$r")"; done | sort
fi
echo "rooms ${#room[@]} arrows $arrows back-up $up"
