//go:build !urfave_cli_no_docs

package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestManListsWhatUrfaveListed compares man.go's page with the one
// urfave/cli's ToMan printed before it (compiled only without the
// urfave_cli_no_docs tag, as plain `go test` builds): the same commands in
// the same order and, overall, the same flags. urfave's page names a
// command by its last word only, so the comparison is by last word.
func TestManListsWhatUrfaveListed(t *testing.T) {
	app := newApp(nil, nil, nil)
	app.Setup()
	old, err := app.ToMan()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := writeMan(&b, app); err != nil {
		t.Fatal(err)
	}
	page := b.String()

	heading := regexp.MustCompile(`(?m)^\.S[HS] "?([^"\n]+)"?$`)
	commands := func(page string) []string {
		var out []string
		seen := false
		for _, m := range heading.FindAllStringSubmatch(page, -1) {
			h := strings.ReplaceAll(m[1], `\-`, "-")
			if h == "COMMANDS" {
				seen = true
				continue
			}
			if seen && h != "help, h" { // urfave's help subcommand, added to commands run in this process
				f := strings.Fields(h)
				out = append(out, f[len(f)-1])
			}
		}
		return out
	}
	if got, want := commands(page), commands(old); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("commands in man.go's page: %q\nin urfave's ToMan: %q", got, want)
	}

	// A flag is a line starting "\fB--name, -n\fP" in urfave's page and
	// the line after ".TP" in man.go's.
	optRe := regexp.MustCompile(`(?:\\-|-)+[a-z][a-z0-9]*(?:(?:\\-|-)[a-z0-9]+)*`)
	flags := func(page string, mine bool) map[string]bool {
		set := map[string]bool{}
		lines := strings.Split(page, "\n")
		for i, line := range lines {
			var names string
			if mine && i > 0 && lines[i-1] == ".TP" {
				names = line
			} else if !mine && strings.HasPrefix(line, `\fB-`) {
				names, _, _ = strings.Cut(line[3:], `\fP`)
			} else {
				continue
			}
			for _, n := range optRe.FindAllString(names, -1) {
				set[strings.ReplaceAll(n, `\-`, "-")] = true
			}
		}
		return set
	}
	got, want := flags(page, true), flags(old, false)
	for f := range want {
		if !got[f] {
			t.Errorf("urfave's ToMan listed the flag %s; man.go's page does not", f)
		}
	}
	for f := range got {
		if !want[f] {
			t.Errorf("man.go's page lists the flag %s, which urfave's ToMan did not", f)
		}
	}
	if len(want) < 20 {
		t.Fatalf("only %d flags in urfave's page: %v", len(want), want)
	}
}
