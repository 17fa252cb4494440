package repo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
)

func TestValidateNamespace(t *testing.T) {
	valid := []string{"a", "0", "007", "infra", "team-a", "a--b", "a1-2b", strings.Repeat("a", 64), "9lives"}
	for _, s := range valid {
		if err := ValidateNamespace(s); err != nil {
			t.Errorf("ValidateNamespace(%q) = %v, want nil", s, err)
		}
	}
	for _, tc := range []struct{ slug, want string }{
		{"", "cannot be empty"},
		{strings.Repeat("a", 65), "Namespace must be at most 64 characters, got 65"},
		{"infra-", `Namespace must match [a-z0-9][a-z0-9-]*: "infra-"`},
		{"-infra", `"-infra"`},
		{"Infra", `"Infra"`},
		{"in_fra", `"in_fra"`},
		{"in.fra", `"in.fra"`},
		{"in fra", `"in fra"`},
		{"a/b", `"a/b"`},
		{"-", `"-"`},
		{"ünï", `"ünï"`},
		{"a\"b", `"a\"b"`},
	} {
		err := ValidateNamespace(tc.slug)
		if !errors.Is(err, ErrInvalidNamespace) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ValidateNamespace(%q) = %v, want ErrInvalidNamespace containing %q", tc.slug, err, tc.want)
		}
	}
	// Length is counted in UTF-16 units, as JavaScript does, before the pattern.
	if err := ValidateNamespace(strings.Repeat("😀", 33)); err == nil || !strings.Contains(err.Error(), "got 66") {
		t.Errorf("astral length: %v", err)
	}
	if !IsReservedNamespace("data") || IsReservedNamespace("infra") {
		t.Error("IsReservedNamespace")
	}
}

// The byte-exact example of swamp-format §1.5.1.
const manifestGolden = "{\n" +
	"  \"namespace\": \"infra\",\n" +
	"  \"repoId\": \"5b0c9e2a-7f4d-4e1b-9a3c-2d8e6f1a0b7c\",\n" +
	"  \"registeredAt\": \"2026-08-01T12:00:00.000Z\"\n" +
	"}\n"

func TestWriteManifestBytesGolden(t *testing.T) {
	at := time.Date(2026, 8, 1, 14, 0, 0, 999_999, time.FixedZone("CEST", 2*3600))
	got := string(WriteManifestBytes("infra", "5b0c9e2a-7f4d-4e1b-9a3c-2d8e6f1a0b7c", at))
	if got != manifestGolden {
		t.Errorf("got\n%q\nwant\n%q", got, manifestGolden)
	}
	// JSON.stringify escaping: no HTML escaping, control characters as \u00xx.
	got = string(WriteManifestBytes("x", "<&>\u2028\x01\"\\", at))
	if !strings.Contains(got, `"repoId": "<&>`+"\u2028"+`\u0001\"\\",`) {
		t.Errorf("escaping: %q", got)
	}
}

func TestManifestsRoundTripAndList(t *testing.T) {
	fsys := fsx.Real()
	base := filepath.Join(t.TempDir(), "store")

	if ms, err := ListNamespaces(fsys, base); err != nil || len(ms) != 0 {
		t.Fatalf("missing base: %v, %v", ms, err)
	}
	at := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	for _, ns := range []string{"zeta", "infra", "a-team"} {
		if err := WriteManifest(fsys, base, ns, "repo-"+ns, at); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(base, "infra", ".namespace.json"))
	if err != nil || string(b) != strings.Replace(manifestGolden, "5b0c9e2a-7f4d-4e1b-9a3c-2d8e6f1a0b7c", "repo-infra", 1) {
		t.Errorf("written manifest %q, %v", b, err)
	}
	// Noise that the listing skips: solo-layout dirs, a dot dir with a
	// manifest, a plain file, a symlinked dir.
	for _, d := range []string{"data", "outputs", ".hidden"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.WriteFile(filepath.Join(base, ".hidden", ".namespace.json"), []byte(`{"namespace":"hidden"}`), 0o644)
	_ = os.WriteFile(filepath.Join(base, ".datastore.lock"), []byte("{}"), 0o644)
	_ = os.Symlink(filepath.Join(base, "infra"), filepath.Join(base, "linked"))

	ms, err := ListNamespaces(fsys, base)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range ms {
		names = append(names, m.Namespace+"="+m.RepoID)
	}
	if got := strings.Join(names, ","); got != "a-team=repo-a-team,infra=repo-infra,zeta=repo-zeta" {
		t.Errorf("ListNamespaces = %s", got)
	}
	if ms[1].RegisteredAt != "2026-08-01T12:00:00.000Z" || ms[1].Path != filepath.Join(base, "infra", ".namespace.json") {
		t.Errorf("manifest = %+v", ms[1])
	}

	m, ok, err := ReadManifest(fsys, base, "nope")
	if ok || err != nil {
		t.Errorf("missing manifest: %+v %v %v", m, ok, err)
	}

	// One corrupt manifest fails the listing, naming the file.
	bad := filepath.Join(base, "broken", ".namespace.json")
	_ = os.MkdirAll(filepath.Dir(bad), 0o755)
	_ = os.WriteFile(bad, []byte(`{"namespace": "bro`), 0o644)
	_, err = ListNamespaces(fsys, base)
	if !errors.Is(err, ErrManifest) || !strings.Contains(err.Error(), bad) {
		t.Errorf("corrupt manifest: %v", err)
	}
	_ = os.WriteFile(bad, nil, 0o644)
	if _, _, err := ReadManifest(fsys, base, "broken"); !errors.Is(err, ErrManifest) {
		t.Errorf("empty manifest: %v", err)
	}
}
