#!/usr/bin/env bash
# Counts the machine instructions one call of each hot path costs, per
# implementation, under valgrind's callgrind: a count that does not depend
# on the machine's load or clock speed, only on the code, the Go version
# and the instruction set, so any amd64 machine with the same Go reproduces
# it (to within the spread bench/README.md states).
#
#   bench/instructions.sh               # writes bench/instructions.md, and the
#                                       # tables of bench/README.md and README.md
#   bench/instructions.sh out.md        # writes out.md only
#   ONLY='Open|Closed' bench/instructions.sh /tmp/x.md   # rows matching a regexp
#   SCALE=4 bench/instructions.sh       # 4x the iterations (less noise, slower)
#   SET=otel bench/instructions.sh out.md   # the observers' rows instead: a
#                                       # breaker alone by observer, from
#                                       # rampartotel's benchmarks
#
# Needs valgrind (Debian and Ubuntu: apt-get install valgrind); it installs
# nothing itself and stops if valgrind is missing. About 4 minutes on an idle
# 2-core machine.
#
# Method. The drivers are this module's benchmarks, built once into one test
# binary: a row is one sub-benchmark (the same contender, configured the
# same way, as in bench/README.md's ns tables), run as its own process
# under callgrind with -test.benchtime=Nx (exactly N calls), collecting only
# inside the function that holds the benchmark loop (--toggle-collect), once
# with N and once with 2N calls. The difference divided by N is the cost of
# one loop iteration: whatever runs once (building the breaker, tripping
# it, the first call's lazy set-up, the benchmark framework) cancels. The
# same measure of the empty loop (BenchmarkBare/loop: b.Loop and a counter)
# is subtracted, so a row is what one call costs, the call into the
# contender included. "Service" rows call svc.Call(ctx, 1) on a
# rampart.Service (the peers wrapped in an adapter with one interface call,
# as rampart's own layers are); "bare" rows call the peer's API or
# context.WithTimeoutCause directly in the loop around the backend, without
# that shape. allocs/call is the benchmark's own allocs/op of the 2N run.
#
# The adapters' rows are counted the same way. "http.Handler" rows call a
# handler's ServeHTTP directly with a minimal ResponseWriter (no network),
# bare and behind a ramparthttp.Handler. "grpc.ClientConn" rows make one
# unary call over bufconn to a real grpc-go server and count the whole
# program (the function column is "-": no --toggle-collect), since the
# call's work is spread over the client's, the server's and the
# transport's goroutines; what runs once cancels as for the other rows,
# but how the scheduler interleaves those goroutines moves a row by a few
# hundred instructions per call from one run to the next (rerun it, or
# use SCALE, before trusting a difference under 1,000).
# "grpc.UnaryClientInterceptor" rows call a client interceptor directly
# with an invoker that returns at once (no grpc-go, no server), counted
# in the loop's function as the Service rows are: the interceptor's own
# work, exact from run to run.
#
# GODEBUG=asyncpreemptoff=1 is set because callgrind aborts on the signal Go
# preempts goroutines with. GOGC=off keeps the collector from running: an
# allocating row counts its allocations (mallocgc) but not the collection
# they cause later, which would otherwise land in some runs and not others
# (a 10% spread on failsafe-go's rows); allocs/call says how much there is.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v valgrind >/dev/null; then
  echo "instructions.sh needs valgrind's callgrind, which is not installed." >&2
  echo "Install it (Debian/Ubuntu: apt-get install valgrind) and run again." >&2
  exit 1
fi

out=${1:-instructions.md}
scale=${SCALE:-1}

