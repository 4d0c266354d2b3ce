#!/usr/bin/env bash
# npm run nightly [-- options]: the nightly workflow's bench and gate, the same here as on a runner.
# The bench matrix with pinned seeds, then `plb report --gate` against the committed baseline: the
# verdicts of each strategy against rr in tonight's runs must hold the baseline's (a flip fails,
# premium's "no diff." becoming "worse" fails; the figures are printed as a trend, never gated).
# Tonight's verdict table is appended to the history file (one JSON line; `plb report --history`).
#
#   --driver docker|sim   default docker (also PLB_NIGHTLY_DRIVER). On Docker the bench takes the
#                         official postgres:15 when present (the workflow pulls it by digest and
#                         tags it), else the offline image (`plb image build`), and config.json and
#                         the gate record which image (by digest when it has one).
#   --out DIR             run directory of the night (default runs/nightly-<UTC time>)
#   --baseline FILE       default benchmarks/baseline/summary.json (a plb-report/3 JSON or run dirs)
#   --history FILE        default nightly-history/history.jsonl
#   --skip-build          use the dist/ there is (the workflow built it in its own step)
#   --github              annotations and the step summary ($GITHUB_STEP_SUMMARY)
# What is measured comes from the environment, as in .github/workflows/nightly.yml: PLB_PLAN,
# PLB_STRATEGIES, PLB_MIXES, PLB_REPEAT, PLB_SEED (repeat r runs with seed PLB_SEED + r - 1).
# Exit: the gate's (0 pass, 3 a cell failed, 1 bad input such as a baseline without verdicts),
# else the bench's.
set -euo pipefail
cd "$(dirname "$0")/.."

PLB_PLAN=${PLB_PLAN:-plans/demo.yaml}
PLB_STRATEGIES=${PLB_STRATEGIES:-plb,rr,static}
PLB_MIXES=${PLB_MIXES:-25:75}
PLB_REPEAT=${PLB_REPEAT:-3}
PLB_SEED=${PLB_SEED:-100}
driver=${PLB_NIGHTLY_DRIVER:-docker}
out=runs/nightly-$(date -u +%Y%m%d-%H%M%S)
baseline=benchmarks/baseline/summary.json
history=nightly-history/history.jsonl
build=1
github=()

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --driver) driver=${2:?--driver needs a value}; shift 2 ;;
    --out) out=${2:?--out needs a value}; shift 2 ;;
    --baseline) baseline=${2:?--baseline needs a value}; shift 2 ;;
    --history) history=${2:?--history needs a value}; shift 2 ;;
    --skip-build) build=0; shift ;;
    --github) github=(--github); shift ;;
    -h | --help) usage ;;
    *) echo "nightly: unknown option $1" >&2; usage ;;
  esac
done
case "$driver" in docker | sim) ;; *) echo "nightly: --driver docker or sim, not $driver" >&2; exit 2 ;; esac

start=$(date +%s)
say() { echo "== nightly: $* ($(( $(date +%s) - start )) s)" >&2; }
plb() { node bin/run.js "$@"; }

if [ "$build" = 1 ]; then
  say "build"
  npm run build >&2
fi
mkdir -p "$out" "$(dirname "$history")" "$out/candidate"

say "bench: $PLB_PLAN, $PLB_STRATEGIES, mix $PLB_MIXES, $PLB_REPEAT repeat(s) from seed $PLB_SEED, driver $driver"
bench=0
plb bench matrix --driver "$driver" --plan "$PLB_PLAN" --strategy "$PLB_STRATEGIES" --mix "$PLB_MIXES" \
  --repeat "$PLB_REPEAT" --seed "$PLB_SEED" --out "$out/runs" >&2 || bench=$?
[ "$bench" = 0 ] || say "the bench exited $bench; gating what it left"

# The report and a candidate baseline first: the gate refuses an unfit baseline before it writes
# anything, and the night's candidate is what a new baseline is promoted from.
say "report and candidate baseline"
plb report "$out/runs" --json --skip-html "${github[@]}" --baseline-out "$out/candidate/summary.json" \
  > "$out/report.json" || true
# The gate runs whatever happened above: a cell the baseline has and the night lacks fails.
say "gate against $baseline"
gate=0
# Not --json: an input error then goes to stderr as one line; the verdict table goes there too.
plb report "$out/runs" --skip-html "${github[@]}" --compare-to "$baseline" --gate \
  --history-append "$history" > /dev/null || gate=$?
if [ "${#github[@]}" -gt 0 ] && [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  plb report "$out/runs" --markdown --skip-html >> "$GITHUB_STEP_SUMMARY" || true
fi

say "done: gate exit $gate, bench exit $bench, wall $(( ($(date +%s) - start) / 60 )) min; runs in $out/runs, history $history"
[ "$gate" = 0 ] || exit "$gate"
exit "$bench"
