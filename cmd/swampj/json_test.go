package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// Every command under --json prints exactly one JSON document on stdout —
// success or failure — and, on failure, one {"error","code","exitCode"} on stderr.
func TestEveryCommandPrintsOneJSONDocument(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	if out, err := exec.Command("cp", "-R", "../../testdata/example-repo", dir).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	payload := filepath.Join(t.TempDir(), "p.json")
	os.WriteFile(payload, []byte(`{"a":1}`), 0o644)
	item := "command/shell/3f9c2b7e-5a1d-4e8f-9b6c-0d2e4f6a8b1c/result"
	runs := [][]string{
		{"recover"}, {"recover", "--dry-run"}, {"journal", "list"},
		{"catalog", "verify"}, {"catalog", "rebuild"},
		{"data", "list"}, {"data", "versions", item}, {"data", "get", item},
		{"data", "write", item, "--file", payload}, {"journal", "show", "1"},
		{"doctor"}, {"doctor", "--repair"},
		{"datastore", "namespace", "list"}, {"datastore", "namespace", "set", "js"},
		{"datastore", "namespace", "migrate"}, {"datastore", "namespace", "migrate", "--confirm"},
		{"datastore", "namespace", "unset", "--migrate", "--confirm"},
		// failures
		{"data", "get", "command/shell/nope/result"}, {"datastore", "namespace", "set", "Bad"},
	}
	// Every command of the tree is in runs, but those whose output is not a
	// result: a script, a man page, a held lock, a narrated tour (demo_test),
	// another command's own output (run_test).
	notJSON := map[string]bool{"completion": true, "man": true, "journal hold": true, "demo": true, "run": true}
	covered := map[string]bool{}
	for _, args := range runs {
		for i := range args {
			covered[strings.Join(args[:i+1], " ")] = true
		}
	}
	covered["doctor datastores"] = covered["doctor"] // the same command, checked in habits_test
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, c := range cmds {
			key := strings.TrimSpace(path + " " + c.Name)
			if c.Name == "help" || notJSON[key] {
				continue
			}
			if len(realSubcommands(c)) > 0 {
				walk(key, c.Subcommands)
				if c.Action == nil {
					continue
				}
			}
			if !covered[key] {
				t.Errorf("%s: not in this test's runs: add a --json run of it", key)
			}
		}
	}
	walk("", commands)
	for _, args := range runs {
		r := swampj(t, dir, append(args, "--json")...)
		if r.code == 0 {
			dec := json.NewDecoder(strings.NewReader(r.stdout))
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("%v: stdout is not JSON: %v\n%s", args, err, r.stdout)
			}
			if dec.More() {
				t.Fatalf("%v: more than one JSON document on stdout:\n%s", args, r.stdout)
			}
			continue
		}
		if r.code == 2 {
			t.Fatalf("%v: usage error: %s", args, r.stderr)
		}
		last := lastLine(r.stderr)
		// swamp's shape, {"error": "<message>", "code": "<code>"}, plus exitCode.
		var e struct {
			Error    string `json:"error"`
			Code     string `json:"code"`
			ExitCode int    `json:"exitCode"`
		}
		if err := json.Unmarshal([]byte(last), &e); err != nil || e.Code == "" || e.Error == "" || e.ExitCode != r.code {
			t.Fatalf("%v: exit %d without a JSON error on stderr: %q", args, r.code, r.stderr)
		}
		if s := strings.TrimSpace(r.stdout); s != "" && !json.Valid([]byte(s)) {
			t.Fatalf("%v: stdout on failure is not JSON: %q", args, r.stdout)
		}
	}
}

func lastLine(s string) string {
	lines := bytes.Split(bytes.TrimSpace([]byte(s)), []byte("\n"))
	return string(lines[len(lines)-1])
}