# path | implementation | shape | benchmark | function holding the loop | N
loop='bench_test.scenario.run.func1'
rows="
loop|empty loop (baseline)|bare|^BenchmarkBare\$/^loop\$|bench_test.bareLoop|50000
Closed breaker, success|floor: direct call|Service|^BenchmarkClosedSuccess\$/^floor\$|$loop|50000
Closed breaker, success|rampart|Service|^BenchmarkClosedSuccess\$/^rampart\$|$loop|50000
Closed breaker, success|rampart Permit (TryAcquire/Done)|Service|^BenchmarkClosedSuccess\$/^rampart-permit\$|$loop|50000
Closed breaker, success|go-resiliency|Service|^BenchmarkClosedSuccess\$/^resiliency\$|$loop|50000
Closed breaker, success|go-resiliency|bare|^BenchmarkBare\$/^resiliency-closed\$|bench_test.bareResiliencyClosed|50000
Closed breaker, success|sony/gobreaker|Service|^BenchmarkClosedSuccess\$/^gobreaker\$|$loop|20000
Closed breaker, success|failsafe-go|Service|^BenchmarkClosedSuccess\$/^failsafe\$|$loop|10000
Open breaker, rejection|floor: prebuilt error|Service|^BenchmarkOpenReject\$/^floor\$|$loop|50000
Open breaker, rejection|rampart|Service|^BenchmarkOpenReject\$/^rampart\$|$loop|50000
Open breaker, rejection|go-resiliency|Service|^BenchmarkOpenReject\$/^resiliency\$|$loop|50000
Open breaker, rejection|go-resiliency|bare|^BenchmarkBare\$/^resiliency-open\$|bench_test.bareResiliencyOpen|50000
Open breaker, rejection|sony/gobreaker|Service|^BenchmarkOpenReject\$/^gobreaker\$|$loop|20000
Open breaker, rejection|failsafe-go|Service|^BenchmarkOpenReject\$/^failsafe\$|$loop|10000
time-window failure rate, 10% failures|floor: direct call|Service|^BenchmarkTimeWindow\$/^floor\$|$loop|50000
time-window failure rate, 10% failures|rampart|Service|^BenchmarkTimeWindow\$/^rampart\$|$loop|25000
time-window failure rate, 10% failures|sony/gobreaker|Service|^BenchmarkTimeWindow\$/^gobreaker\$|$loop|20000
time-window failure rate, 10% failures|failsafe-go|Service|^BenchmarkTimeWindow\$/^failsafe\$|$loop|10000
retry + budget → breaker, success|floor: direct call|Service|^BenchmarkRetryStack\$/^floor\$|$loop|50000
retry + budget → breaker, success|rampart|Service|^BenchmarkRetryStack\$/^rampart\$|$loop|25000
retry + budget → breaker, success|go-resiliency (no budget)|Service|^BenchmarkRetryStack\$/^resiliency\$|$loop|25000
retry + budget → breaker, success|go-resiliency (no budget)|bare|^BenchmarkBare\$/^resiliency-retrystack\$|bench_test.bareResiliencyRetryStack|25000
retry + budget → breaker, success|failsafe-go|Service|^BenchmarkRetryStack\$/^failsafe\$|$loop|10000
timeout, success|floor: context.WithTimeoutCause|Service|^BenchmarkTimeout\$/^floor\$|$loop|20000
timeout, success|context.WithTimeoutCause|bare|^BenchmarkBare\$/^timeout\$|bench_test.bareTimeoutCause|20000
timeout, success|rampart|Service|^BenchmarkTimeout\$/^rampart\$|$loop|20000
timeout, success|failsafe-go|Service|^BenchmarkTimeout\$/^failsafe\$|$loop|10000
timeout → retry + budget → breaker, success|floor: context.WithTimeoutCause|Service|^BenchmarkTimeoutStack\$/^floor\$|$loop|20000
timeout → retry + budget → breaker, success|rampart|Service|^BenchmarkTimeoutStack\$/^rampart\$|$loop|20000
timeout → retry + budget → breaker, success|failsafe-go|Service|^BenchmarkTimeoutStack\$/^failsafe\$|$loop|10000
HTTP server, one request|floor: bare handler|http.Handler|^BenchmarkHTTPServer\$/^bare\$|bench_test.serveLoop|50000
HTTP server, one request|rampart Handler, no layers|http.Handler|^BenchmarkHTTPServer\$/^handler\$|bench_test.serveLoop|20000
HTTP server, one request|rampart Handler, concurrency limit|http.Handler|^BenchmarkHTTPServer\$/^concurrency\$|bench_test.serveLoop|20000
HTTP server, one request|rampart Handler, rate limit + concurrency limit|http.Handler|^BenchmarkHTTPServer\$/^ratelimit\+concurrency\$|bench_test.serveLoop|20000
HTTP server, one request|rampart Handler, rate limit + concurrency limit + timeout|http.Handler|^BenchmarkHTTPServer\$/^full\$|bench_test.serveLoop|10000
gRPC unary call over bufconn (whole program)|floor: bare client|grpc.ClientConn|^BenchmarkGRPCUnary\$/^bare\$|-|2000
gRPC unary call over bufconn (whole program)|bare client, the caller sets a deadline|grpc.ClientConn|^BenchmarkGRPCUnary\$/^bare-deadline\$|-|2000
gRPC unary call over bufconn (whole program)|rampart interceptors|grpc.ClientConn|^BenchmarkGRPCUnary\$/^rampart\$|-|2000
gRPC unary call over bufconn (whole program)|failsafe-go failsafegrpc|grpc.ClientConn|^BenchmarkGRPCUnary\$/^failsafe\$|-|2000
gRPC unary call over bufconn (whole program)|failsafe-go failsafegrpc, the caller sets the attempt's deadline|grpc.ClientConn|^BenchmarkGRPCUnary\$/^failsafe-deadline\$|-|2000
gRPC unary client interceptor alone (no grpc-go)|floor: the invoker called directly|grpc.UnaryClientInterceptor|^BenchmarkGRPCInterceptor\$/^bare\$|bench_test.interceptLoop|20000
gRPC unary client interceptor alone (no grpc-go)|an interceptor that only sets a deadline|grpc.UnaryClientInterceptor|^BenchmarkGRPCInterceptor\$/^bare-deadline\$|bench_test.interceptLoop|10000
gRPC unary client interceptor alone (no grpc-go)|rampart interceptors|grpc.UnaryClientInterceptor|^BenchmarkGRPCInterceptor\$/^rampart\$|bench_test.interceptLoop|10000
gRPC unary client interceptor alone (no grpc-go)|failsafe-go failsafegrpc|grpc.UnaryClientInterceptor|^BenchmarkGRPCInterceptor\$/^failsafe\$|bench_test.interceptLoop|5000
shadow layer, 1 candidate, Closed success|floor: direct call|Service|^BenchmarkShadow\$/^floor\$|$loop|50000
shadow layer, 1 candidate, Closed success|rampart|Service|^BenchmarkShadow\$/^1\$|$loop|25000
shadow layer, 2 candidates, Closed success|rampart|Service|^BenchmarkShadow\$/^2\$|$loop|25000
shadow layer, 4 candidates, Closed success|rampart|Service|^BenchmarkShadow\$/^4\$|$loop|25000
"
# The observers' rows: a breaker alone (no retry layer), with no observer
# (the floor) and with rampartotel's Observer on the SDK (a ManualReader)
# and on the no-op MeterProvider, with and without span events; and a
# retry layer over a breaker with no observer, the slog one, the OTel one
# and both joined.
otel='rampartotel_test.BenchmarkBreaker'
otelrows="
loop|empty loop (baseline)|bare|^BenchmarkBare\$/^loop\$|rampartotel_test.bareLoop|50000
Closed breaker, success|floor: no observer|Service|^BenchmarkBreakerClosedSuccess\$/^none\$|${otel}ClosedSuccess.func1|50000
Closed breaker, success|rampartotel, SDK|Service|^BenchmarkBreakerClosedSuccess\$/^otel-sdk\$|${otel}ClosedSuccess.func1|50000
Closed breaker, success|rampartotel, no-op MeterProvider|Service|^BenchmarkBreakerClosedSuccess\$/^otel-noop\$|${otel}ClosedSuccess.func1|50000
Closed breaker, success|rampartotel, no-op MeterProvider, NoSpanEvents|Service|^BenchmarkBreakerClosedSuccess\$/^otel-noop-nospans\$|${otel}ClosedSuccess.func1|50000
Open breaker, rejection|floor: no observer|Service|^BenchmarkBreakerOpenRejection\$/^none\$|${otel}OpenRejection.func1|50000
Open breaker, rejection|rampartotel, SDK|Service|^BenchmarkBreakerOpenRejection\$/^otel-sdk\$|${otel}OpenRejection.func1|50000
retry → breaker, Closed success|floor: no observer|Service|^BenchmarkClosedSuccess\$/^none\$|rampartotel_test.BenchmarkClosedSuccess.func1|50000
retry → breaker, Closed success|observe.Log (slog)|Service|^BenchmarkClosedSuccess\$/^slog\$|rampartotel_test.BenchmarkClosedSuccess.func1|50000
retry → breaker, Closed success|rampartotel, SDK|Service|^BenchmarkClosedSuccess\$/^otel\$|rampartotel_test.BenchmarkClosedSuccess.func1|50000
retry → breaker, Closed success|observe.Join(slog, rampartotel SDK)|Service|^BenchmarkClosedSuccess\$/^slog\+otel\$|rampartotel_test.BenchmarkClosedSuccess.func1|50000
"
dir=.
if [[ ${SET:-} == otel ]]; then
  rows=$otelrows dir=../rampartotel
