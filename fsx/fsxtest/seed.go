package fsxtest

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// SeedEnv replays a random test: its value is the seed the test logged.
const SeedEnv = "SWAMPJ_SEED"

// Seed is the seed of one random test: $SWAMPJ_SEED when set (an invalid
// value fails the test), otherwise taken from the clock. It is logged
// either way, with the command line that replays it.
func Seed(t testing.TB) uint64 {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(SeedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want an unsigned integer (a seed a test logged)", SeedEnv, v)
		}
		seed = n
	}
	t.Logf("random seed %d (replay: %s=%d go test -run '^%s$')", seed, SeedEnv, seed, t.Name())
	return seed
}
