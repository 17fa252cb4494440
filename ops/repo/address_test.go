package repo

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/swampj/swampj/fsx"
)

func TestNormalizeType(t *testing.T) {
	for in, want := range map[string]string{
		"AWS::EC2::VPC":                     "aws/ec2/vpc",
		"@myorg/foo-bar":                    "@myorg/foo-bar",
		"docker run":                        "docker/run",
		"Microsoft.Resources/resourceGroup": "microsoft/resources/resourcegroup",
		"  /a//b/ ":                         "a/b",
		"a\u00a0b":                          "a/b", // JavaScript's \s includes NBSP
		"ns:thing":                          "ns:thing",
		"a...b":                             "a/b",
		"/":                                 "",
		// JavaScript's toLowerCase (deno): İ is "i̇"; Σ is final before "::"
		// or a space only when no cased letter follows ("." and ":" are
		// case-ignorable, so "ΟΔΟΣ.ΟΔΟΣ" keeps σ), and lowering runs before
		// the separators are replaced.
		"Acme::İstanbul":  "acme/i̇stanbul",
		"@Acme/ΟΔΟΣ.ΟΔΟΣ": "@acme/οδοσ/οδος",
		"ΟΔΟΣ::ΟΔΟΣ":      "οδοσ/οδος",
		"ΟΔΟΣ ΟΔΟΣ":       "οδος/οδος",
		"x/Ɤ":             "x/ɤ", // a Unicode 16 case pair
	} {
		if got := NormalizeType(in); got != want {
			t.Errorf("NormalizeType(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDataNameLatestIsToLowerCase: swamp refuses a data name whose
// toLowerCase is "latest"; "lateſt" (long s, already lower case) is not,
// though case folding would make it so.
func TestDataNameLatestIsToLowerCase(t *testing.T) {
	if _, err := ParseAddress("t/m/LaTeSt"); err == nil {
		t.Error("LaTeSt must be refused")
	}
	if _, err := ParseAddress("t/m/late\u017ft"); err != nil {
		t.Errorf("late\u017ft is a name swamp accepts: %v", err)
	}
}

func TestParseAddress(t *testing.T) {
	for _, tc := range []struct {
		in               string
		typ, model, name string
	}{
		{"@acme/scanner/0f8e2b1a/result", "@acme/scanner", "0f8e2b1a", "result"},
		{"AWS::EC2::VPC/model-001/vpc-prod", "aws/ec2/vpc", "model-001", "vpc-prod"},
		{"swamp/echo/m/207333", "swamp/echo", "m", "207333"},
		{"t/m/a b:c*?", "t", "m", "a b:c*?"},
		{"t/m/Latest2", "t", "m", "Latest2"},
		{"t/m/.hidden", "t", "m", ".hidden"},
		{"t/m..x/n", "t", "m..x", "n"},
	} {
		a, err := ParseAddress(tc.in)
		if err != nil {
			t.Errorf("ParseAddress(%q): %v", tc.in, err)
			continue
		}
		if a.Type != tc.typ || a.ModelID != tc.model || a.DataName != tc.name {
			t.Errorf("ParseAddress(%q) = %+v", tc.in, a)
		}
		if want := tc.typ + "/" + tc.model + "/" + tc.name; a.String() != want {
			t.Errorf("String() = %q, want %q", a.String(), want)
		}
	}
	for _, in := range []string{
		"", "result", "m/result", "/m/result", "t//result", "t/m/", "t/./n", "t/../n",
		"t/m/..", "t/m/a..b", "t/m/latest", "t/m/LATEST", "t/m/LaTeSt", "t/m/.", "t/m/.lock",
		"t/m/a\\b", "t\\x/m/n", "t/m/a\x00b", "::/m/n", " . /m/n",
	} {
		if a, err := ParseAddress(in); !errors.Is(err, ErrInvalidAddress) {
			t.Errorf("ParseAddress(%q) = %+v, %v; want ErrInvalidAddress", in, a, err)
		}
	}
}

func TestItemDirAndSymlinkEscape(t *testing.T) {
	fsys := fsx.Real()
	dir := newRepo(t, "")
	r := load(t, dir, nil)
	if err := os.MkdirAll(r.DataRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	a, _ := ParseAddress("@acme/scanner/m1/result")
	p, err := r.ItemDir(fsys, a)
	if err != nil || p != filepath.Join(r.DataRoot, "@acme", "scanner", "m1", "result") {
		t.Fatalf("ItemDir = %s, %v", p, err)
	}
	if md := r.ModelDir(a); md != filepath.Join(r.DataRoot, "@acme", "scanner", "m1") {
		t.Errorf("ModelDir = %s", md)
	}

	// A type directory that is a symlink out of the data root is refused.
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(r.DataRoot, "evil")); err != nil {
		t.Fatal(err)
	}
	a2, _ := ParseAddress("evil/m1/result")
	_, err = r.ItemDir(fsys, a2)
	var oe *OutsideDataRootError
	if !errors.Is(err, ErrOutsideDataRoot) || !errors.As(err, &oe) {
		t.Fatalf("escape via type dir: %v", err)
	}
	// ... also when the item exists out there.
	_ = os.MkdirAll(filepath.Join(outside, "m1", "result"), 0o755)
	if _, err := r.ItemDir(fsys, a2); !errors.Is(err, ErrOutsideDataRoot) {
		t.Errorf("escape via existing item: %v", err)
	}
	// A symlink that stays inside the data root is fine.
	_ = os.MkdirAll(filepath.Join(r.DataRoot, "real", "type"), 0o755)
	_ = os.Symlink(filepath.Join(r.DataRoot, "real", "type"), filepath.Join(r.DataRoot, "alias"))
	a3, _ := ParseAddress("alias/m1/result")
	if _, err := r.ItemDir(fsys, a3); err != nil {
		t.Errorf("inside symlink: %v", err)
	}
	// A dangling symlink cannot be proven safe.
	_ = os.Symlink(filepath.Join(outside, "gone"), filepath.Join(r.DataRoot, "dangling"))
	a4, _ := ParseAddress("dangling/m1/result")
	if _, err := r.ItemDir(fsys, a4); err == nil {
		t.Error("dangling symlink accepted")
	}
}

func TestItemDirDataRootIsSymlink(t *testing.T) {
	// The datastore base is reached through a symlink: the data root itself
	// resolves elsewhere, and that must not count as an escape.
	fsys := fsx.Real()
	real := t.TempDir()
	_ = os.MkdirAll(filepath.Join(real, "data", "t"), 0o755)
	linkParent := t.TempDir()
	link := filepath.Join(linkParent, "store")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	dir := newRepo(t, "datastore:\n  type: filesystem\n  path: "+link+"\n")
	r := load(t, dir, nil)
	a, _ := ParseAddress("t/m/n")
	if _, err := r.ItemDir(fsys, a); err != nil {
		t.Errorf("data root via symlink: %v", err)
	}
	// Nothing exists yet below a missing data root: still fine.
	dir2 := newRepo(t, "datastore:\n  type: filesystem\n  path: "+filepath.Join(t.TempDir(), "not-yet")+"\n")
	r2 := load(t, dir2, nil)
	if _, err := r2.ItemDir(fsys, a); err != nil {
		t.Errorf("missing data root: %v", err)
	}
}

func TestExcludeMatcher(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		path     string
		want     bool
	}{
		{[]string{"telemetry/**"}, "telemetry/a/b.json", true},
		{[]string{"telemetry/**"}, "telemetry", false},
		{[]string{"telemetry/*"}, "telemetry/a/b", false},
		{[]string{"**/x.log"}, "x.log", true},
		{[]string{"**/x.log"}, "a/b/x.log", true},
		{[]string{"*.log"}, "a/x.log", false},
		{[]string{"data"}, "/data", true},
		{[]string{"dat?"}, "data", true},
		{[]string{"[cd]ata"}, "data", true},
		{[]string{"[!d]ata"}, "data", true}, // JS reads [!d] as "! or d", not negation
		{[]string{"a[b"}, "a[b", true},      // unclosed [ is literal
		{[]string{"a.b+c(d)|e$"}, "a.b+c(d)|e$", true},
		{[]string{"a.b"}, "axb", false},
		{[]string{"*", "!data"}, "data", false},
		{[]string{"!data", "*"}, "data", true},
		{[]string{"", "  ", "# data", " data "}, "data", true},
		{[]string{"#data"}, "data", false},
	} {
		m, err := CompileExclude(tc.patterns)
		if err != nil {
			t.Errorf("%q: %v", tc.patterns, err)
			continue
		}
		if got := m.Excluded(tc.path); got != tc.want {
			t.Errorf("%q on %q = %v, want %v", tc.patterns, tc.path, got, tc.want)
		}
	}
}

// movingFS moves dir to to just before the first EvalSymlinks of dir, as a
// migration moving a directory between a writer's look at it and its
// resolve does.
type movingFS struct {
	fsx.FS
	dir, to string
	moved   *bool
}

func (m movingFS) EvalSymlinks(p string) (string, error) {
	if p == m.dir && !*m.moved {
		*m.moved = true
		if err := os.Rename(m.dir, m.to); err != nil {
			return "", err
		}
	}
	return m.FS.EvalSymlinks(p)
}

// A directory moved away between the look and the resolve is not taken
// for a dangling symlink: the resolve looks again and finds the ancestor
// that is still there.
func TestResolveExistingLooksAgainWhenADirectoryMovedMeanwhile(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "ns", "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	moved := false
	fsys := movingFS{FS: fsx.Real(), dir: dir, to: filepath.Join(root, "data"), moved: &moved}
	got, err := resolveExisting(fsys, filepath.Join(dir, "command", "shell"))
	realRoot, _ := filepath.EvalSymlinks(root)
	if err != nil || got != filepath.Join(realRoot, "ns", "data", "command", "shell") || !moved {
		t.Fatalf("resolve with the directory moved meanwhile: %q, %v (moved %v)", got, err, moved)
	}
}
