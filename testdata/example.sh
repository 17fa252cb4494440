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

# has CMD...: whether this swampj has the (sub)command; unknown commands
# exit 2 even with --help.
has() { "$swampj" "$@" --help >/dev/null 2>&1; }

skip() {
	echo
	echo "- swampj $* (skipped: this swampj has no '$1${2:+ $2}${3:+ $3}' command yet)"
}

run recover
run catalog verify
if has data list; then run data list; else skip data list; fi
if has datastore namespace set; then run datastore namespace set demo; else skip datastore namespace set demo; fi
if has datastore namespace migrate; then
	run datastore namespace migrate
	run datastore namespace migrate --confirm
	run datastore namespace migrate --confirm # again: nothing left to move
else
	skip datastore namespace migrate --confirm
fi
run catalog verify
if has datastore namespace unset; then
	run datastore namespace unset --migrate --confirm
else
	skip datastore namespace unset --migrate --confirm
fi
run catalog verify
run journal list
