#!/usr/bin/env bash
# The native relay under AddressSanitizer + UndefinedBehaviorSanitizer (docs/development.md,
# "Native relay under sanitizers"): builds native/build/relay-asan.node, runs the relay's unit
# tests and the proxy's integration tests with it (PLB_NATIVE_RELAY) in a stock node with libasan
# preloaded, and fails on any sanitizer report. native/relay.node is left as it is.
# Usage: scripts/native-sanitize.sh [test files...] (default: the relay's and the proxy's).
set -euo pipefail
cd "$(dirname "$0")/.."

libasan=$(cc -print-file-name=libasan.so)
if [ ! -e "$libasan" ]; then
  echo "native-sanitize: no libasan.so for $(cc --version | head -1) (Debian: apt-get install libasan8)" >&2
  exit 1
fi
PLB_NATIVE_SANITIZE=1 node scripts/build-native.mjs

logs=$(mktemp -d -t plb-sanitize-XXXXXX)
trap 'rm -rf "$logs" "$logs.lsan"' EXIT
# The settings listed (and justified) in native/sanitizer-suppressions.txt, then the strict ones.
listed() { sed -n "s/^$1 \([^ #]*\).*/\1/p" native/sanitizer-suppressions.txt; }
asan="$(listed ASAN | paste -sd: -)"
ubsan="$(listed UBSAN | paste -sd: -)"
listed LSAN | grep '^leak:' >"$logs.lsan" || true
lsan="$(listed LSAN | grep -v '^leak:' | paste -sd: -)"
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=1:log_path=$logs/asan${asan:+:$asan}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan${ubsan:+:$ubsan}"
export LSAN_OPTIONS="suppressions=$logs.lsan:print_suppressions=0${lsan:+:$lsan}"
export PLB_NATIVE_RELAY="$PWD/native/build/relay-asan.node"

tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
  tests=(test/unit/native-relay.test.ts test/unit/native-front.test.ts
    test/integration/proxy.test.ts test/integration/proxy-fuzz.test.ts test/integration/proxy-faults.test.ts)
fi
status=0
# node itself (not npx: its shell would drop the preload); the preload module keeps libasan out of
# PostgreSQL's tools and in node's children.
LD_PRELOAD="$libasan" NODE_OPTIONS="--import=$PWD/scripts/sanitize-preload.mjs ${NODE_OPTIONS:-}" \
  node node_modules/vitest/vitest.mjs run "${tests[@]}" || status=$?

# Every process that loaded libasan (node, and what it started) writes its reports there: any
# ASan or UBSan report fails the run, and a leak report with a frame of the relay's does.
failed=0
for f in "$logs"/*; do
  [ -e "$f" ] || continue
  if grep -q 'ERROR: LeakSanitizer' "$f" && ! grep -q 'ERROR: AddressSanitizer\|runtime error' "$f"; then
    if ! grep -qE 'relay-asan\.node|/native/[a-z-]+\.c:' "$f"; then
      echo "native-sanitize: node's own leaks at exit, none of the relay's: $(grep -c 'leak of' "$f") report(s) in $(basename "$f")" >&2
      continue
    fi
  fi
  failed=1
  echo "== $f" >&2
  cat "$f" >&2
done
[ "$failed" -eq 0 ] || { echo "native-sanitize: sanitizer reports (above)" >&2; exit 1; }
[ "$status" -eq 0 ] || exit "$status"
echo "native-sanitize: ${#tests[@]} test file(s) passed under ASan+UBSan: 0 ASan or UBSan reports, 0 leaks of the relay's" >&2
