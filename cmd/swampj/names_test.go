package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestModelArgumentWithSlashIsNamed: `data write 'm1/../m2' item` is a
// usage error about the model argument (a "/" makes it an address, and it
// is not a valid one), not about the data name after it; a valid address
// followed by a data name says the name is one argument too many.
func TestModelArgumentWithSlashIsNamed(t *testing.T) {
	dir := newRepo(t)
	r := swampjIn(t, dir, []byte(`{"n":1}`), "data", "write", "m1/../m2", "item")
	if r.code != 2 || !strings.Contains(r.stderr, `the model argument "m1/../m2" is not a model name`) || strings.Contains(r.stderr, `(got "item")`) {
		t.Errorf("data write m1/../m2 item: exit %d, want 2 naming the model argument\nstderr: %s", r.code, r.stderr)
	}
	r = swampjIn(t, dir, []byte(`{"n":1}`), "data", "write", smallAddr, "item")
	if r.code != 2 || !strings.Contains(r.stderr, `"item" is one argument too many`) {
		t.Errorf("data write ADDRESS item: exit %d, want 2 saying item is too many\nstderr: %s", r.code, r.stderr)
	}
	// "-" after an address still reads stdin.
	mustOK(t, swampjIn(t, dir, []byte(`{"n":1}`), "data", "write", smallAddr, "-", "-q"), "data write ADDRESS -")
}

// TestNamesWithControlCharactersStayOnTheirLine: a data name holding a
// newline (swamp accepts it) is written, and the text tables of data list,
// data versions and journal list show it quoted, one row per item or
// intent; --json keeps it as it is.
func TestNamesWithControlCharactersStayOnTheirLine(t *testing.T) {
	dir := newRepo(t)
	addr := "command/shell/m/two\nlines"
	mustOK(t, swampjIn(t, dir, []byte(`{"n":1}`), "data", "write", addr, "-q"), "data write with a newline in the name")
	mustOK(t, swampjIn(t, dir, []byte(`{"n":2}`), "data", "write", smallAddr, "-q"), "data write")
	quoted := `"command/shell/m/two\nlines"`
	row := map[string]*regexp.Regexp{
		"data list":    regexp.MustCompile(`^(MODEL|-) `),
		"journal list": regexp.MustCompile(`^ +\d+  `),
	}
	for what, args := range map[string][]string{"data list": {"data", "list"}, "journal list": {"journal", "list"}} {
		out := mustOK(t, swampj(t, dir, args...), what).stdout
		// journal list quotes the intent's whole summary, which holds it.
		if !strings.Contains(out, quoted) && !(what == "journal list" && strings.Contains(out, `"write command/shell/m/two\nlines version 1"`)) {
			t.Errorf("%s does not quote the name:\n%s", what, out)
		}
		for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if !row[what].MatchString(line) {
				t.Errorf("%s: a line that is not a row: %q\n%s", what, line, out)
			}
		}
	}
	if out := mustOK(t, swampj(t, dir, "data", "versions", addr), "data versions").stdout; !strings.HasPrefix(out, quoted+" ") {
		t.Errorf("data versions does not quote the name:\n%s", out)
	}
	if out := mustOK(t, swampj(t, dir, "data", "list", "--json"), "data list --json").stdout; !strings.Contains(out, `"two\nlines"`) {
		t.Errorf("data list --json lost the name:\n%s", out)
	}
	// A plain name is printed as it is.
	if out := swampj(t, dir, "data", "list").stdout; !strings.Contains(out, " "+smallAddr+" ") {
		t.Errorf("data list quoted a plain name:\n%s", out)
	}
}
