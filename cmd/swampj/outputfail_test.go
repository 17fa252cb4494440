package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOutputThatCannotBeWrittenFails: a result that cannot be written to
// stdout (here /dev/full: every write is ENOSPC) fails the command with
// exit 1 and a message on stderr, for the text output of every command as
// for --json and data get, instead of exiting 0 with the result lost.
func TestOutputThatCannotBeWrittenFails(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full here: %v", err)
	}
	defer full.Close()
	dir, _ := smallRepo(t, 2)
	mustOK(t, swampj(t, dir, "doctor"), "doctor on the clean repo")
	for _, args := range [][]string{
		{"catalog", "verify"},
		{"journal", "list"},
		{"journal", "show", "1"},
		{"doctor"},
		{"data", "list"},
		{"data", "versions", smallAddr},
		{"recover"},
		{"datastore", "namespace", "list"},
		{"data", "list", "--json"},
		{"data", "get", smallAddr},
		{"--help"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, binary, args...)
		cmd.Dir = dir
		var se strings.Builder
		cmd.Stdout, cmd.Stderr = full, &se
		err := cmd.Run()
		cancel()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != 1 || !strings.Contains(se.String(), "could not write the result to stdout") {
			t.Errorf("%v > /dev/full: exit %d, want 1 saying the result could not be written\nstderr: %s", args, code, se.String())
		}
		if strings.Contains(strings.Join(args, " "), "--json") && !strings.Contains(se.String(), `"code":"output_failed"`) {
			t.Errorf("%v > /dev/full: the JSON error lacks code output_failed: %s", args, se.String())
		}
	}
	// A command that fails on its own keeps its exit code, and says its
	// report was lost too: the doctor with a finding exits 1.
	if err := os.WriteFile(filepath.Join(dir, ".swamp", "data", "command", "shell", dataModel, "result", "latest"), []byte("9"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "doctor")
	cmd.Dir = dir
	var se strings.Builder
	cmd.Stdout, cmd.Stderr = full, &se
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(se.String(), "could not be written to stdout") {
		t.Errorf("doctor with a finding > /dev/full: %v, want exit 1 saying the result was lost too\nstderr: %s", err, se.String())
	}
}