elif [[ -n ${SET:-} ]]; then
  echo "instructions.sh: SET must be otel or unset, got $SET" >&2
  exit 2
fi
if [[ -n ${ONLY:-} ]]; then
  rows=$(grep -E "^loop\||${ONLY}" <<<"$rows") # the baseline always runs
fi

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$dir" && go test -c -o "$bin/bench.test" .)

# count N bench func prints the instructions collected in func and the
# benchmark's allocs/op, for N calls of bench.
count() {
  local log=$bin/log
  local collect=("--toggle-collect=*$3")
  [[ $3 == - ]] && collect=() # the whole program: every goroutine's instructions
  GOGC=off GODEBUG=asyncpreemptoff=1,memprofilerate=0 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    "${collect[@]}" "$bin/bench.test" -test.run '^$' -test.bench "$2" \
    -test.benchtime "${1}x" -test.cpu 1 -test.benchmem >"$log" 2>&1 || {
    cat "$log" >&2
    return 1
  }
  local ir allocs
  ir=$(sed -n 's/^==[0-9]*== Collected : //p' "$log")
  allocs=$(awk '/allocs\/op/ { for (i = 2; i <= NF; i++) if ($i == "allocs/op") print $(i-1) }' "$log")
  if [[ -z $ir || -z $allocs ]]; then
    cat "$log" >&2
    echo "instructions.sh: no count for $2" >&2
    return 1
  fi
  echo "$ir $allocs"
}

