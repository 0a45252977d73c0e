#!/usr/bin/env bash
# profile.sh BENCH [N] prints where one call of a bench scenario spends its
# instructions, for its floor and for rampart side by side: BENCH names a
# scenario of this module (TimeoutStack, RetryStack, ClosedSuccess,
# OpenReject, ...), whose contenders "floor" and "rampart" each run N calls
# (default 20000) under valgrind's callgrind, counting only inside the
# benchmark loop (--toggle-collect, as instructions.sh does).
#
# Two parts: each function's exclusive instructions per call (its own,
# not its callees'; code inlined into it from another file counted with
# it), for the floor, for rampart and their difference, sorted by the
# difference; then rampart's own hot source lines (callgrind_annotate's
# line counts, per call), with what each call line costs inclusive (the
# "=>" lines). What runs once (set-up, the first call's lazy work) is
# spread over the N calls: under 1 per call at the default N. The profiles
# in bench/profiles/ were made with it:
#
#   bench/profile.sh TimeoutStack >bench/profiles/timeout-stack.txt
#   bench/profile.sh RetryStack >bench/profiles/retry-stack.txt
#
# Needs valgrind (callgrind_annotate comes with it); installs nothing.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v valgrind >/dev/null || ! command -v callgrind_annotate >/dev/null; then
  echo "profile.sh needs valgrind's callgrind and callgrind_annotate, which are not installed." >&2
  echo "Install them (Debian/Ubuntu: apt-get install valgrind) and run again." >&2
  exit 1
fi
if [[ $# -lt 1 || ! $1 =~ ^[A-Za-z0-9]+$ ]]; then
  echo "usage: profile.sh BENCH [N], BENCH a scenario such as TimeoutStack" >&2
  exit 2
fi
bench=$1 n=${2:-20000}
root=$(cd .. && pwd)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/bench.test" .

echo "command: bench/profile.sh $*"
echo "commit: ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
echo "go: $(go env GOVERSION) $(go env GOARCH)"
echo "valgrind: $(valgrind --version)"
echo "cpumodel: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "calls: $n of each contender, instructions per call (exclusive)"
for c in floor rampart; do
  GOGC=off GODEBUG=asyncpreemptoff=1,memprofilerate=0 valgrind --tool=callgrind --callgrind-out-file="$tmp/$c.out" \
    '--toggle-collect=*bench_test.scenario.run.func1' "$tmp/bench.test" -test.run '^$' \
    -test.bench "^Benchmark$bench\$/^$c\$" -test.benchtime "${n}x" -test.cpu 1 >"$tmp/$c.log" 2>&1 || {
    cat "$tmp/$c.log" >&2
    exit 1
  }
  grep -q "^Benchmark$bench/$c" "$tmp/$c.log" || {
    cat "$tmp/$c.log" >&2
    echo "profile.sh: no contender $c in Benchmark$bench" >&2
    exit 1
  }
  # function<TAB>Ir, the function without its file, recursion marks ('2)
  # dropped, so that code inlined from another file adds to its function.
  callgrind_annotate --threshold=100 --auto=no --show-percs=no "$tmp/$c.out" |
    sed -n 's/^ *\([0-9,]*\)  \([^ ].*\)$/\2\t\1/p' | sed 's/ \[[^]]*\]\t/\t/' |
    awk -F'\t' '{ gsub(",", "", $2) }
      $1 != "PROGRAM TOTALS" { f = $1; sub(/^[^:]*:/, "", f); sub(/'"'"'[0-9]+$/, "", f); ir[f] += $2 }
      $1 == "PROGRAM TOTALS" { print "TOTAL\t" $2 }
      END { for (f in ir) print f "\t" ir[f] }' >"$tmp/$c.tsv"
done

echo
echo "| function | floor | rampart | rampart − floor |"
echo "| --- | ---: | ---: | ---: |"
awk -F'\t' -v n="$n" '
  FNR == NR { fl[$1] = $2; next }
  { ra[$1] = $2 }
  END {
    for (f in ra) all[f] = 1
    for (f in fl) all[f] = 1
    for (f in all) {
      if (f == "TOTAL") continue
      a = fl[f] / n; b = ra[f] / n
      if (b - a < 0.5 && a - b < 0.5) { resta += a; restb += b; continue }
      printf "%.1f\t| %s | %.0f | %.0f | %+.0f |\n", b - a, f, a, b, b - a
    }
    printf "%.1f\t| every other function (within half an instruction of the floor) | %.0f | %.0f | %+.0f |\n", -1e9, resta, restb, restb - resta
  }' "$tmp/floor.tsv" "$tmp/rampart.tsv" | sort -t"$(printf '\t')" -k1,1gr | cut -f2-
awk -F'\t' -v n="$n" 'FNR == NR && $1 == "TOTAL" { a = $2 } FNR != NR && $1 == "TOTAL" { b = $2 }
  END { printf "| all (the loop included) | %.0f | %.0f | %+.0f |\n", a / n, b / n, (b - a) / n }' "$tmp/floor.tsv" "$tmp/rampart.tsv"

echo
echo "rampart's source lines run by every call, instructions per call (a line's own; => a call from it and"
echo "what that costs, callees included):"
files=()
for f in circuitbreaker/layer.go circuitbreaker/permit.go retry/retry.go budget/budget.go timeout/timeout.go; do
  files+=("$root/$f")
done
callgrind_annotate --auto=no --show-percs=no --context=1 "$tmp/rampart.out" "${files[@]}" |
  sed -n '/^-- User-annotated source: /,$p' | awk -v n="$n" -v root="$root/" '
    /^-- User-annotated source: / { sub(root, ""); print; next }
    /^ *[0-9][0-9,]* / {
      c = $1; gsub(",", "", c)
      if (c / n < 0.5) next # set-up, not the calls
      rest = substr($0, index($0, $1) + length($1))
      gsub(root, "", rest)
      printf "%8.1f%s\n", c / n, rest
    }
  '
