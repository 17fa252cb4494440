# Recipes call the same commands as the README; nothing requires just.

# Build the swampj binary into ./bin.
build:
    go build -o bin/swampj ./cmd/swampj

# Run the whole test suite (the README's test command).
test:
    go test ./...

# Crash suite only (every cut point of every protocol).
crash:
    go test ./... -run 'Crash|Cut' -v -count=1

# Benchmarks; each reports its ratio against a baseline measured in the same run.
bench:
    go test ./... -run '^$' -bench . -benchtime 1x -count 1

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
