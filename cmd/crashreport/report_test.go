package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swampj/swampj/fsx/fsxtest"
)

// A cell passes only when every case it checked either recovered or was
// refused for a reason the README lists.
func TestCellFailures(t *testing.T) {
	for _, c := range []struct {
		name string
		cell Cell
		want string // "" : no failure
	}{
		{"all recovered", Cell{Checked: 5, Recovered: 5}, ""},
		{"refusals with listed reasons", Cell{Checked: 5, Recovered: 3, Refused: 2, Reasons: map[string]int{"rename-left-both-names": 2}}, ""},
		{"a case neither", Cell{Checked: 5, Recovered: 4}, "neither recovered nor were refused"},
		// What a recovery that refuses everything half done reports, were
		// it counted: every case refused, for no reason the README lists.
		{"refused for an unlisted reason", Cell{Checked: 5, Refused: 5, Reasons: map[string]int{"half-done": 5}}, "not a reason the README lists"},
		{"refused without a reason", Cell{Checked: 5, Recovered: 3, Refused: 2}, "2 refused but 0 with a reason"},
	} {
		got := strings.Join(c.cell.failures("p/l"), "; ")
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: failures %q, want %q", c.name, got, c.want)
		}
	}
}

// The README lists every refusal reason the tests may record, and only
// those, in its crash report section.
func TestREADMEListsTheRefusalReasons(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start := strings.Index(s, "Refusal reasons:")
	if start < 0 {
		t.Fatal(`README.md has no "Refusal reasons:" list`)
	}
	list := s[start:]
	if end := strings.Index(list, "\n\n"); end >= 0 {
		list = list[:end]
	}
	for _, r := range fsxtest.Reasons() {
		if !strings.Contains(list, "`"+r+"`") {
			t.Errorf("README's refusal reasons do not list %q", r)
		}
	}
	if n, want := strings.Count(list, "\n- "), len(fsxtest.Reasons()); n != want {
		t.Errorf("README lists %d refusal reasons, fsxtest.RefusalReasons has %d", n, want)
	}
}

func TestCellString(t *testing.T) {
	if s := (Cell{Checked: 54, Recovered: 50, Refused: 4}).String(); s != "50+4/54" {
		t.Fatal(s)
	}
	if s := (Cell{}).String(); s != "-" {
		t.Fatal(s)
	}
}
