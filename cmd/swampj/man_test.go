package main

import (
	"bufio"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// manSections splits a man page into its .SH and .SS sections, by heading.
func manSections(t *testing.T, page string) (order []string, body map[string]string) {
	t.Helper()
	body = map[string]string{}
	cur := ""
	for _, line := range strings.Split(page, "\n") {
		if h, ok := strings.CutPrefix(line, ".SH "); ok {
			cur = strings.Trim(h, `"`)
		} else if h, ok := strings.CutPrefix(line, ".SS "); ok {
			cur = strings.ReplaceAll(strings.Trim(h, `"`), `\-`, "-")
		} else {
			body[cur] += line + "\n"
			continue
		}
		if _, dup := body[cur]; dup {
			t.Errorf("man page: section %q twice", cur)
		}
		order = append(order, cur)
		body[cur] = ""
	}
	return order, body
}

// TestManCoversEveryCommand: `swampj man` has a section for every visible
// command of the tree, by its full path and in --help's order, holding its
// usage, its arguments and every one of its flags, and the global options
// hold every global flag; hidden commands have none.
func TestManCoversEveryCommand(t *testing.T) {
	r := mustOK(t, swampj(t, newRepo(t), "man"), "man")
	order, body := manSections(t, r.stdout)
	if !strings.HasPrefix(r.stdout, ".TH swampj 1 ") {
		t.Errorf("man page does not start with .TH swampj 1: %.40q", r.stdout)
	}
	for _, s := range []string{"NAME", "SYNOPSIS", "GLOBAL OPTIONS", "COMMANDS"} {
		if _, ok := body[s]; !ok {
			t.Errorf("man page has no %s section (sections: %q)", s, order)
		}
	}
	hasFlag := func(section, text string, f cli.Flag) {
		for _, n := range f.Names() {
			dash := `\-`
			if len(n) > 1 {
				dash = `\-\-`
			}
			if !strings.Contains(text, `\fB`+dash+roffEscape(n)+`\fR`) {
				t.Errorf("man page: %s does not list the flag %s", section, n)
			}
		}
	}
	app := newApp(nil, nil, nil)
	app.Setup()
	for _, f := range app.VisibleFlags() {
		hasFlag("GLOBAL OPTIONS", body["GLOBAL OPTIONS"], f)
	}
	var want []string
	var walk func(parent string, cmds []*cli.Command)
	walk = func(parent string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Name == "help" && c.HasName("h") {
				continue // urfave's, added to commands it has run in this process
			}
			path := parent + " " + c.Name
			text, ok := body[path]
			if c.Hidden {
				if ok {
					t.Errorf("man page has a section for the hidden command %q", path)
				}
				continue
			}
			want = append(want, path)
			if !ok {
				t.Errorf("man page has no section for %q", path)
				continue
			}
			if !strings.Contains(text, roffLine(c.Usage)) {
				t.Errorf("man page: %q lacks its usage %q", path, c.Usage)
			}
			if c.ArgsUsage != "" && !strings.Contains(text, roffEscape(c.ArgsUsage)) {
				t.Errorf("man page: %q lacks its arguments %q", path, c.ArgsUsage)
			}
			if ex := examples[strings.TrimPrefix(path, "swampj ")]; len(ex) > 0 && !strings.Contains(text, roffEscape(ex[0])) {
				t.Errorf("man page: %q lacks its example %q", path, ex[0])
			}
			for _, f := range c.VisibleFlags() {
				if f != cli.HelpFlag {
					hasFlag(path, text, f)
				}
			}
			walk(path, c.Subcommands)
		}
	}
	walk("swampj", app.Commands)
	var got []string
	for _, s := range order {
		if strings.HasPrefix(s, "swampj ") {
			got = append(got, s)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("man page's command sections:\n%s\nwant (the tree, in --help's order):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(want) < 20 {
		t.Fatalf("only %d commands in the tree", len(want))
	}
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.ContainsFunc(line, func(r rune) bool { return r > 0x7e }) {
			t.Errorf("man page line is not ASCII (groff's input encoding may not be UTF-8): %q", line)
		}
	}
	if groff, err := exec.LookPath("groff"); err == nil {
		cmd := exec.Command(groff, "-man", "-ww", "-z")
		cmd.Stdin = strings.NewReader(r.stdout)
		if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("groff -man -ww: %v\n%s", err, out)
		}
	}
}

