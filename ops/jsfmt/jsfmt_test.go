package jsfmt

import (
	"strings"
	"testing"
	"time"
)

func TestISOString(t *testing.T) {
	for _, tc := range []struct {
		t    time.Time
		want string
	}{
		{time.Date(2026, 1, 2, 3, 4, 5, 678_900_000, time.UTC), "2026-01-02T03:04:05.678Z"},
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "2026-01-02T03:04:05.000Z"},
		{time.Date(12345, 1, 1, 0, 0, 0, 0, time.UTC), "+012345-01-01T00:00:00.000Z"},
		{time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), "-000001-01-01T00:00:00.000Z"},
	} {
		if got := ISOString(tc.t); got != tc.want {
			t.Errorf("ISOString(%v) = %s, want %s", tc.t, got, tc.want)
		}
	}
}

func TestQuoteIsJSONStringify(t *testing.T) {
	for in, want := range map[string]string{
		"plain":          `"plain"`,
		"<&>\u2028":      "\"<&>\u2028\"",
		"a\"b\\c":        `"a\"b\\c"`,
		"\x01\b\f\n\r\t": `"\u0001\b\f\n\r\t"`,
		"\xff":           "\"\uFFFD\"",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
	if Length("a😀") != 3 {
		t.Error("Length counts UTF-16 code units")
	}
}

func TestRandomUUIDIsVersion4(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		u := RandomUUID()
		if len(u) != 36 || u[14] != '4' || !strings.ContainsRune("89ab", rune(u[19])) || seen[u] {
			t.Fatalf("bad or repeated UUID %q", u)
		}
		seen[u] = true
	}
}
