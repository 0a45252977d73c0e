#!/usr/bin/env bash
# Everything CI checks, in one script: formatting, vet, staticcheck (a
# pinned version), tidiness of each module on its own (without go.work) and
# race-enabled tests in every module of the tree (each directory with a
# go.mod, which go.work must use; it fails if the two lists differ), every
# benchmark once, and the outage demo's claims on real loopback HTTP. Run it
# from anywhere:
#
#	./test.sh
#
# It fails, never skips, when something it needs is missing.
set -euo pipefail
cd "$(dirname "$0")"

command -v go >/dev/null || { echo "test.sh: go is not on PATH" >&2; exit 1; }
command -v gofmt >/dev/null || { echo "test.sh: gofmt is not on PATH" >&2; exit 1; }
[ -f go.work ] || { echo "test.sh: go.work is missing" >&2; exit 1; }

# The modules are the directories with a go.mod (testdata and hidden
# directories aside), as paths relative to here: ".", "bench", ...
mapfile -t modules < <(
  find . \( -name testdata -o -name '.?*' \) -prune -o -name go.mod -printf '%h\n' |
    sed 's|^\./||' | sort
)
# The ones go.work uses, in the same form.
mapfile -t used < <(
  go work edit -json | sed -n 's|^[[:space:]]*"DiskPath": "\(.*\)"$|\1|p' |
    sed 's|^\./||; s|/$||' | sort
)
if [ "${modules[*]}" != "${used[*]}" ]; then
  echo "test.sh: the modules in the tree and those go.work uses differ:" >&2
  diff <(printf '%s\n' "${modules[@]}") <(printf '%s\n' "${used[@]}") | sed 's/^</  only in the tree:/; s/^>/  only in go.work:/' | grep '^  ' >&2
  exit 1
fi
echo "== modules: ${modules[*]}"

# rampartredis's tests start their own redis-server (Debian's package),
# and a three-master Redis Cluster of them, which redis-cli --cluster
# create joins (Debian's redis-tools); CI runs as root and installs them
# when missing. CI=1 makes a missing one fail those tests, never skip.
command -v redis-server >/dev/null || {
  echo "== installing redis-server"
  apt-get update && apt-get install -y --no-install-recommends redis-server
}
command -v redis-cli >/dev/null || {
  echo "== installing redis-tools (redis-cli)"
  apt-get update && apt-get install -y --no-install-recommends redis-tools
}
command -v redis-server >/dev/null || { echo "test.sh: redis-server is not on PATH" >&2; exit 1; }
command -v redis-cli >/dev/null || { echo "test.sh: redis-cli is not on PATH" >&2; exit 1; }
export CI="${CI:-1}"

# examples/outage's tests drive Debian's chromium (headless) on the live
# page, and run a real prometheus (and promtool) on the demo's metrics and
# the alert rules; installed when missing, as redis-server is.
for pkg in chromium:chromium prometheus:prometheus prometheus:promtool; do
  command -v "${pkg#*:}" >/dev/null || {
    echo "== installing ${pkg%%:*}"
    apt-get update && apt-get install -y --no-install-recommends "${pkg%%:*}"
  }
  command -v "${pkg#*:}" >/dev/null || { echo "test.sh: ${pkg#*:} is not on PATH" >&2; exit 1; }
done

echo "== gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

# staticcheck, pinned: installed from the Go module proxy into a
# directory of this run's own, so a fresh CI machine needs nothing else.
staticcheck_version=v0.8.2
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
echo "== installing staticcheck $staticcheck_version"
GOBIN="$bin" go install "honnef.co/go/tools/cmd/staticcheck@$staticcheck_version"

for m in "${modules[@]}"; do
  echo "== go vet, staticcheck ($m)"
  (cd "$m" && go vet ./... && "$bin/staticcheck" ./...)
done

# Each module must build on its own, as a user who requires it gets it:
# its go.mod and go.sum are what go mod tidy makes of it without go.work.
for m in "${modules[@]}"; do
  echo "== go mod tidy -diff ($m)"
  (cd "$m" && GOWORK=off go mod tidy -diff) || {
    echo "test.sh: $m is not tidy on its own: run (cd $m && GOWORK=off go mod tidy)" >&2
    exit 1
  }
done

# Tests keep what they make for people to look at (the browser test's
# screenshot) under .artifacts/ (git ignores it), by go test -artifacts.
artifacts="$PWD/.artifacts"
mkdir -p "$artifacts"
for m in "${modules[@]}"; do
  echo "== go test -race ($m)"
  mkdir -p "$artifacts/$m"
  (cd "$m" && go test -race -artifacts -outputdir "$artifacts/$m" ./...)
done
echo "== artifacts in $artifacts"

echo "== bench: every benchmark once (checks each contender's outcome)"
(cd bench && go test -run='^$' -bench=. -benchtime=1x ./...)
echo "== rampartredis: every benchmark once (against its own redis-server)"
(cd rampartredis && go test -run='^$' -bench=. -benchtime=1x ./...)

# The demo's claims on real sockets and real time, alone on the machine and
# without the race detector, whose five- to tenfold slowdown would be
# measured along with the demo. (The same model runs under -race above, on
# synctest's virtual clock, and so does a short loopback run.)
echo "== demo claims (examples/outage on real loopback HTTP, run alone)"
log=$(mktemp)
trap 'rm -rf "$bin" "$log"' EXIT
(cd examples && RAMPART_OUTAGE_TEST=1 go test -count=1 -run '^TestOutage$' -v ./outage) | tee "$log"
grep -q '^--- PASS: TestOutage ' "$log" || { echo "test.sh: TestOutage did not run" >&2; exit 1; }
