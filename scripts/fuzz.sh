#!/usr/bin/env bash
# Runs every fuzz target of the module for FUZZTIME each (default 30s),
# one after the other, printing each one's result; exits non-zero if any
# failed (the failing input is kept under the package's testdata/fuzz).
# Usage: scripts/fuzz.sh [FUZZTIME]   e.g. scripts/fuzz.sh 90s
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-${FUZZTIME:-30s}}"
mapfile -t targets < <(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' |
	xargs grep -H '^func Fuzz' | sed -E 's|^(.*)/[^/]*_test.go:func (Fuzz[A-Za-z0-9_]*).*|\1 \2|' | sort -u)
[ "${#targets[@]}" -gt 0 ] || { echo "fuzz: no fuzz targets found" >&2; exit 1; }
failed=()
i=0
for t in "${targets[@]}"; do
	i=$((i + 1))
	read -r dir name <<<"$t"
	echo "fuzz [$i/${#targets[@]}] ./$dir $name for $fuzztime"
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "./$dir"; then
		failed+=("./$dir $name")
	fi
done
if [ "${#failed[@]}" -gt 0 ]; then
	printf 'fuzz: FAILED: %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "fuzz: ${#targets[@]} targets, $fuzztime each, no failure"
