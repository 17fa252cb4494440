package main

// `swampj demo [DIR]`: the first thing a newcomer runs. It builds a repo,
// writes through swampj, kills a real migration part way, shows what the
// journal and the doctor see, recovers, then leaves the damage of swamp
// issue #3955 and repairs it — narrating each step, and checking that each
// step did what the narration says (exit 1 otherwise). Every swampj command
// runs as a child process of this binary, exactly as a user would type it.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/swampj/swampj/ops/example"
)

func init() {
	register(&cli.Command{
		Name:      "demo",
		Usage:     "a two-minute tour: crash a real migration, recover it, repair a #3955 zero-byte version",
		ArgsUsage: "[DIR]",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "keep", Usage: "keep the temporary repo afterwards (a DIR given is always kept)"},
		},
		Description: "Builds a repo in DIR (default: a new temporary directory, removed afterwards unless --keep is given\n" +
			"or a step fails) — the bundled example, or,\n" +
			"when SWAMP_BIN names a swamp binary, a repo made by the real swamp — then runs swampj on it step by step:\n" +
			"two journaled writes; a namespace migration killed with SIGKILL right after its first move; what\n" +
			"'journal list' and 'doctor' see; 'recover'; the zero-byte latest version an unclean shutdown of swamp\n" +
			"leaves (#3955), found and repaired by 'doctor --repair --confirm'. Each step is checked; the demo exits 1\n" +
			"if one does not do what it says.\n\n" +
			"EXAMPLE:\n   go run ./cmd/swampj demo\n   swampj demo /tmp/tour",
		Action: runDemo,
	})
}

type demoStep struct {
	Title   string `json:"title"`
	Command string `json:"command,omitempty"`
	OK      bool   `json:"ok"`
	Detail  string `json:"detail,omitempty"`
}

type demoReport struct {
	Dir   string     `json:"dir"`
	Steps []demoStep `json:"steps"`
	OK    bool       `json:"ok"`
	// Kept: the repo is still in Dir (a DIR given, --keep, or a failed step).
	Kept bool `json:"kept"`
}

type demo struct {
	ctx  context.Context
	self string
	dir  string
	out  io.Writer // narration (nil under --json)
	rep  *demoReport
}

type demoRun struct {
	code           int
	killed         bool
	stdout, stderr string
}

// swampj runs this binary in the demo repo.
func (d *demo) swampj(env []string, stdin string, args ...string) demoRun {
	cmd := exec.CommandContext(d.ctx, d.self, args...)
	cmd.Dir = d.dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := demoRun{stdout: so.String(), stderr: se.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			r.killed = true
		}
	} else if err != nil {
		r.code, r.stderr = -1, err.Error()
	}
	return r
}

// step narrates, runs check and records whether it held.
func (d *demo) step(title, command string, check func() (string, error)) {
	if d.out != nil {
		fmt.Fprintf(d.out, "\n• %s\n", title)
		if command != "" {
			fmt.Fprintf(d.out, "  $ %s\n", command)
		}
	}
	detail, err := check()
	s := demoStep{Title: title, Command: command, OK: err == nil, Detail: detail}
	if err != nil {
		s.Detail = err.Error()
	}
	d.rep.Steps = append(d.rep.Steps, s)
	if d.out != nil {
		for _, line := range strings.Split(strings.TrimRight(s.Detail, "\n"), "\n") {
			if line != "" {
				fmt.Fprintf(d.out, "    %s\n", line)
			}
		}
		if err != nil {
			fmt.Fprintf(d.out, "  ✗ this step did not do what it says\n")
		}
	}
}

// want checks an exit code.
func want(r demoRun, code int, what string) error {
	if r.code != code {
		return fmt.Errorf("%s: exit %d, want %d\n%s%s", what, r.code, code, r.stdout, r.stderr)
	}
	return nil
}

