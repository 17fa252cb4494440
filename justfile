# Recipes call the same commands as the README; nothing requires just.

# Build swampj and swampj-bucket (the S3 and GCS clients, which swampj starts
# when a command needs a remote datastore's bucket) into ./bin, side by side.
# The tags are for start-up: no urfave/cli Markdown renderer (swampj's man
# page is its own), a static binary (no cgo resolver). A plain `go build`
# works the same, only starts slower.
build:
    go build -tags urfave_cli_no_docs,netgo,osusergo -o bin/swampj ./cmd/swampj
    go build -tags netgo,osusergo -o bin/swampj-bucket ./cmd/swampj-bucket

# Run the whole test suite (the README's test command).
test:
    go test ./...

# The whole crash suite: every layer of every protocol at every cut point
# (SWAMPJ_CRASH_FULL=1), real-kernel images where root and loop devices
# exist, then the mutants. Writes crash-report.json and prints it as a table;
# exits 1 if anything did not recover or a mutant was not caught.
crash:
    go run ./cmd/crashreport

# The same in a few minutes: sampled cut points, a few images.
crash-short:
    go run ./cmd/crashreport -short

# Benchmarks as one table: each figure beside its baseline measured in the same
# run, the ratio, the target and the fsync count, at 10,000 and 100,000
# versions (long: tens of minutes). `go run ./cmd/benchreport -h` for a subset.
bench:
    go run ./cmd/benchreport -raw bench-raw.txt

# gofmt check, vet and tests, as CI runs them.
lint:
    bash .ci/run

# The README's first command: a narrated, self-checking tour on the bundled example.
demo:
    go run ./cmd/swampj demo

# The longer scripted tour of the example repo.
example:
    bash testdata/example.sh

# Real-kernel power-cut images of a loop-mounted ext4 (root only; skipped without the variable).
crash-images:
    SWAMPJ_CRASH_IMAGES=1 go test ./cmd/swampj -run CrashImage -v -count=1
