package main

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/example"
)

// manifest maps every file and directory under root (relative) to its
// SHA-256 (files), "dir" or the link target. Nothing is left out: the
// journal, the catalog and its -wal/-shm are compared byte for byte.
func treeManifest(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.IsDir():
			m[rel] = "dir"
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			m[rel] = "link " + l
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s := sha256.Sum256(b)
			m[rel] = hex.EncodeToString(s[:])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func diffManifest(before, after map[string]string) []string {
	var d []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			d = append(d, "removed "+k)
		} else if w != v {
			d = append(d, "changed "+k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			d = append(d, "created "+k)
		}
	}
	sort.Strings(d)
	return d
}

// mountReadOnly bind-mounts dir read-only at a new path and returns it; the
// test is skipped with a notice when that is not possible here.
func mountReadOnly(t *testing.T, dir string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("read-only media tests need root for a read-only bind mount; skipped")
	}
	mp := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(mp, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "--bind", dir, mp).CombinedOutput(); err != nil {
		t.Skipf("read-only media tests need mount --bind (%v: %s); skipped", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", mp).Run() })
	if out, err := exec.Command("mount", "-o", "remount,bind,ro", mp).CombinedOutput(); err != nil {
		t.Skipf("read-only media tests need mount -o remount,bind,ro (%v: %s); skipped", err, out)
	}
	if err := os.WriteFile(filepath.Join(mp, ".probe"), nil, 0o644); err == nil {
		t.Fatal("the read-only bind mount accepts writes")
	}
	return mp
}

const roAddr = "command/shell/" + example.HelloShell + "/result"

// roRepo builds the example repo with a journal holding a finished write
// (and, with open, an interrupted operation), a catalog in WAL mode whose
// last change is still in a hot -wal with its -shm (a swamp that died before
// a checkpoint: one row deleted there), and a zero-byte version the doctor
// would repair.
func roRepo(t *testing.T, open bool) string {
	t.Helper()
	dir := exampleRepo(t)
	mustOK(t, swampj(t, dir, "catalog", "rebuild", "--confirm"), "rebuild")
	in := filepath.Join(t.TempDir(), "payload")
	if err := os.WriteFile(in, []byte("hello again\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustOK(t, swampj(t, dir, "data", "write", roAddr, "--file", in), "data write")
	if open {
		j, err := journal.Open(fsx.Real(), filepath.Join(dir, ".swamp", "_journal.db"), journal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := j.Begin(&journal.Intent{Kind: "test", Summary: "interrupted", Steps: []journal.Step{{Kind: "barrier"}}}); err != nil {
			t.Fatal(err)
		}
		j.Abandon()
	}
	// A zero-byte version swamp left (#3955): version 9 of the item.
	v9 := filepath.Join(dir, ".swamp", "data", filepath.FromSlash(roAddr), "9")
	if err := os.MkdirAll(v9, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"raw", "metadata.yaml"} {
		if err := os.WriteFile(filepath.Join(v9, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hotWAL(t, filepath.Join(dir, ".swamp", "data", "_catalog.db"))
	return dir
}

// hotWAL deletes one row in a transaction that stays in the -wal, and leaves
// the catalog as a crash would: database, -wal and -shm copied while the
// connection was still open.
func hotWAL(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=wal_autocheckpoint(0)&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`DELETE FROM catalog WHERE rowid = (SELECT min(rowid) FROM catalog)`); err != nil {
		t.Fatal(err)
	}
	saved := map[string][]byte{}
	for _, suf := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(path + suf)
		if err != nil {
			t.Fatalf("the catalog has no %q file while open: %v", suf, err)
		}
		saved[suf] = b
	}
	db.Close() // checkpoints; the crash image is put back below
	for suf, b := range saved {
		if err := os.WriteFile(path+suf, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("no hot WAL: %v", err)
	}
}

// damageTalk is what a command must never say about a healthy journal or
// catalog on read-only media.
var damageTalk = regexp.MustCompile(`(?i)(journal|catalog) \S+ (is|was) damaged|journal_corrupt|catalog_corrupt|corrupt-|moved aside|has been moved|not usable`)

func saysDamage(s string) bool { return damageTalk.MatchString(s) }

// errCodeOf is the code of the JSON error, the last line of stderr (warnings
// come first).
func errCodeOf(t *testing.T, r result) string {
	t.Helper()
	return errorCode(t, result{stderr: lastLine(r.stderr)})
}

func TestInspectionsOnReadOnlyMedia(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("read-only media tests need root for a read-only bind mount; skipped")
	}
	dir := roRepo(t, true)
	// The verdicts on a writable copy are the reference.
	ref := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", dir, ref).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	refVerify := swampj(t, ref, "catalog", "verify", "--json")

	mp := mountReadOnly(t, dir)
	before := treeManifest(t, dir)

	var seen []result
	r := swampj(t, mp, "recover", "--dry-run", "--json")
	seen = append(seen, r)
	if r.code != 0 || !strings.Contains(r.stdout, `"interrupted"`) {
		t.Fatalf("recover --dry-run: %+v", r)
	}
	r = swampj(t, mp, "journal", "list", "--json")
	seen = append(seen, r)
	var list struct {
		Intents []struct {
			ID     uint64
			Status string
		}
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &list) != nil || len(list.Intents) != 2 ||
		list.Intents[0].Status != "done" || list.Intents[1].Status != "open" {
		t.Fatalf("journal list: %+v", r)
	}
	if r = swampj(t, mp, "journal", "show", "2"); r.code != 0 || !strings.Contains(r.stdout, "interrupted") {
		t.Fatalf("journal show: %+v", r)
	}
	r = swampj(t, mp, "doctor", "--json")
	seen = append(seen, r)
	if r.code != 1 || errCodeOf(t, r) != "doctor_findings" || !strings.Contains(r.stdout, `"open_intent"`) {
		t.Fatalf("doctor: %+v", r)
	}
	if r = swampj(t, mp, "doctor", "--repair", "--json"); r.code != 1 || errCodeOf(t, r) != "doctor_findings" {
		t.Fatalf("doctor --repair preview: %+v", r)
	}
	r = swampj(t, mp, "catalog", "verify", "--json")
	seen = append(seen, r)
	v := decodeVerify(t, r)
	if r.code != 1 || errCodeOf(t, r) != "catalog_drift" || v.Counts.RowsMissing != 1 ||
		strings.ReplaceAll(r.stdout, mp, "REPO") != strings.ReplaceAll(refVerify.stdout, ref, "REPO") {
		t.Fatalf("catalog verify must read the hot WAL (one row deleted there) and agree with a writable copy:\nro:  %+v\nref: %+v", r, refVerify)
	}
	if r = swampj(t, mp, "catalog", "rebuild", "--json"); r.code != 1 || errCodeOf(t, r) != "open_intents" {
		t.Fatalf("catalog rebuild preview: %+v", r)
	}
	for _, r := range append(seen, r) {
		if saysDamage(r.stderr + r.stdout) {
			t.Fatalf("an inspection called something damaged: %+v", r)
		}
	}

	// Mutating commands: exit 1, EROFS named, nothing called damaged.
	in := filepath.Join(t.TempDir(), "payload")
	os.WriteFile(in, []byte("x"), 0o644)
	for _, args := range [][]string{
		{"recover"},
		{"recover", "--rollback"},
		{"data", "write", roAddr, "--file", in},
		{"doctor", "--repair", "--confirm"},
		{"catalog", "rebuild", "--confirm"},
		{"datastore", "namespace", "migrate", "--confirm"},
	} {
		r := swampj(t, mp, append(args, "--json")...)
		code := errCodeOf(t, r)
		if r.code != 1 || saysDamage(r.stderr) {
			t.Fatalf("%v: %+v", args, r)
		}
		// doctor and rebuild refuse earlier, because of the open intent.
		if code != "read_only_media" && code != "open_intents" && code != "doctor_findings" {
			t.Fatalf("%v: want read_only_media, got %s: %s", args, code, r.stderr)
		}
		if code == "read_only_media" && !strings.Contains(r.stderr, "read-only") {
			t.Fatalf("%v: the message must say the media is read-only: %s", args, r.stderr)
		}
		t.Logf("%v: %s", args, strings.TrimSpace(r.stderr))
	}
	if d := diffManifest(before, treeManifest(t, dir)); len(d) > 0 {
		t.Fatalf("the read-only tree changed: %v", d)
	}
}

// With no open intent: recover is a no-op (the startup hook), the rebuild
// preview runs, and every mutating command fails naming EROFS.
func TestNoOpenIntentOnReadOnlyMedia(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("read-only media tests need root for a read-only bind mount; skipped")
	}
	dir := roRepo(t, false)
	mp := mountReadOnly(t, dir)
	before := treeManifest(t, dir)
	if r := swampj(t, mp, "recover"); r.code != 0 || !strings.Contains(r.stdout, "Nothing to recover") || r.stderr != "" {
		t.Fatalf("recover with nothing to do must exit 0 on read-only media: %+v", r)
	}
	if r := swampj(t, mp, "catalog", "rebuild"); r.code != 0 || !strings.Contains(r.stdout, "1 rows missing") || !strings.Contains(r.stdout, "Nothing was changed") {
		t.Fatalf("catalog rebuild preview: %+v", r)
	}
	r := swampj(t, mp, "doctor", "--json")
	if r.code != 1 || !strings.Contains(r.stdout, `"version_unreadable"`) {
		t.Fatalf("doctor: %+v", r)
	}
	in := filepath.Join(t.TempDir(), "payload")
	os.WriteFile(in, []byte("x"), 0o644)
	for _, args := range [][]string{
		{"data", "write", roAddr, "--file", in},
		{"doctor", "--repair", "--confirm"},
		{"catalog", "rebuild", "--confirm"},
		{"datastore", "namespace", "set", "acme"},
	} {
		r := swampj(t, mp, append(args, "--json")...)
		if r.code != 1 || errCodeOf(t, r) != "read_only_media" || !strings.Contains(r.stderr, "read-only") || saysDamage(r.stderr) {
			t.Fatalf("%v: want exit 1 read_only_media naming EROFS: %+v", args, r)
		}
		t.Logf("%v: %s", args, strings.TrimSpace(r.stderr))
	}
	if d := diffManifest(before, treeManifest(t, dir)); len(d) > 0 {
		t.Fatalf("the read-only tree changed: %v", d)
	}
}

// On a writable repo the inspections create no file (no journal, no holder
// record, no catalog sidecar).
func TestInspectionsCreateNoFile(t *testing.T) {
	for _, withJournal := range []bool{false, true} {
		dir := roRepo(t, withJournal)
		if !withJournal {
			os.Remove(filepath.Join(dir, ".swamp", "_journal.db"))
		}
		names := func() map[string]bool {
			m := map[string]bool{}
			for k := range treeManifest(t, dir) {
				m[k] = true
			}
			return m
		}
		before := names()
		for _, args := range [][]string{
			{"recover", "--dry-run"}, {"journal", "list"}, {"doctor"}, {"doctor", "--repair"},
			{"catalog", "verify"}, {"catalog", "rebuild"},
		} {
			swampj(t, dir, args...)
			for k := range names() {
				if !before[k] {
					t.Fatalf("journal %v: %v created %s", withJournal, args, k)
				}
			}
		}
	}
}

// A directory at the journal path: every command says what it is and
// what to do, and none renames it.
func TestJournalPathIsADirectory(t *testing.T) {
	dir := exampleRepo(t)
	jp := filepath.Join(dir, ".swamp", "_journal.db")
	if err := os.MkdirAll(filepath.Join(jp, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := treeManifest(t, dir)
	for _, args := range [][]string{{"recover"}, {"recover", "--dry-run"}, {"journal", "list"}, {"doctor"}, {"catalog", "verify"}, {"catalog", "rebuild", "--confirm"}} {
		r := swampj(t, dir, append(args, "--json")...)
		if r.code != 1 || errCodeOf(t, r) != "journal_not_a_file" || !strings.Contains(r.stderr, "is a directory") ||
			!strings.Contains(r.stderr, "mv "+jp) || saysDamage(r.stderr) {
			t.Fatalf("%v: %+v", args, r)
		}
	}
	if d := diffManifest(before, treeManifest(t, dir)); len(d) > 0 {
		t.Fatalf("the tree changed: %v", d)
	}
}

// TestDoctorOnReadOnlyMediaOfAHealthyRepo: a read-only mount of a
// healthy repo (a backup image) is its own short report: the data checks
// run in full, swamp's failing health check is a note with the remedy
// "mount it read-write", and the doctor exits 0.
func TestDoctorOnReadOnlyMediaOfAHealthyRepo(t *testing.T) {
	dir := exampleRepo(t)
	mustOK(t, swampj(t, dir, "catalog", "rebuild", "--confirm"), "rebuild")
	mustOK(t, swampj(t, dir, "doctor"), "doctor on the writable repo")
	mp := mountReadOnly(t, dir)
	r := swampj(t, mp, "doctor", "--json")
	var d struct {
		Items, Versions int
		ReadOnly        bool `json:"readOnly"`
		Outcome         string
		Findings        []map[string]any
		Notices         []struct{ Kind, Message, Remedy string }
		SwampChecks     []struct {
			Check  string
			Passed bool
		} `json:"swampChecks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("doctor --json: %v\n%+v", err, r)
	}
	if r.code != 0 || len(d.Findings) != 0 || d.Outcome != "clean" || !d.ReadOnly {
		t.Fatalf("doctor on read-only media of a healthy repo must exit 0 with no finding: exit %d %+v\n%s", r.code, d, r.stderr)
	}
	if d.Items == 0 || d.Versions == 0 {
		t.Fatalf("the data checks did not run: %+v", d)
	}
	noted := false
	for _, n := range d.Notices {
		if n.Kind == "note" && n.Remedy == "mount_read_write" && strings.Contains(n.Message, "swamp cannot write here") &&
			strings.Contains(n.Message, "mount it read-write to use it with swamp") {
			noted = true
		}
	}
	if !noted {
		t.Fatalf("the health check must be a note with the remedy mount_read_write: %+v", d.Notices)
	}
	for _, c := range d.SwampChecks {
		if c.Check == "health" && c.Passed {
			t.Fatalf("swamp's health check is shown as what it is (swamp cannot write here): %+v", d.SwampChecks)
		}
	}
	text := swampj(t, mp, "doctor")
	if text.code != 0 || !strings.Contains(text.stdout, "read-only media") || !strings.Contains(text.stdout, "[remedy: mount_read_write]") ||
		!strings.Contains(text.stdout, "No problems found") {
		t.Fatalf("text report: %+v", text)
	}
}
