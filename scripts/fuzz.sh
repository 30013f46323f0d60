#!/usr/bin/env bash
# fuzz.sh FUZZTIME [PACKAGE...] runs every fuzz target (func FuzzXxx in a
# _test.go file) of the module, or of the given packages, for FUZZTIME each.
#
# Targets are discovered, not listed: a cheap grep finds the packages whose
# test files declare a fuzz function, and `go test -list` names the targets
# Go itself sees there, so a new fuzz target runs in CI without touching this
# file. A failing input is written under the package's testdata/fuzz/ by go
# test; commit it so that it becomes a regression test. Every target runs even
# when an earlier one fails; the exit status says whether any did.
set -euo pipefail

cd "$(dirname "$0")/.."

fuzztime=${1:?usage: fuzz.sh FUZZTIME [PACKAGE...]}
shift
GO=${GO:-go}

if (($#)); then
	pkgs=("$@")
else
	mapfile -t pkgs < <(grep -rlE --include='*_test.go' --exclude-dir=node_modules --exclude-dir=.git --exclude-dir=testdata \
		'^func Fuzz' . | xargs -r -n1 dirname | sort -u)
fi

targets=()
failed=()
for pkg in "${pkgs[@]}"; do
	if ! list=$("$GO" test -list '^Fuzz' "$pkg"); then
		failed+=("$pkg (go test -list)")
		continue
	fi
	while read -r name; do
		if [[ $name == Fuzz* ]]; then targets+=("$pkg $name"); fi
	done <<<"$list"
done

echo "fuzz: ${#targets[@]} target(s), $fuzztime each"
for target in "${targets[@]}"; do
	read -r pkg name <<<"$target"
	echo "fuzz: $pkg $name"
	if ! "$GO" test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"; then
		failed+=("$pkg $name")
	fi
done

if ((${#failed[@]})); then
	printf 'fuzz: FAILED %s\n' "${failed[@]}"
	exit 1
fi
echo "fuzz: ${#targets[@]} target(s) passed"
