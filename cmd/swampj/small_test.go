package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// Smaller cases, against the real binary.

const smallAddr = "command/shell/" + dataModel + "/result"

// smallRepo writes versions 1..n of smallAddr with swampj (catalog rows
// included) and returns the repo and the item directory.
func smallRepo(t *testing.T, n int) (dir, item string) {
	t.Helper()
	dir = newRepo(t)
	for i := 1; i <= n; i++ {
		mustOK(t, swampjIn(t, dir, []byte(`{"n":`+itoa(i)+`}`), "data", "write", smallAddr, "-q"), "write")
	}
	return dir, filepath.Join(dir, ".swamp", "data", "command", "shell", dataModel, "result")
}

// TestSymlinkedVersionIsNotAVersionAnywhere: version 3 replaced by a symlink
// to its directory (swamp's walk never descends it, its listVersions and
// catalog backfill skip it). data get refuses it, versions and list mark
// it, the doctor and catalog verify agree before and after the repair.
func TestSymlinkedVersionIsNotAVersionAnywhere(t *testing.T) {
	dir, item := smallRepo(t, 3)
	elsewhere := filepath.Join(dir, "elsewhere3")
	if err := os.Rename(filepath.Join(item, "3"), elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(item, "3")); err != nil {
		t.Fatal(err)
	}

	r := swampj(t, dir, "data", "get", smallAddr)
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "symlink") || !strings.Contains(r.stderr, "--version 2") {
		t.Fatalf("data get of a symlinked latest: %+v", r)
	}
	r = swampj(t, dir, "data", "get", smallAddr, "--version", "3", "--json")
	if code, msg := errCode(t, r); r.code != 1 || code != "unreadable_version" || !strings.Contains(msg, "symlink") {
		t.Fatalf("data get --version 3: %+v", r)
	}
	r = mustOK(t, swampj(t, dir, "data", "list", "--json"), "list")
	var items []struct {
		LatestReadable bool   `json:"latestReadable"`
		LastReadable   *int64 `json:"lastReadable"`
		Versions       int    `json:"versions"`
	}
	err := remarshal(listedItems(t, r.stdout), &items)
	if err != nil || len(items) != 1 ||
		items[0].LatestReadable || items[0].LastReadable == nil || *items[0].LastReadable != 2 || items[0].Versions != 2 {
		t.Fatalf("data list: %v %s", err, r.stdout)
	}

	// Detection: both say the catalog's row 3 has no readable version.
	doc := swampj(t, dir, "doctor")
	ver := swampj(t, dir, "catalog", "verify")
	if doc.code != 1 || ver.code != 1 || !strings.Contains(doc.stdout, "version_symlink") {
		t.Fatalf("before the repair:\ndoctor %+v\nverify %+v", doc, ver)
	}
	mustOK(t, swampj(t, dir, "doctor", "--repair", "--confirm"), "repair")
	doc = swampj(t, dir, "doctor")
	ver = swampj(t, dir, "catalog", "verify")
	if doc.code != 0 || ver.code != 0 {
		t.Fatalf("after the repair the doctor and verify must agree it is clean:\ndoctor %+v\nverify %+v", doc, ver)
	}
	if r := mustOK(t, swampj(t, dir, "data", "get", smallAddr), "get"); r.stdout != `{"n":2}` {
		t.Fatalf("data get after the repair: %q", r.stdout)
	}
	if fi, err := os.Lstat(filepath.Join(item, "3")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink must be left alone: %v %v", fi, err)
	}
}

