#!/usr/bin/env bash
# Runs every fuzz target in the repository for FUZZTIME each, one at a time:
#   scripts/fuzz.sh [FUZZTIME]    (or FUZZTIME=... in the environment; default 30s)
# A crasher is written to <package>/testdata/fuzz/<Target>/; commit it with
# the fix, and plain `go test` replays it from then on.
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-${FUZZTIME:-30s}}
trap 'exit 130' INT

log=$(mktemp)
trap 'rm -f "$log"' EXIT

# fuzz runs one target, and once more if it failed only by Go 1.26's race at
# the -fuzztime deadline (go.dev/issue/75804, fixed in Go 1.27): a bare
# "context deadline exceeded", no failing input written.
fuzz() {
	local pkg=$1 target=$2 try
	for try in 1 2; do
		go test "$pkg" -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" 2>&1 | tee "$log"
		((PIPESTATUS[0] == 0)) && return 0
		grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log" || return 1
		echo "fuzz: $pkg $target stopped by the fuzztime deadline race (go.dev/issue/75804), not an input; again"
	done
	return 1
}

failed=()
start=$SECONDS
# "./pkg/x_test.go:func FuzzY" for every target, sorted so a package's run together.
while IFS=: read -r file decl; do
	pkg=$(dirname "$file") target=${decl#func }
	echo "== $pkg $target ($fuzztime)"
	fuzz "$pkg" "$target" || failed+=("$pkg $target")
done < <(grep -r --include='*_test.go' --exclude-dir='.?*' -o '^func Fuzz[A-Za-z0-9_]*' . | sort)

echo "fuzz: $((SECONDS - start))s"
if ((${#failed[@]})); then
	printf 'fuzz: FAILED %s\n' "${failed[@]}"
	exit 1
fi
echo "fuzz: ok"
