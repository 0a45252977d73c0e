#!/usr/bin/env bash
# Runs rampart's side-by-side benchmarks and summarises them.
#
#   bench/run.sh [results.txt]
#
# Serial benchmarks run at -cpu 1, their RunParallel twins (BenchmarkXParallel)
# at -cpu 2, each -count 6 times (override with COUNT, BENCHTIME, SERIAL_CPU,
# PARALLEL_CPU). Writes the raw results, benchstat's summary next to them
# (results.benchstat.txt) and the README's tables (results.md).
# About 6 minutes on a 2-core machine. Other load on the machine distorts
# the numbers, parallel ones most: run it on an idle machine, or at least
# ahead of the other processes (nice -n -10 bench/run.sh, as root).
set -euo pipefail
cd "$(dirname "$0")"

out=${1:-results.txt}
count=${COUNT:-6}
benchtime=${BENCHTIME:-500ms}
serial_cpu=${SERIAL_CPU:-1}
parallel_cpu=${PARALLEL_CPU:-2}

all=$(go test -list '^Benchmark' . | grep '^Benchmark')
serial=$(grep -v 'Parallel$' <<<"$all" | paste -sd'|')
parallel=$(grep 'Parallel$' <<<"$all" | paste -sd'|')

{
  echo "commit: ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  echo "go: $(go env GOVERSION)"
  echo "nproc: $(nproc)"
  echo "cpumodel: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
} >"$out"
flags=(-run '^$' -benchmem -count "$count" -benchtime "$benchtime")
go test "${flags[@]}" -cpu "$serial_cpu" -bench "^($serial)\$" . | tee -a "$out"
go test "${flags[@]}" -cpu "$parallel_cpu" -bench "^($parallel)\$" . | tee -a "$out"

go tool benchstat "$out" >"${out%.txt}.benchstat.txt"
go run ./cmd/benchtable "$out" >"${out%.txt}.md"
echo "wrote $out, ${out%.txt}.benchstat.txt, ${out%.txt}.md"