// TestDoctorSaysWhetherChecksumsWereRead: a clean doctor without
// --verify-checksums says the checksums were not read (text and JSON); with
// it, it says they were, and finds a raw of the right size with the wrong
// bytes.
func TestDoctorSaysWhetherChecksumsWereRead(t *testing.T) {
	dir, item := smallRepo(t, 2)
	if err := os.WriteFile(filepath.Join(item, "2", "raw"), []byte(`{"n":0}`), 0o644); err != nil { // same size
		t.Fatal(err)
	}
	r := mustOK(t, swampj(t, dir, "doctor"), "doctor")
	if !strings.Contains(r.stdout, "No problems found.") || !strings.Contains(r.stdout, "Checksums were not verified") ||
		!strings.Contains(r.stdout, "--verify-checksums") {
		t.Fatalf("doctor text must say the checksums were not read:\n%s", r.stdout)
	}
	var d struct {
		ChecksumsVerified *bool `json:"checksumsVerified"`
	}
	r = mustOK(t, swampj(t, dir, "doctor", "--json"), "doctor --json")
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || d.ChecksumsVerified == nil || *d.ChecksumsVerified {
		t.Fatalf("doctor --json: want checksumsVerified false: %v %s", err, r.stdout)
	}
	r = swampj(t, dir, "doctor", "--verify-checksums", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || r.code != 1 || d.ChecksumsVerified == nil || !*d.ChecksumsVerified ||
		!strings.Contains(r.stdout, "checksum_mismatch") {
		t.Fatalf("doctor --verify-checksums --json: %v %+v", err, r)
	}
	r = swampj(t, dir, "doctor", "--verify-checksums")
	if r.code != 1 || !strings.Contains(r.stdout, "checksums: every raw read") {
		t.Fatalf("doctor --verify-checksums text: %+v", r)
	}
}

// TestDataGetWritesNoBytesThatFailTheirChecksum: raw of the right size but
// other bytes (what a crash can leave) is refused before a byte reaches
// stdout, exit 1, code unreadable_version, naming raw.
func TestDataGetWritesNoBytesThatFailTheirChecksum(t *testing.T) {
	dir, item := smallRepo(t, 2)
	raw := filepath.Join(item, "2", "raw")
	if err := os.WriteFile(raw, []byte("\x00\x00\x00\x00\x00\x00\x00"), 0o644); err != nil { // same size as {"n":2}
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"data", "get", smallAddr},
		{"data", "get", smallAddr, "--version", "2"},
		{"data", "get", smallAddr, "--json"},
	} {
		r := swampj(t, dir, args...)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, raw) || !strings.Contains(r.stderr, "SHA-256") {
			t.Errorf("%v: want exit 1, nothing on stdout, raw named: %+v", args, r)
		}
	}
	r := swampj(t, dir, "data", "get", smallAddr, "--json")
	if code, msg := errCode(t, r); code != "unreadable_version" || !strings.Contains(msg, "--version 1") {
		t.Errorf("--json error: %s %s", code, msg)
	}
	if r := mustOK(t, swampj(t, dir, "data", "get", smallAddr, "--version", "1"), "get v1"); r.stdout != `{"n":1}` {
		t.Errorf("version 1: %q", r.stdout)
	}
}

// usageCase is one command line that must be refused as a usage error.
type usageCase struct {
	args []string
	why  string
}