{
  echo "commit: ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
  echo "go: $(go env GOVERSION) $(go env GOARCH)"
  echo "valgrind: $(valgrind --version)"
  echo "cpumodel: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
} >"$bin/head"
cat "$bin/head" >&2

: >"$bin/raw"
while IFS='|' read -r path impl shape bench fn n; do
  [[ -z $path ]] && continue
  n=$((n * scale))
  res=$(count "$n" "$bench" "$fn")
  one=${res% *}
  res=$(count $((2 * n)) "$bench" "$fn")
  two=${res% *} allocs=${res#* }
  echo "$path|$impl|$shape|$one|$two|$n|$allocs" | tee -a "$bin/raw" >&2
done <<<"$rows"

# Per call: (two - one) / n, less the empty loop's. The first table has
# every row of the Service and bare shapes, with its ratio to the same
# path's floor (Service shape); the second the adapters' rows (an
# http.Handler called directly, a whole gRPC program), with their
# difference from the path's floor; the last is README.md's Cost table:
# one column per implementation and shape.
awk -F'|' -v head="$bin/head" -v costtable="$([[ -z ${SET:-} ]] && echo 1)" '
  function cell(p, c) { return (p SUBSEP c) in v ? v[p, c] : "–" }
  {
    per = ($5 - $4) / $6
    if ($1 == "loop") { base = per; basealloc = $7; next }
    per -= base
    if ($3 != "Service" && $3 != "bare") { # an adapter: its own table
      na++; apath[na] = $1; aimpl[na] = $2; acost[na] = per; aallocs[na] = $7
      if ($2 ~ /^floor/) { afloor[$1] = per; afloorallocs[$1] = $7 }
      next
    }
    n++; path[n] = $1; impl[n] = $2; shape[n] = $3; cost[n] = per; allocs[n] = $7
    if ($2 ~ /^floor/) floor[$1] = per
    if (!($1 in seen)) { seen[$1] = 1; np++; paths[np] = $1 }
    col = $2 ~ /^floor/ ? "floor" : $2 ~ /^context/ ? "bare floor" : $2
    sub(/ \(.*/, "", col)
    if (col == "go-resiliency" && $3 == "bare") col = "go-resiliency bare"
    v[$1, col] = sprintf("%.0f", per) ($7 > 0 ? " (" $7 " allocs)" : "")
  }
  END {
    while ((getline line < head) > 0) print "    " line
    print ""
    print "| path | implementation | shape | instructions / call | allocs / call | × the path'"'"'s floor |"
    print "| --- | --- | --- | ---: | ---: | ---: |"
    printf "| (empty loop) | b.Loop and a counter | bare | %.1f (subtracted below) | %s | |\n", base, basealloc
    for (i = 1; i <= n; i++) {
      ratio = impl[i] !~ /^floor/ && floor[path[i]] > 0 ? sprintf("%.2f", cost[i] / floor[path[i]]) : ""
      printf "| %s | %s | %s | %.0f | %s | %s |\n", path[i], impl[i], shape[i], cost[i], allocs[i], ratio
    }
    if (na > 0) {
      print ""
      print "| adapter path | implementation | instructions / call | over the floor | allocs / call | over the floor |"
      print "| --- | --- | ---: | ---: | ---: | ---: |"
      for (i = 1; i <= na; i++) {
        over = aimpl[i] ~ /^floor/ ? "" : sprintf("%+.0f", acost[i] - afloor[apath[i]])
        overa = aimpl[i] ~ /^floor/ ? "" : sprintf("%+d", aallocs[i] - afloorallocs[apath[i]])
        printf "| %s | %s | %.0f | %s | %s | %s |\n", apath[i], aimpl[i], acost[i], over, aallocs[i], overa
      }
    }
    if (!costtable) exit
    print ""
    print "| instructions per call | rampart, through a Service | go-resiliency, same Service shape | go-resiliency, a bare function | sony/gobreaker, same Service shape | failsafe-go, same Service shape | floor, same Service shape | floor, a bare function |"
    print "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    for (i = 1; i <= np; i++) {
      p = paths[i]
      printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", p, cell(p, "rampart"), cell(p, "go-resiliency"), cell(p, "go-resiliency bare"),
        cell(p, "sony/gobreaker"), cell(p, "failsafe-go"), cell(p, "floor"), cell(p, "bare floor")
    }
  }' "$bin/raw" >"$out"
cat "$out"
echo "wrote $out" >&2

# With the default output, the tables also replace what stands between
# the markers in bench/README.md (<!-- instructions -->, the whole file)
# and in README.md (<!-- cost -->, the last table: the Cost table).
splice() { # splice file marker text-file
  awk -v start="<!-- $2 -->" -v end="<!-- /$2 -->" -v with="$3" '
    $0 == start { print; while ((getline line < with) > 0) print line; skip = 1; next }
    $0 == end { skip = 0 }
    !skip' "$1" >"$1.new" && mv "$1.new" "$1"
}
if [[ $# == 0 && -z ${ONLY:-} && -z ${SET:-} ]]; then
  splice README.md instructions "$out"
  awk '/^$/ { n = 0; delete t; next } { t[++n] = $0 } END { for (i = 1; i <= n; i++) print t[i] }' "$out" >"$bin/cost"
  splice ../README.md cost "$bin/cost"
  echo "updated bench/README.md and README.md between their markers" >&2
fi
