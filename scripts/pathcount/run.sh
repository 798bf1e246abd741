#!/usr/bin/env bash
# Counts the functions, calls and files of a locked First and of the
# holder's Save (issue 34's budget), on SQLite and on the servers the
# environment names (OFFLINELOCK_POSTGRES_DSN, OFFLINELOCK_MYSQL_DSN).
#   scripts/pathcount/run.sh [-v]   (-v lists the functions)
set -euo pipefail
cd "$(dirname "$0")/../.."
export GOWORK=off # the library's module alone
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mod=$(go list -m)
flags=("$@")
go build -cover -covermode=atomic -coverpkg="$mod,$mod/internal/...,$mod/scripts/pathcount/probe" -o "$out/probe" ./scripts/pathcount/probe
go build -o "$out/count" ./scripts/pathcount
run() { # name dsn
  GOCOVERDIR="$out/gocover" "$out/probe" -out "$out/$1" -db "$1" -dsn "$2"
  for p in "$out/$1"/*/; do
    go tool covdata textfmt -i="$p" -o "$p/profile.txt"
    printf '%-9s %-13s ' "$1" "$(basename "$p")"
    "$out/count" -profile "$p/profile.txt" -module "$mod" -dir . "${flags[@]}"
  done
}
mkdir -p "$out/gocover"
run sqlite "file:$out/probe.db"
[ -z "${OFFLINELOCK_POSTGRES_DSN:-}" ] || run postgres "$OFFLINELOCK_POSTGRES_DSN"
[ -z "${OFFLINELOCK_MYSQL_DSN:-}" ] || run mysql "$OFFLINELOCK_MYSQL_DSN"
