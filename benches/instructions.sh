#!/usr/bin/env bash
# Instructions per call of each variant of benches/shared, measured with callgrind: each
# variant runs at N1 and N2 calls, and (Ir(N2) - Ir(N1)) / (N2 - N1) is printed, so the
# runtime's start-up and the warm-up call cancel out. Needs valgrind.
#
#   bash benches/instructions.sh            # every variant, N1=20000 N2=120000
#   bash benches/instructions.sh retry/retry retry/backon
set -euo pipefail
cd "$(dirname "$0")/.."
N1=${N1:-20000}
N2=${N2:-120000}
bin=$(cargo bench -p retry-benches --bench instructions --no-run --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*instructions[^"]*\)".*/\1/p' | tail -n 1)
[ -x "$bin" ] || { echo "could not build the instructions benchmark" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
ir() {
    valgrind --tool=callgrind --callgrind-out-file="$out/cg" "$bin" "$1" "$2" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
printf '%-22s %14s\n' variant instructions/call
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(success/plain success/retry success/hedged success/hedged-p95
    success/policy success/tower
    success/blocking success/backon success/tokio-retry2 retry/hand-loop retry/retry retry/policy
    retry/blocking-no-wait retry/backon retry/tokio-retry2)
for v in "${variants[@]}"; do
    a=$(ir "$v" "$N1")
    b=$(ir "$v" "$N2")
    printf '%-22s %14.1f\n' "$v" "$(echo "($b - $a) / ($N2 - $N1)" | bc -l)"
done
