package store

import "testing"

func TestParseIntJS(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"12", 12, true},
		{"12\n", 12, true},
		{" 12", 12, true},
		{"12abc", 12, true},
		{"2-old", 2, true},
		{"007", 7, true},
		{"+4", 4, true},
		{"-3", -3, true},
		{"0", 0, true},
		{"\ufeff5", 5, true},               // a BOM is JavaScript whitespace
		{"\u00a0 6", 6, true},              // so is NBSP
		{"\u00857", 0, false},              // NEL is not
		{"99999999999999999999", 0, false}, // beyond 2^53-1: never a version, never clamped
		{"9007199254740991", 9007199254740991, true},
		{"9007199254740992", 0, false},
		{"-9007199254740992", 0, false},
		{"", 0, false},
		{"   ", 0, false},
		{"abc", 0, false},
		{".1", 0, false},
		{"-", 0, false},
		{"0x10", 0, true},
	} {
		got, ok := parseIntJS(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseIntJS(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestTrimJS(t *testing.T) {
	if got := trimJS("\ufeff 12\r\n\u2028"); got != "12" {
		t.Errorf("trimJS = %q", got)
	}
	if got := trimJS(" \t\n"); got != "" {
		t.Errorf("trimJS(blank) = %q", got)
	}
}

func TestIsAllDigits(t *testing.T) {
	for in, want := range map[string]bool{"0": true, "007": true, "207333": true, "2-old": false, "": false, "١": false} {
		if isAllDigits(in) != want {
			t.Errorf("isAllDigits(%q) != %v", in, want)
		}
	}
}

func TestParseIntJSTextKeepsWhatItRead(t *testing.T) {
	for _, tc := range []struct {
		in, text string
		ok, big  bool
	}{
		{"99999999999999999999", "99999999999999999999", true, true},
		{" -99999999999999999999x", "-99999999999999999999", true, true},
		{"12abc", "12", true, false},
		{"abc", "", false, false},
	} {
		n, text, ok, big := parseIntJSText(tc.in)
		if text != tc.text || ok != tc.ok || big != tc.big || (big && n != 0) {
			t.Errorf("parseIntJSText(%q) = %d, %q, %v, %v", tc.in, n, text, ok, big)
		}
	}
}
