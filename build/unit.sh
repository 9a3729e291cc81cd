#!/usr/bin/env bash
# Runs each named module's tests alone (GOWORK=off, the race detector), two modules at a time: most of
# a module's test time is spent waiting (containers, PostgreSQL, River's intervals, a browser), so a
# second module uses what the first leaves of this machine's two cores. The longest module (host) goes
# first, so that it runs beside all the others rather than after them. Each module's output is printed
# whole when it ends, with its time; the run fails if any module failed, and names them.
#   build/unit.sh host sdk connector ...
set -euo pipefail

lanes=${SVC_UNIT_LANES:-2}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

one() {
	local m=$1 log="$2/$(echo "$1" | tr / _).log" start=$SECONDS rc=0
	(cd "$m" && GOWORK=off go test -race -count=1 -timeout 20m ./...) >"$log" 2>&1 || rc=$?
	{
		flock 9
		echo "== $m ($((SECONDS - start)) s)"
		cat "$log"
		[ "$rc" -eq 0 ] || echo "$m" >>"$2/failed"
	} 9>"$2/lock"
	return 0
}
export -f one

printf '%s\n' "$@" | xargs -P "$lanes" -I{} bash -c 'one "$1" "$2"' _ {} "$logs"

if [ -s "$logs/failed" ]; then
	echo "unit: failed in $(tr '\n' ' ' <"$logs/failed")" >&2
	exit 1
fi