// usageCases walks the command tree and derives, for every command and
// flag, the command lines that are usage errors: an unknown subcommand
// word, an unknown flag, an unexpected positional argument (or too many),
// a value flag without its value, and a value its type cannot hold.
func usageCases(t *testing.T) []usageCase {
	t.Helper()
	// Valid positionals of the commands that take some, so that the flag
	// (not the missing argument) is what is wrong.
	positionals := map[string][]string{
		"data write": {smallAddr}, "data get": {smallAddr}, "data versions": {smallAddr}, "data list": {},
		"journal show": {"1"}, "datastore namespace set": {"ns1"}, "demo": {}, "run": {"--", "true"}, "completion": {"bash"},
	}
	badValue := func(f cli.Flag) []string {
		name := "--" + f.Names()[0]
		switch f.(type) {
		case *cli.BoolFlag:
			return []string{name + "=maybe"}
		case *cli.Int64Flag, *cli.IntFlag, *cli.UintFlag, *cli.Uint64Flag, *cli.DurationFlag, *cli.Float64Flag:
			return []string{name, "not-a-number"}
		case *cli.GenericFlag:
			return []string{name, "=no-key"}
		}
		return nil
	}
	var cases []usageCase
	var walk func(path []string, cmds []*cli.Command)
	walk = func(path []string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Name == "help" {
				continue // urfave adds it to the shared commands once an app has run in this process
			}
			p := append(append([]string{}, path...), c.Name)
			key := strings.Join(p, " ")
			if c.Action == nil || len(realSubcommands(c)) > 0 {
				cases = append(cases, usageCase{append(p, "bogus"), "unknown subcommand"})
				walk(p, c.Subcommands)
				continue
			}
			pos, ok := positionals[key]
			if c.ArgsUsage == "" {
				cases = append(cases, usageCase{append(p, "bogus"), "unexpected positional"})
			} else if !ok {
				t.Fatalf("%s takes arguments (%s): add valid ones to the table", key, c.ArgsUsage)
			} else if key != "run" { // run's positionals are the command it runs
				cases = append(cases, usageCase{append(append(p, pos...), "x", "y", "z", "w"), "too many positionals"})
			}
			line := append(p, pos...)
			if key == "run" {
				line = p // after "-- COMMAND" every word is the command's
			}
			cases = append(cases, usageCase{append(append([]string{}, line...), "--no-such-flag"), "unknown flag"})
			for _, f := range append(append([]cli.Flag{}, c.Flags...), globalFlags...) {
				name := "--" + f.Names()[0]
				if takesValue(f) {
					cases = append(cases, usageCase{append(append([]string{}, line...), name), "value flag without a value"})
				}
				if bad := badValue(f); bad != nil {
					cases = append(cases, usageCase{append(append([]string{}, line...), bad...), "bad value"})
				}
			}
		}
	}
	walk(nil, commands)
	cases = append(cases, usageCase{[]string{"bogus"}, "unknown command"}, usageCase{[]string{"--no-such-flag"}, "unknown global flag"})
	// String flags whose values swamp's metadata schema constrains.
	for _, fv := range [][2]string{
		{"--lifetime", "bogus"}, {"--garbage-collection", "abc"}, {"--garbage-collection", "-3d"}, {"--garbage-collection", "0"},
		{"--owner-type", "bogus"}, {"--workflow-id", "not-a-uuid"}, {"--workflow-run-id", "not-a-uuid"}, {"--content-type", ""},
	} {
		cases = append(cases, usageCase{[]string{"data", "write", smallAddr, fv[0], fv[1]}, "bad value"})
	}
	cases = append(cases,
		usageCase{[]string{"data", "get", smallAddr, "--version", "0"}, "bad value"},
		usageCase{[]string{"journal", "show", "abc"}, "bad positional"},
		usageCase{[]string{"doctor", "--confirm"}, "--confirm without --repair"},
	)
	return cases
}

func realSubcommands(c *cli.Command) []*cli.Command {
	var out []*cli.Command
	for _, s := range c.Subcommands {
		if s.Name != "help" {
			out = append(out, s)
		}
	}
	return out
}

