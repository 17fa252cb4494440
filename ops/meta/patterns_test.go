package meta

import (
	"math/rand"
	"testing"
)

// The hand-written matchers must agree with zod's regexes on everything.
func TestMatchersAgreeWithTheRegexes(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	dates := []string{
		"2026-08-01T12:00:00.000Z", "2026-08-01T12:00Z", "2026-08-01T12:00:00Z", "2026-08-01T12:00:00.123456789Z",
		"2024-02-29T00:00Z", "2023-02-29T00:00Z", "2000-02-29T00:00Z", "1900-02-29T00:00Z", "0000-02-29T00:00Z",
		"2026-04-31T00:00Z", "2026-13-01T00:00Z", "2026-00-10T00:00Z", "2026-01-00T00:00Z", "2026-01-31T24:00Z",
		"2026-01-31T23:60Z", "2026-01-31T23:59:60Z", "2026-01-31T23:59:59.Z", "2026-01-31T23:59:59+00:00",
		"2026-01-31 23:59:59Z", "2026-01-31T23:59:59z", "2026-1-31T23:59Z", "", "Z", "2026-01-31T23:59:5Z",
	}
	uuids := []string{
		"3f9c2b7e-5a1d-4e8f-9b6c-0d2e4f6a8b1c", "00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff",
		"FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", "3f9c2b7e-5a1d-9e8f-9b6c-0d2e4f6a8b1c", "3f9c2b7e-5a1d-4e8f-cb6c-0d2e4f6a8b1c",
		"3F9C2B7E-5A1D-4E8F-AB6C-0D2E4F6A8B1C", "3f9c2b7e5a1d4e8f9b6c0d2e4f6a8b1c", "", "3f9c2b7e-5a1d-4e8f-9b6c-0d2e4f6a8b1",
	}
	alphabet := "0123456789-:TZ.abfABF+ 8e"
	mutate := func(s string) string {
		b := []byte(s)
		switch rng.Intn(3) {
		case 0:
			if len(b) > 0 {
				b[rng.Intn(len(b))] = alphabet[rng.Intn(len(alphabet))]
			}
		case 1:
			if len(b) > 0 {
				i := rng.Intn(len(b))
				b = append(b[:i], b[i+1:]...)
			}
		default:
			i := rng.Intn(len(b) + 1)
			b = append(b[:i], append([]byte{alphabet[rng.Intn(len(alphabet))]}, b[i:]...)...)
		}
		return string(b)
	}
	check := func(s string) {
		if got, want := isDatetime(s), datetimePattern().MatchString(s); got != want {
			t.Fatalf("isDatetime(%q) = %v, regex says %v", s, got, want)
		}
		if got, want := isUUID(s), uuidPattern().MatchString(s); got != want {
			t.Fatalf("isUUID(%q) = %v, regex says %v", s, got, want)
		}
	}
	seeds := append(dates, uuids...)
	for _, s := range seeds {
		check(s)
		for i := 0; i < 3000; i++ {
			m := s
			for k := rng.Intn(3); k >= 0; k-- {
				m = mutate(m)
			}
			check(m)
		}
	}
	// Every day of four years, including leap and century rules.
	for _, y := range []string{"1900", "2000", "2024", "2026"} {
		for m := 1; m <= 12; m++ {
			for d := 0; d <= 32; d++ {
				check(y + "-" + two(m) + "-" + two(d) + "T00:00Z")
			}
		}
	}
}

func two(n int) string { return string([]byte{byte('0' + n/10), byte('0' + n%10)}) }
