#!/usr/bin/env bash
# Measures the real swamp and swampj on the same swamp-made repos and prints a
# markdown table (wall-clock, median of RUNS runs, default 5).
#
#   SWAMP_BIN=$(bash ../shared/realswamp/setup.sh) bash testdata/vs-swamp.sh
#
# The repo is made by swamp itself: models m1 and m2, m1's method run VERSIONS
# times (default 4), so each of m1's four items has that many versions.
# Measured: start-up (`--version`), namespace migrate of the same tree
# (preview, then --confirm, each on a fresh copy with the namespace set by
# swamp), `data get` of the latest version, and reading every version of
# every item of m1, one command per version as a user would.
set -euo pipefail
: "${SWAMP_BIN:?set SWAMP_BIN, e.g. SWAMP_BIN=\$(bash ../shared/realswamp/setup.sh)}"
RUNS=${RUNS:-5}
VERSIONS=${VERSIONS:-4}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export NO_COLOR=1

echo "building swampj" >&2
(cd "$ROOT" && go build -o "$WORK/swampj" ./cmd/swampj)
SWAMPJ=$WORK/swampj

echo "making the repo with swamp ($VERSIONS runs of m1)" >&2
BASE=$WORK/base
mkdir -p "$BASE"
(
  cd "$BASE"
  "$SWAMP_BIN" init >/dev/null
  "$SWAMP_BIN" model create command/shell m1 >/dev/null
  "$SWAMP_BIN" model create command/shell m2 >/dev/null
  for i in $(seq "$VERSIONS"); do
    "$SWAMP_BIN" model method run m1 execute --input "run=echo run $i" >/dev/null
  done
  "$SWAMP_BIN" model method run m2 execute --input "run=echo two" >/dev/null
)
M1=$(sed -n 's/^id: *//p' "$BASE/models/command/shell/m1.yaml")
ITEMS=$(cd "$BASE/.swamp/data/command/shell/$M1" && ls | tr "\n" " ")
NVERS=$(find "$BASE/.swamp/data/command/shell/$M1" -mindepth 2 -maxdepth 2 -type d -regex '.*/[0-9]+' | wc -l)

now() { date +%s%N; }
# median of the numbers on stdin (nanoseconds) printed in milliseconds
median() { sort -n | awk '{a[NR]=$1} END {m = (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "%.0f", m/1e6}'; }

# time_cmd SETUP CMD...: runs SETUP (untimed, in a fresh copy $R) then CMD in $R.
fresh() { R=$WORK/run.$RANDOM$RANDOM; cp -a "$BASE" "$R"; }
measure() { # measure NAME SETUP BODY  -> prints median ms
  local setup=$1 body=$2 i t0 t1
  for i in $(seq "$RUNS"); do
    fresh
    (cd "$R" && eval "$setup") >/dev/null 2>&1
    t0=$(now)
    (cd "$R" && eval "$body") >/dev/null 2>&1 || { echo "failed: $body (in $R)" >&2; }
    t1=$(now)
    echo $((t1 - t0))
    rm -rf "$R"
  done | median
}

NS='"$SWAMP_BIN" datastore namespace set ns1'
READ_ALL_SWAMP='for it in '"$ITEMS"'; do for v in $(ls .swamp/data/command/shell/'"$M1"'/$it | grep -E "^[0-9]+$"); do "$SWAMP_BIN" data get m1 $it --version $v; done; done'
READ_ALL_SWAMPJ='for it in '"$ITEMS"'; do for v in $(ls .swamp/data/command/shell/'"$M1"'/$it | grep -E "^[0-9]+$"); do "$SWAMPJ" data get command/shell/'"$M1"'/$it --version $v; done; done'

row() { # row LABEL SWAMP_MS SWAMPJ_MS
  awk -v l="$1" -v s="$2" -v j="$3" 'BEGIN { printf "| %s | %d ms | %d ms | %.1f× |\n", l, s, j, (j > 0 ? s / j : 0) }'
}

echo "measuring ($RUNS runs each)" >&2
s_ver=$(measure true '"$SWAMP_BIN" --version')
j_ver=$(measure true '"$SWAMPJ" --version')
s_prev=$(measure "$NS" '"$SWAMP_BIN" datastore namespace migrate')
j_prev=$(measure "$NS" '"$SWAMPJ" datastore namespace migrate')
s_conf=$(measure "$NS" '"$SWAMP_BIN" datastore namespace migrate --confirm')
j_conf=$(measure "$NS" '"$SWAMPJ" datastore namespace migrate --confirm')
s_get=$(measure true '"$SWAMP_BIN" data get m1 result')
j_get=$(measure true '"$SWAMPJ" data get command/shell/'"$M1"'/result')
s_all=$(measure true "$READ_ALL_SWAMP")
j_all=$(measure true "$READ_ALL_SWAMPJ")

files=$(find "$BASE/.swamp" -type f | wc -l)
echo "Repo made by swamp: $files files under .swamp/; m1 has $(echo "$ITEMS" | wc -w) items, $NVERS versions. Median of $RUNS runs, wall-clock, $(nproc) cores."
echo
echo "| operation | swamp | swampj | swamp / swampj |"
echo "|---|---|---|---|"
row 'start-up (`--version`)' "$s_ver" "$j_ver"
row 'namespace migrate (preview)' "$s_prev" "$j_prev"
row 'namespace migrate --confirm' "$s_conf" "$j_conf"
row '`data get` (latest)' "$s_get" "$j_get"
row "read every version of m1 ($NVERS \`data get --version\`)" "$s_all" "$j_all"
