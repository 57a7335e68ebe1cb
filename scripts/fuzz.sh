#!/usr/bin/env bash
# Runs every fuzz target in the repository for FUZZTIME each, one at a time:
#   scripts/fuzz.sh [FUZZTIME]    (or FUZZTIME=... in the environment; default 30s)
# A crasher is written to <package>/testdata/fuzz/<Target>/; commit it with
# the fix, and plain `go test` replays it from then on.
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-${FUZZTIME:-30s}}
trap 'exit 130' INT

failed=()
start=$SECONDS
# "./pkg/x_test.go:func FuzzY" for every target, sorted so a package's run together.
while IFS=: read -r file decl; do
	pkg=$(dirname "$file") target=${decl#func }
	echo "== $pkg $target ($fuzztime)"
	go test "$pkg" -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" || failed+=("$pkg $target")
done < <(grep -r --include='*_test.go' --exclude-dir='.?*' -o '^func Fuzz[A-Za-z0-9_]*' . | sort)

echo "fuzz: $((SECONDS - start))s"
if ((${#failed[@]})); then
	printf 'fuzz: FAILED %s\n' "${failed[@]}"
	exit 1
fi
echo "fuzz: ok"
