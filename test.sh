#!/usr/bin/env bash
# Everything CI checks, in one script: formatting, vet and race-enabled
# tests in each module (the core, bench, examples, otel, rampartgrpc,
# rampartredis, cmd/rampart-sim), every benchmark once, and the outage
# demo's claims on real loopback HTTP. Run it from anywhere:
#
#	./test.sh
#
# It fails, never skips, when something it needs is missing.
set -euo pipefail
cd "$(dirname "$0")"

modules=(. bench examples otel rampartgrpc rampartredis cmd/rampart-sim)

command -v go >/dev/null || { echo "test.sh: go is not on PATH" >&2; exit 1; }
command -v gofmt >/dev/null || { echo "test.sh: gofmt is not on PATH" >&2; exit 1; }
for m in "${modules[@]}"; do
  [ -f "$m/go.mod" ] || { echo "test.sh: $m/go.mod is missing" >&2; exit 1; }
done
[ -f go.work ] || { echo "test.sh: go.work is missing" >&2; exit 1; }

# rampartredis's tests start their own redis-server (Debian's package);
# CI runs as root and installs it when missing.
command -v redis-server >/dev/null || {
  echo "== installing redis-server"
  apt-get update && apt-get install -y --no-install-recommends redis-server
}
command -v redis-server >/dev/null || { echo "test.sh: redis-server is not on PATH" >&2; exit 1; }

echo "== gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

for m in "${modules[@]}"; do
  echo "== go vet ($m)"
  (cd "$m" && go vet ./...)
done

for m in "${modules[@]}"; do
  echo "== go test -race ($m)"
  (cd "$m" && go test -race ./...)
done

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
trap 'rm -f "$log"' EXIT
(cd examples && RAMPART_OUTAGE_TEST=1 go test -count=1 -run '^TestOutage$' -v ./outage) | tee "$log"
grep -q '^--- PASS: TestOutage ' "$log" || { echo "test.sh: TestOutage did not run" >&2; exit 1; }