// TestEveryUsageErrorExits2: every usage error of every command exits 2
// with code usage, prints nothing on stdout and changes nothing.
func TestEveryUsageErrorExits2(t *testing.T) {
	dir := newRepo(t)
	cases := usageCases(t)
	if len(cases) < 60 {
		t.Fatalf("only %d cases: the command tree walk is broken", len(cases))
	}
	for _, uc := range cases {
		args := append(append([]string{}, uc.args...), "--json")
		if uc.why == "value flag without a value" {
			// The flag must end the command line.
			args = append([]string{"--json"}, uc.args...)
		}
		r := swampj(t, dir, args...)
		if r.code != 2 || r.stdout != "" {
			t.Errorf("%s: swampj %s: want exit 2 and no output, got %+v", uc.why, strings.Join(args, " "), r)
			continue
		}
		if code, _ := errCode(t, r); code != "usage" {
			t.Errorf("%s: swampj %s: code %q, want usage", uc.why, strings.Join(args, " "), code)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("usage errors changed the repo: %v", ents)
	}
}

// TestOutOfRangeLatestIsReportedAsFound: a `latest` of 99999999999999999999
// is beyond 2^53-1: swamp's parseInt reads it as the double 1e20, finds no
// version directory "100000000000000000000" and reports no data. swampj
// reports the text it found, never 9223372036854775807.
func TestOutOfRangeLatestIsReportedAsFound(t *testing.T) {
	dir, item := smallRepo(t, 2)
	const big = "99999999999999999999"
	if err := os.WriteFile(filepath.Join(item, "latest"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	clamped := "9223372036854775807"
	for _, args := range [][]string{{"data", "get", smallAddr}, {"data", "list"}, {"data", "versions", smallAddr}, {"doctor"}, {"data", "list", "--json"}, {"doctor", "--json"}} {
		r := swampj(t, dir, args...)
		if strings.Contains(r.stdout+r.stderr, clamped) || !strings.Contains(r.stdout+r.stderr, big) {
			t.Errorf("%v must show %s as found, never clamped: %+v", args, big, r)
		}
	}
	r := swampj(t, dir, "data", "get", smallAddr, "--json")
	if code, msg := errCode(t, r); r.code != 1 || code != "unreadable_version" || !strings.Contains(msg, "--version 2") {
		t.Errorf("data get: %+v", r)
	}
	var items []struct {
		Latest           *int64 `json:"version"`
		LatestOutOfRange string `json:"latestOutOfRange"`
		LastReadable     *int64 `json:"lastReadable"`
	}
	r = mustOK(t, swampj(t, dir, "data", "list", "--json"), "list")
	if err := remarshal(listedItems(t, r.stdout), &items); err != nil || len(items) != 1 || items[0].Latest != nil ||
		items[0].LatestOutOfRange != big || items[0].LastReadable == nil || *items[0].LastReadable != 2 {
		t.Fatalf("data list --json: %v %s", err, r.stdout)
	}
	if r := swampj(t, dir, "doctor", "--json"); r.code != 1 || !strings.Contains(r.stdout, `"latest_damaged"`) {
		t.Fatalf("doctor: %+v", r)
	}
	mustOK(t, swampj(t, dir, "doctor", "--repair", "--confirm"), "repair")
	if b, _ := os.ReadFile(filepath.Join(item, "latest")); string(b) != "2" {
		t.Fatalf("latest after the repair: %q", b)
	}
}

// TestVerifyAdvisesMigrateWhileNotMigrated: after `namespace set` and
// before `migrate`, catalog verify (and a rebuild preview) point at the
// migration, which moves the data into the namespace (a rebuild there only
// describes the data where it is, stamped solo); after it, verify is
// clean.
func TestVerifyAdvisesMigrateWhileNotMigrated(t *testing.T) {
	dir, _ := smallRepo(t, 2)
	mustOK(t, swampj(t, dir, "datastore", "namespace", "set", "ns1"), "set")
	migrate := "swampj datastore namespace migrate --confirm"
	r := swampj(t, dir, "catalog", "verify")
	if r.code != 1 || !strings.Contains(r.stdout, migrate) || !strings.Contains(r.stderr, migrate) ||
		strings.Contains(r.stdout+r.stderr, "Run 'swampj catalog rebuild --confirm'") || strings.Contains(r.stderr, "; run 'swampj catalog rebuild") {
		t.Fatalf("verify must advise the migration: %+v", r)
	}
	r = swampj(t, dir, "catalog", "verify", "--json")
	if code, msg := errCode(t, r); r.code != 1 || code != "unmigrated_data" || !strings.Contains(msg, migrate) {
		t.Fatalf("verify --json: %+v", r)
	}
	if r := swampj(t, dir, "catalog", "rebuild"); !strings.Contains(r.stdout, migrate) || strings.Contains(r.stdout, "Run 'swampj catalog rebuild --confirm'") {
		t.Fatalf("rebuild preview must advise the migration: %+v", r)
	}
	if r := swampj(t, dir, "catalog", "rebuild", "--confirm", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"soloView": true`) {
		t.Fatalf("rebuild must rebuild the solo rows: %+v", r)
	}
	mustOK(t, swampj(t, dir, "datastore", "namespace", "migrate", "--confirm"), "migrate")
	mustOK(t, swampj(t, dir, "catalog", "verify"), "verify after the migration")
}

// remarshal decodes v (decoded JSON) again into out.
func remarshal(v, out any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}
