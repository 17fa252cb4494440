package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/example"
)

// ptyRun runs the binary with stderr on a pseudo-terminal (util-linux
// script) and stdout in a file; it returns stdout, and the chunks written
// to the terminal with the time each arrived.
type ptyChunk struct {
	at   time.Time
	text string
}

func ptyRun(t *testing.T, dir string, env []string, args ...string) (stdout string, chunks []ptyChunk, start, end time.Time) {
	t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("no script(1) for a pseudo-terminal")
	}
	outFile := filepath.Join(t.TempDir(), "stdout")
	quoted := []string{shellQuote(binary)}
	for _, a := range args {
		quoted = append(quoted, shellQuote(a))
	}
	line := strings.Join(quoted, " ") + " >" + shellQuote(outFile) + " </dev/null"
	cmd := exec.Command("script", "-qfec", line, "/dev/null")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(pipe)
	buf := make([]byte, 4096)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			chunks = append(chunks, ptyChunk{time.Now(), string(buf[:n])})
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	end = time.Now()
	b, err := os.ReadFile(outFile)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), chunks, start, end
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func progressRepo(t *testing.T, items int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if _, err := example.Synthetic(fsx.Real(), dir, example.SyntheticOptions{Items: items, Versions: 3, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	mustOK(t, swampj(t, dir, "catalog", "rebuild", "--confirm"), "catalog rebuild")
	return dir
}

var csiRE = regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")

var progressLineRE = regexp.MustCompile(`([a-z][a-z ]+) (\d+)(/(\d+))? ([a-z]+) \(([0-9.k]+)/s, ([0-9.]+m?s)\)`)

// phaseLineRE is a phase with no count (one long commit): its elapsed time.
var phaseLineRE = regexp.MustCompile(`\r([a-z][a-z ]+) \(([0-9.]+m?s)\)`)

// progressSilenceBound is the longest silence the terminal may see: ten
// times the longest measured (~290 ms, one 250 ms redraw tick plus
// scheduling), so a loaded machine does not fail it while a line that
// stops being redrawn does.
const progressSilenceBound = 3 * time.Second

// checkProgress asserts that the terminal saw progress lines of the wanted
// phases with numbers, and no silence longer than progressSilenceBound
// between redraws.
func checkProgress(t *testing.T, chunks []ptyChunk, start, end time.Time, phases ...string) {
	t.Helper()
	var all strings.Builder
	last, longest := start, time.Duration(0)
	for _, c := range chunks {
		gap := c.at.Sub(last)
		if gap > progressSilenceBound {
			t.Errorf("%s of silence on the terminal before %q", gap, c.text)
		}
		longest = max(longest, gap)
		last = c.at
		all.WriteString(c.text)
	}
	if gap := end.Sub(last); gap > progressSilenceBound {
		t.Errorf("%s of silence on the terminal before the exit", gap)
	} else {
		longest = max(longest, gap)
	}
	seen := map[string]bool{}
	plain := csiRE.ReplaceAllString(all.String(), "")
	for _, m := range progressLineRE.FindAllStringSubmatch(plain, -1) {
		seen[m[1]] = true
	}
	for _, m := range phaseLineRE.FindAllStringSubmatch(plain, -1) {
		seen[m[1]] = true
	}
	for _, ph := range phases {
		if !seen[ph] {
			t.Errorf("no %q progress line on the terminal; saw %v in %q", ph, seen, lastOf(all.String(), 600))
		}
	}
	if !strings.HasSuffix(strings.TrimRight(all.String(), " "), "\r") && !strings.HasSuffix(all.String(), "\033[K") {
		t.Errorf("the progress line is not cleared at the end: %q", lastOf(all.String(), 200))
	}
	t.Logf("%d chunks over %s, longest silence %s; phases %v; terminal: %q", len(chunks), end.Sub(start).Round(time.Millisecond),
		longest.Round(time.Millisecond), seen, lastOf(plain, 400))
}

func lastOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func TestProgressMigrationOnTerminal(t *testing.T) {
	dir := progressRepo(t, 3000) // 3,000 items x 3 versions: ~21,000 files
	mustOK(t, swampj(t, dir, "datastore", "namespace", "set", "ns1"), "namespace set")
	stdout, chunks, start, end := ptyRun(t, dir, []string{"NO_COLOR=1"}, "datastore", "namespace", "migrate", "--confirm")
	if strings.Contains(stdout, "\r") {
		t.Errorf("progress on stdout: %q", lastOf(stdout, 200))
	}
	checkProgress(t, chunks, start, end, "planning")
	for _, c := range chunks {
		if strings.Contains(c.text, "\033") {
			t.Fatalf("an escape sequence under NO_COLOR: %q", c.text)
		}
	}
}

func TestProgressDoctorChecksumsOnTerminal(t *testing.T) {
	dir := progressRepo(t, 3000)
	_, chunks, start, end := ptyRun(t, dir, nil, "doctor", "--verify-checksums")
	checkProgress(t, chunks, start, end, "verifying checksums")
}

func TestProgressJSONIsOneDocumentAndNoProgress(t *testing.T) {
	dir := progressRepo(t, 1000)
	mustOK(t, swampj(t, dir, "datastore", "namespace", "set", "ns1"), "namespace set")
	stdout, chunks, _, _ := ptyRun(t, dir, nil, "--json", "datastore", "namespace", "migrate", "--confirm")
	dec := json.NewDecoder(strings.NewReader(stdout))
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("stdout is not JSON: %v: %q", err, lastOf(stdout, 300))
	}
	if dec.More() {
		t.Errorf("more than one JSON document on stdout: %q", lastOf(stdout, 300))
	}
	var term bytes.Buffer
	for _, c := range chunks {
		term.WriteString(c.text)
	}
	if strings.Contains(term.String(), "\r") && progressLineRE.MatchString(term.String()) {
		t.Errorf("progress under --json: %q", lastOf(term.String(), 300))
	}
}

// TestProgressRecoverOnTerminal: recovering a migration killed part way
// shows the "recovering" phase, counted in steps, from before its first
// step (which may be the long restamp) to the end.
func TestProgressRecoverOnTerminal(t *testing.T) {
	dir := progressRepo(t, 200)
	mustOK(t, swampj(t, dir, "datastore", "namespace", "set", "ns1"), "namespace set")
	if !swampjKilledAt(t, dir, "rename-noreplace:2", nil, "datastore", "namespace", "migrate", "--confirm") {
		t.Fatal("the migration was not killed")
	}
	stdout, chunks, start, end := ptyRun(t, dir, nil, "recover")
	if !strings.Contains(stdout, "done") {
		t.Fatalf("the killed migration was not finished: %q", stdout)
	}
	checkProgress(t, chunks, start, end, "recovering")
	plain := csiRE.ReplaceAllString(joinChunks(chunks), "")
	if !regexp.MustCompile(`recovering 0/\d+ steps`).MatchString(plain) {
		t.Errorf("no 'recovering 0/N steps' before the first step: %q", lastOf(plain, 400))
	}
}

func joinChunks(chunks []ptyChunk) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString(c.text)
	}
	return b.String()
}