func runDemo(c *cli.Context) error {
	e := newEnv(c)
	if c.NArg() > 1 {
		return usageErr(fmt.Errorf("usage: swampj demo [DIR] (got %d arguments)", c.NArg()))
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir := c.Args().First()
	temporary := dir == ""
	if temporary {
		if dir, err = os.MkdirTemp("", "swampj-demo-"); err != nil {
			return err
		}
	} else if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return usageErr(fmt.Errorf("%s is not empty; give a new or empty directory", dir))
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	d := &demo{ctx: c.Context, self: self, dir: dir, rep: &demoReport{Dir: dir}}
	if !e.json {
		d.out = c.App.Writer
		fmt.Fprintf(d.out, "swampj demo in %s\n", dir)
	}
	d.tour(os.Getenv("SWAMP_BIN"))
	d.rep.OK = true
	for _, s := range d.rep.Steps {
		d.rep.OK = d.rep.OK && s.OK
	}
	// The temporary repo is the demo's own: removed unless asked for, or
	// kept for a look when a step failed.
	d.rep.Kept = !temporary || c.Bool("keep") || !d.rep.OK
	removeErr := error(nil)
	if !d.rep.Kept {
		if removeErr = os.RemoveAll(dir); removeErr != nil {
			d.rep.Kept = true
		}
	}
	if err := e.out.result(d.rep, func(w io.Writer) {
		if !d.rep.OK {
			return
		}
		fmt.Fprint(w, "\nDone: every step did what it said. ")
		switch {
		case !d.rep.Kept:
			fmt.Fprintf(w, "The demo repo %s is removed ('swampj demo --keep' keeps it).\n", dir)
		case temporary:
			fmt.Fprintf(w, "The repo is kept in %s (remove it with: rm -rf %s).\n", dir, dir)
		default:
			fmt.Fprintf(w, "The repo is kept in %s.\n", dir)
		}
	}); err != nil {
		return err
	}
	if !d.rep.OK {
		return withCode("demo_failed", exitFailure, fmt.Errorf("the demo found a step that did not do what it says (repo kept in %s; remove it with: rm -rf %s)", dir, dir))
	}
	if removeErr != nil {
		e.out.warn(fmt.Sprintf("the demo repo %s could not be removed: %v (remove it with: rm -rf %s)", dir, removeErr, dir))
	}
	return nil
}

// tour is the demo's script.
func (d *demo) tour(swampBin string) {
	item := d.tourWrites(swampBin)
	d.tourMigration()
	d.tourUncleanShutdown(item)
}

// tourWrites makes the repo (with the real swamp, or the bundled example)
// and writes two versions of one item with swampj; it returns the item.
func (d *demo) tourWrites(swampBin string) string {
	item := "command/shell/" + example.HelloShell + "/result"
	if swampBin != "" {
		d.step("Making a repo with the real swamp ("+swampBin+"): a shell model and two method runs", "swamp init; swamp model create command/shell hello; swamp model method run hello execute ×2",
			func() (string, error) { return d.swampRepo(swampBin, &item) })
	} else {
		d.step("Building the bundled example repo (5 models of swamp's layout, 14 versions) and its catalog", "swampj catalog rebuild --confirm",
			func() (string, error) {
				st, err := example.Write(nil, d.dir) // nil: the real disk
				if err != nil {
					return "", err
				}
				r := d.swampj(nil, "", "catalog", "rebuild", "--confirm")
				return fmt.Sprintf("%d items, %d versions written; catalog built", st.Items, st.Versions), want(r, 0, "catalog rebuild")
			})
	}

	for i, payload := range []string{`{"written":"by swampj","n":1}`, `{"written":"by swampj","n":2}`} {
		d.step(fmt.Sprintf("Writing a new version of %s with swampj (write %d of 2): staged, fsynced, published by one rename, latest moved last", item, i+1),
			"echo '"+payload+"' | swampj data write "+item, func() (string, error) {
				r := d.swampj(nil, payload, "data", "write", item)
				if err := want(r, 0, "data write"); err != nil {
					return "", err
				}
				got := d.swampj(nil, "", "data", "get", item)
				if got.stdout != payload {
					return "", fmt.Errorf("data get serves %q, want %q", got.stdout, payload)
				}
				return strings.TrimSpace(r.stdout), nil
			})
	}

	return item
}

// tourMigration: a namespace migration killed part way (#3316), seen in
// the journal and by the doctor, and finished by recover.
func (d *demo) tourMigration() {
	d.step("Configuring namespace \"demo\" (data moves only with migrate)", "swampj datastore namespace set demo", func() (string, error) {
		r := d.swampj(nil, "", "datastore", "namespace", "set", "demo")
		return strings.TrimSpace(r.stdout), want(r, 0, "namespace set")
	})

	d.step("Starting the migration in a child process, killed with SIGKILL right after its first move (SWAMPJ_FAILPOINT)",
		"SWAMPJ_FAILPOINT=rename-noreplace:1 swampj datastore namespace migrate --confirm", func() (string, error) {
			r := d.swampj([]string{"SWAMPJ_FAILPOINT=rename-noreplace:1"}, "", "datastore", "namespace", "migrate", "--confirm")
			if !r.killed {
				return "", fmt.Errorf("the migration was not killed: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			return "killed part way: some directories moved, some not", nil
		})

	d.step("The journal holds the interrupted plan, every rename and catalog change in it", "swampj journal list", func() (string, error) {
		r := d.swampj(nil, "", "journal", "list")
		if err := want(r, 0, "journal list"); err != nil {
			return "", err
		}
		for _, line := range strings.Split(r.stdout, "\n") {
			if strings.Contains(line, " open ") {
				return strings.TrimSpace(line), nil
			}
		}
		return "", fmt.Errorf("no open intent listed:\n%s", r.stdout)
	})

	d.step("The doctor sees the repo mid-change and says what to run", "swampj doctor", func() (string, error) {
		r := d.swampj(nil, "", "doctor")
		run := firstLineWith(r.stdout, "'swampj recover'")
		if r.code != 1 || !strings.Contains(r.stdout, "open_intent") || run == "" {
			return "", fmt.Errorf("doctor: exit %d, want 1 with open_intent and 'swampj recover' to run\n%s%s", r.code, r.stdout, r.stderr)
		}
		return firstLineWith(r.stdout, "open_intent") + "\n" + run, nil
	})

	d.step("Recovery finishes the migration from the journal, deciding each step by looking at the disk", "swampj recover", func() (string, error) {
		r := d.swampj(nil, "", "recover")
		if err := want(r, 0, "recover"); err != nil {
			return "", err
		}
		if _, err := os.Stat(filepath.Join(d.dir, ".swamp", "demo", "data")); err != nil {
			return "", fmt.Errorf("the data is not in the namespace after recover: %v", err)
		}
		return strings.TrimSpace(r.stdout), nil
	})

}

// tourUncleanShutdown: what a power cut leaves of a swamp write (#3955),
// found by the doctor and repaired without deleting a byte.
func (d *demo) tourUncleanShutdown(item string) {
	var prev string
	d.step("An unclean shutdown of swamp (#3955): a new version with zero-byte raw and metadata.yaml, latest pointing at it", "(simulated: what swamp leaves after a power cut)",
		func() (string, error) {
			prev = d.swampj(nil, "", "data", "get", item).stdout
			itemDir := filepath.Join(d.dir, ".swamp", "demo", "data", filepath.FromSlash(item))
			b, err := os.ReadFile(filepath.Join(itemDir, "latest"))
			if err != nil {
				return "", err
			}
			n, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				return "", err
			}
			bad := filepath.Join(itemDir, strconv.Itoa(n+1))
			if err := os.Mkdir(bad, 0o755); err != nil {
				return "", err
			}
			for _, f := range []string{"raw", "metadata.yaml"} {
				if err := os.WriteFile(filepath.Join(bad, f), nil, 0o644); err != nil {
					return "", err
				}
			}
			if err := os.WriteFile(filepath.Join(itemDir, "latest"), []byte(strconv.Itoa(n+1)), 0o644); err != nil {
				return "", err
			}
			r := d.swampj(nil, "", "data", "get", item)
			if r.code == 0 {
				return "", errors.New("data get still served the item: the damage was not planted")
			}
			return fmt.Sprintf("version %d is empty and latest names it; reading the item now fails", n+1), nil
		})

	d.step("The doctor finds the zero-byte version, latest pointing at it and the catalog row", "swampj doctor", func() (string, error) {
		r := d.swampj(nil, "", "doctor")
		if r.code != 1 || !strings.Contains(r.stdout, "version_unreadable") {
			return "", fmt.Errorf("doctor: exit %d, want 1 with version_unreadable\n%s%s", r.code, r.stdout, r.stderr)
		}
		return firstLineWith(r.stdout, "version_unreadable"), nil
	})

	d.step("The repair moves the bad version to quarantine (nothing is deleted) and points latest back", "swampj doctor --repair --confirm", func() (string, error) {
		r := d.swampj(nil, "", "doctor", "--repair", "--confirm")
		if err := want(r, 0, "doctor --repair --confirm"); err != nil {
			return "", err
		}
		got := d.swampj(nil, "", "data", "get", item)
		if got.code != 0 || got.stdout != prev {
			return "", fmt.Errorf("after the repair data get serves %q (exit %d), want the last good %q", got.stdout, got.code, prev)
		}
		return "latest serves the last good version again: " + prev, nil
	})

	d.step("Everything agrees: the doctor is clean, the catalog matches the disk", "swampj doctor && swampj catalog verify", func() (string, error) {
		if err := want(d.swampj(nil, "", "doctor"), 0, "doctor"); err != nil {
			return "", err
		}
		return "clean", want(d.swampj(nil, "", "catalog", "verify"), 0, "catalog verify")
	})
}

// swampRepo makes the demo repo with the real swamp and names its item.
func (d *demo) swampRepo(bin string, item *string) (string, error) {
	run := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(d.ctx, 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = d.dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("swamp %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	for _, args := range [][]string{
		{"init"}, {"model", "create", "command/shell", "hello"},
		{"model", "method", "run", "hello", "execute", "--input", "run=echo hi"},
		{"model", "method", "run", "hello", "execute", "--input", "run=echo again"},
	} {
		if _, err := run(args...); err != nil {
			return "", err
		}
	}
	m, _ := filepath.Glob(filepath.Join(d.dir, ".swamp", "data", "command", "shell", "*", "result"))
	if len(m) != 1 {
		return "", fmt.Errorf("swamp wrote no result item: %v", m)
	}
	*item = "command/shell/" + filepath.Base(filepath.Dir(m[0])) + "/result"
	return "swamp made " + *item + " (2 versions)", nil
}

func firstLineWith(s, sub string) string {
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}