// TestManSameWithoutDocsTag: a plain `go build` (no buildTags, as `go run
// ./cmd/swampj` and `go install` build it) prints the very same man page,
// and only the production build leaves urfave/cli's Markdown renderer
// (go-md2man, blackfriday) out of the binary.
func TestManSameWithoutDocsTag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a second binary")
	}
	plain := filepath.Join(t.TempDir(), "swampj-plain")
	if out, err := exec.Command("go", "build", "-o", plain, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build without tags: %v\n%s", err, out)
	}
	dir := newRepo(t)
	want := mustOK(t, swampj(t, dir, "man"), "man").stdout
	cmd := exec.Command(plain, "man")
	cmd.Dir = dir
	got := mustOK(t, runResult(t, cmd), "man (plain build)").stdout
	if got != want {
		t.Errorf("the plain build's man page differs from the production build's:\n%s\n---\n%s", got, want)
	}
	modules := func(bin string) string {
		out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
		if err != nil {
			t.Fatalf("go version -m %s: %v\n%s", bin, err, out)
		}
		return string(out)
	}
	for _, m := range []string{"github.com/russross/blackfriday", "github.com/cpuguy83/go-md2man"} {
		if strings.Contains(modules(binary), m) {
			t.Errorf("the production build (tags %s) links %s", buildTags, m)
		}
		if !strings.Contains(modules(plain), m) {
			t.Errorf("the plain build does not link %s: this test no longer tells the builds apart", m)
		}
	}
}

// TestNothingHeavyAtInit: `swampj --version` runs no package init that
// does real work. Every swampj package's init allocates at most 4 KiB
// (a package-level regexp.MustCompile of `{1,128}` took 100 KiB and
// 0.55 ms; they are sync.OnceValue now) and main's, the command tree, at
// most 32 KiB; urfave/cli's Markdown renderer is not initialised at all.
// Allocation counts are deterministic, unlike init times.
func TestNothingHeavyAtInit(t *testing.T) {
	cmd := exec.Command(binary, "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	r := runResult(t, cmd)
	if r.code != 0 {
		t.Fatalf("--version: %+v", r)
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(r.stderr))
	for sc.Scan() {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[0] != "init" {
			continue
		}
		n++
		pkg := f[1]
		bytes, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("inittrace line %q: %v", sc.Text(), err)
		}
		limit := -1
		switch {
		case pkg == "main":
			limit = 32 << 10
		case strings.HasPrefix(pkg, "github.com/swampj/swampj"):
			limit = 4 << 10
		case strings.Contains(pkg, "blackfriday") || strings.Contains(pkg, "md2man"):
			t.Errorf("%s is initialised at start-up: %s", pkg, sc.Text())
		}
		if limit >= 0 && bytes > limit {
			t.Errorf("%s's init allocates %d bytes (limit %d): make its package-level work lazy (%s)", pkg, bytes, limit, sc.Text())
		}
	}
	if n < 20 {
		t.Fatalf("only %d init lines in GODEBUG=inittrace=1's output:\n%s", n, r.stderr)
	}
}

// TestProductionBuildIsStatic: the production build (buildTags: netgo)
// is a static executable. A dynamically linked one loads libc through
// ld.so and starts its threads through cgo, about 1 ms of every start-up
// on this machine kind.
func TestProductionBuildIsStatic(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ELF executables only")
	}
	f, err := elf.Open(binary)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the production build (tags %s) has an ELF interpreter: it is dynamically linked", buildTags)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the production build (tags %s) needs shared libraries %q", buildTags, libs)
	}
}
