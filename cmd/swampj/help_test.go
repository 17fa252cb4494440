package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestEveryCommandHasAnExample walks the whole command tree: each
// command's --help shows at least one example, a swampj command line.
func TestEveryCommandHasAnExample(t *testing.T) {
	dir := newRepo(t)
	n := 0
	var walk func(path []string, cmds []*cli.Command)
	walk = func(path []string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Name == "help" {
				continue
			}
			p := append(append([]string{}, path...), c.Name)
			r := swampj(t, dir, append(p, "--help")...)
			i := strings.Index(r.stdout, "EXAMPLES:")
			if r.code != 0 || i < 0 || !strings.Contains(r.stdout[i:], "swampj "+p[0]) {
				t.Errorf("swampj %s --help has no example:\n%s", strings.Join(p, " "), r.stdout)
			}
			n++
			walk(p, c.Subcommands)
		}
	}
	walk(nil, commands)
	if n < 20 {
		t.Fatalf("only %d commands walked", n)
	}
}

// TestCompletionAndManPage: completion scripts for bash, zsh and fish
// (bash's parses), completion answers from the tree, and a man page.
func TestCompletionAndManPage(t *testing.T) {
	dir := newRepo(t)
	for _, sh := range []string{"bash", "zsh", "fish"} {
		r := mustOK(t, swampj(t, dir, "completion", sh), "completion "+sh)
		if !strings.Contains(r.stdout, "swampj") {
			t.Errorf("completion %s: %q", sh, r.stdout)
		}
		if sh == "bash" {
			if out, err := exec.Command("bash", "-n", "-c", r.stdout).CombinedOutput(); err != nil {
				t.Errorf("bash -n: %v %s", err, out)
			}
		}
	}
	if r := swampj(t, dir, "completion", "tcsh"); r.code != 2 {
		t.Errorf("completion tcsh: %+v", r)
	}
	r := mustOK(t, swampj(t, dir, "data", "--generate-bash-completion"), "complete data")
	for _, w := range []string{"get", "versions", "list", "write"} {
		if !strings.Contains(r.stdout, w+"\n") {
			t.Errorf("completion of 'data' lacks %s: %q", w, r.stdout)
		}
	}
	r = mustOK(t, swampj(t, dir, "doctor", "--generate-bash-completion"), "complete doctor")
	if !strings.Contains(r.stdout, "datastores") {
		t.Errorf("completion of 'doctor' lacks datastores: %q", r.stdout)
	}
	r = mustOK(t, swampj(t, dir, "man"), "man")
	for _, w := range []string{".TH swampj", `.SS "swampj data get"`, `\-\-repo\-dir`, "datastores"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("man page lacks %q", w)
		}
	}
}
