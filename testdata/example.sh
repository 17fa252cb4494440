#!/usr/bin/env bash
# The README's "run the main job on the bundled example": build swampj, copy
# testdata/example-repo to a temp dir, and run a namespace migration there and
# back, checking the catalog after each step. Each command is printed before
# it runs; the script stops with a non-zero exit at the first one that fails.
#
# Commands this build of swampj does not have yet (other engineers are adding
# `data` and `datastore namespace`) are skipped with a note, not run.
#
#   bash testdata/example.sh            # the temp dir is removed at the end
#   KEEP=1 bash testdata/example.sh     # keep it to look around
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
work="$(mktemp -d "${TMPDIR:-/tmp}/swampj-example.XXXXXX")"
if [[ "${KEEP:-}" == 1 ]]; then
	trap 'echo "kept $work"' EXIT
else
	trap 'rm -rf "$work"' EXIT
fi

echo "+ go build -o $work/bin/swampj ./cmd/swampj"
(cd "$root" && go build -o "$work/bin/swampj" ./cmd/swampj)
echo "+ cp -R testdata/example-repo $work/repo"
cp -R "$here/example-repo" "$work/repo"
cd "$work/repo"

swampj="$work/bin/swampj"

# run ARGS...: print the command, then run it (set -e stops on failure).
run() {
	echo
	echo "+ swampj $*"
	"$swampj" "$@"
}

# Report #3316: namespace the repo, re-run, reverse — the catalog never moves.
run recover
run catalog verify
run data list
run datastore namespace set demo
run datastore namespace migrate
run datastore namespace migrate --confirm
run datastore namespace migrate --confirm # again: nothing left to move
run catalog verify
run datastore namespace unset --migrate --confirm
run catalog verify

# Report #3955: a crash-safe write, then what an unclean shutdown of swamp
# leaves behind (a zero-byte version that latest and the catalog point at),
# found and repaired by quarantine.
item=command/shell/3f9c2b7e-5a1d-4e8f-9b6c-0d2e4f6a8b1c/result
echo '{"exitCode":0,"stdout":"written by swampj\n"}' > "$work/payload.json"
run data write "$item" --file "$work/payload.json" --model-name hello-shell --spec-name result
run data get "$item"
dir=.swamp/data/$item
next=$(( $(cat "$dir/latest") + 1 ))
echo
echo "+ (simulating swamp after a power cut: empty version $next, latest -> $next)"
mkdir "$dir/$next" && : > "$dir/$next/raw" && : > "$dir/$next/metadata.yaml" && printf %s "$next" > "$dir/latest"
if run doctor; then echo "doctor should have found the empty version" >&2; exit 1; fi
run doctor --repair --confirm
run doctor
run data get "$item"
run catalog verify
run journal list
