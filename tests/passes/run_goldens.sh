#!/bin/bash
# Per-pass golden tests: every NAME.ttir / NAME.ttgir here names the ct-opt
# command(s) to run on it in lines
#     // RUN: ct-opt ARGS             expected output in NAME.out
#     // RUN(TAG): ct-opt ARGS        expected output in NAME.TAG.out
# and the output must match byte for byte. Lines
#     // ENV: VAR=VALUE ...
# (before the RUN lines) set variables for the file's ct-opt commands (an
# opt-in pass's switch).
# usage: run_goldens.sh CT_OPT [DIR] [--update]   (--update rewrites the .out files)
set -u
ctopt=$1
dir=${2:-tests/passes}
update=${3:-}
fail=0
n=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in "$dir"/*.ttir "$dir"/*.ttgir; do
	[ -e "$f" ] || continue
	base=${f%.*}
	envs=
	while IFS= read -r line; do
		case "$line" in
		"// ENV: "*)
			envs="$envs ${line#// ENV: }"
			continue ;;
		"// RUN: ct-opt "*) tag= args=${line#// RUN: ct-opt } ;;
		"// RUN("*"): ct-opt "*)
			tag=${line#// RUN(}
			tag=${tag%%)*}
			args=${line#*: ct-opt } ;;
		*) continue ;;
		esac
		want=$base${tag:+.$tag}.out
		n=$((n + 1))
		# shellcheck disable=SC2086
		if ! env $envs "$ctopt" $args "$f" >"$tmp/got" 2>"$tmp/err"; then
			echo "FAIL: ct-opt $args $f:"
			cat "$tmp/err"
			fail=$((fail + 1))
			continue
		fi
		if [ "$update" = "--update" ]; then
			cp "$tmp/got" "$want"
		elif ! diff -u "$want" "$tmp/got" >"$tmp/diff"; then
			echo "FAIL: ct-opt $args $f differs from $want:"
			head -60 "$tmp/diff"
			fail=$((fail + 1))
		fi
	done <"$f"
done
echo "$n runs, $fail failures"
[ "$n" -gt 0 ] && [ "$fail" -eq 0 ]
