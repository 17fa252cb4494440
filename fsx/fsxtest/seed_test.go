package fsxtest

import (
	"strconv"
	"testing"
)

func TestSeedReplaysSWAMPJ_SEED(t *testing.T) {
	t.Setenv(SeedEnv, "12345")
	if got := Seed(t); got != 12345 {
		t.Fatalf("Seed = %d, want 12345", got)
	}
	t.Setenv(SeedEnv, "")
	a := Seed(t)
	t.Setenv(SeedEnv, strconv.FormatUint(a, 10))
	if b := Seed(t); b != a {
		t.Fatalf("replaying %d gave %d", a, b)
	}
}
