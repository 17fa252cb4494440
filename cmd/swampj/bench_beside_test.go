package main

// BenchmarkBesideSwamp puts swampj beside the real swamp ($SWAMP_BIN) on the
// same repos: the same jobs, whole processes, on fresh copies
// of one generated repo (cmd/mkswamp synthetic, 3 versions per item), the
// median of a few runs. It is slow (swamp takes seconds per job); without
// SWAMP_BIN it is skipped with a notice.
//
//	SWAMP_BIN=/opt/realswamp/bin/swamp go test ./cmd/swampj -run '^$' -bench BesideSwamp -benchtime 1x
//
// SWAMPJ_BESIDE_ITEMS (comma-separated, default 3000,20000) sets the repo
// sizes in items, SWAMPJ_BESIDE_RUNS (default 3) the runs per size.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// besideJob is one job both tools do; the command lines are run in the
// copy's directory, prepare (untimed) right before the timed one.
type besideJob struct {
	name                  string
	swamp, swampj         []string
	prepSwamp, prepSwampj []string
	removeCatalog         bool   // start from no catalog at all
	want                  string // stdout of both must contain this
}

// besideJobs are run in this order on one copy per tool and run: the
// read-only jobs first, then the catalog built from empty, then the
// migration (of the data and of the catalog just built).
func besideJobs(model, item string) []besideJob {
	return []besideJob{
		{name: "doctor", swamp: []string{"doctor", "datastores"}, swampj: []string{"doctor"}},
		{name: "data-get", swamp: []string{"data", "get", model, item}, swampj: []string{"data", "get", model, item}, want: `"item":`},
		// swamp builds its catalog on first use: `data query` backfills
		// it from the tree before it answers.
		{name: "catalog", swamp: []string{"data", "query", "true", "--limit", "1", "--json"}, swampj: []string{"catalog", "rebuild", "-y"}, removeCatalog: true},
		{name: "migrate", swamp: []string{"datastore", "namespace", "migrate", "--confirm"}, swampj: []string{"datastore", "namespace", "migrate", "--confirm"},
			prepSwamp: []string{"datastore", "namespace", "set", "ns1"}, prepSwampj: []string{"datastore", "namespace", "set", "ns1"}},
	}
}

func besideSizes(b *testing.B) []int {
	s := os.Getenv("SWAMPJ_BESIDE_ITEMS")
	if s == "" {
		return []int{3000, 20000}
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("SWAMPJ_BESIDE_ITEMS=%q", s)
		}
		out = append(out, n)
	}
	return out
}

func BenchmarkBesideSwamp(b *testing.B) {
	swampBin := os.Getenv("SWAMP_BIN")
	if swampBin == "" {
		b.Skip("beside-swamp benchmark skipped: SWAMP_BIN is not set (the real swamp: SWAMP_BIN=/opt/realswamp/bin/swamp)")
	}
	runs := 3
	if n, err := strconv.Atoi(os.Getenv("SWAMPJ_BESIDE_RUNS")); err == nil && n > 0 {
		runs = n
	}
	mkswamp := filepath.Join(b.TempDir(), "mkswamp")
	if out, err := exec.Command("go", "build", "-o", mkswamp, "../mkswamp").CombinedOutput(); err != nil {
		b.Fatalf("building mkswamp: %v %s", err, out)
	}
	for _, items := range besideSizes(b) {
		b.Run(fmt.Sprintf("items=%d", items), func(b *testing.B) { benchBesideSwamp(b, swampBin, mkswamp, items, runs) })
	}
}

func benchBesideSwamp(b *testing.B, swampBin, mkswamp string, items, runs int) {
	b.StopTimer()
	tmp := b.TempDir()
	base := filepath.Join(tmp, "base")
	if out, err := exec.Command(mkswamp, "synthetic", base, "--items", strconv.Itoa(items), "--versions", "3").CombinedOutput(); err != nil {
		b.Fatalf("mkswamp: %v %s", err, out)
	}
	model, item := besideDefineModel(b, base)
	jobs := besideJobs(model, item)
	before := besideManifest(b, base)
	tools := []struct {
		name, bin string
		env       []string
	}{
		{"swamp", swampBin, []string{"NO_COLOR=1", "SWAMP_NO_TELEMETRY=1"}},
		{"swampj", binary, nil},
	}
	times := map[string][]float64{} // job + "-" + tool -> ms per run
	run := func(tool int, dir string, args []string) (time.Duration, string) {
		t := tools[tool]
		if t.name == "swamp" {
			args = append(args, "--no-telemetry")
		}
		cmd := exec.Command(t.bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), t.env...)
		start := time.Now()
		out, err := cmd.Output()
		d := time.Since(start)
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			b.Fatalf("%s %s: %v\n%s%s", t.name, strings.Join(args, " "), err, tail(string(out), 1500), tail(stderr, 1500))
		}
		return d, string(out)
	}
	for i := 0; i < b.N; i++ {
		for k := range runs {
			dirs := []string{filepath.Join(tmp, fmt.Sprintf("swamp-%d", k)), filepath.Join(tmp, fmt.Sprintf("swampj-%d", k))}
			for _, d := range dirs {
				besideCopy(b, base, d)
			}
			syscall.Sync() // the copies' writeback does not land in a timed job
			// Alternate which tool goes first, so what one leaves behind
			// (writeback, a warm cache) falls on both alike.
			order := []int{0, 1}
			if k%2 == 1 {
				order = []int{1, 0}
			}
			for _, job := range jobs {
				for _, t := range order {
					dir := dirs[t]
					if job.removeCatalog {
						for _, suf := range []string{"", "-wal", "-shm"} {
							if err := os.Remove(filepath.Join(dir, ".swamp", "data", "_catalog.db"+suf)); err != nil && !os.IsNotExist(err) {
								b.Fatal(err)
							}
						}
					}
					prep := job.prepSwamp
					if t == 1 {
						prep = job.prepSwampj
					}
					if prep != nil {
						run(t, dir, prep)
					}
					args := job.swamp
					if t == 1 {
						args = job.swampj
					}
					b.StartTimer()
					d, out := run(t, dir, cloneArgs(args))
					b.StopTimer()
					if job.want != "" && !strings.Contains(out, job.want) {
						b.Fatalf("%s %s: output lacks %q:\n%s", tools[t].name, strings.Join(args, " "), job.want, tail(out, 1500))
					}
					key := job.name + "-" + tools[t].name
					times[key] = append(times[key], float64(d.Microseconds())/1000)
				}
			}
			for t, d := range dirs {
				if _, err := os.Stat(filepath.Join(d, ".swamp", "ns1", "data")); err != nil {
					b.Fatalf("%s: no migrated data after the migration: %v", tools[t].name, err)
				}
				if err := os.RemoveAll(d); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	if after := besideManifest(b, base); after != before {
		b.Fatalf("the base repo changed under the copies (a file written in place through a hard link): the figures are void")
	}
	b.ReportMetric(float64(runs), "runs")
	b.ReportMetric(float64(items), "items")
	b.ReportMetric(float64(3*items), "versions")
	for _, job := range jobs {
		s, j := medianOf(times[job.name+"-swamp"]), medianOf(times[job.name+"-swampj"])
		b.ReportMetric(s, job.name+"-swamp-ms")
		b.ReportMetric(j, job.name+"-swampj-ms")
		b.ReportMetric(j/s, job.name+"-swampj/swamp")
	}
}

// cloneArgs copies args so a tool's appended flags never alias the job's.
func cloneArgs(args []string) []string { return append([]string(nil), args...) }

var modelNameRE = regexp.MustCompile(`(?m)^\s+modelName: (\S+)$`)

// besideDefineModel picks the first item of a command/shell model in the
// generated repo and writes that model's definition
// (models/command/shell/NAME.yaml, as `swamp model create` writes it), so
// both tools resolve `data get NAME ITEM` as a user would type it. It
// returns the model's name and the item's.
func besideDefineModel(b *testing.B, dir string) (string, string) {
	b.Helper()
	shell := filepath.Join(dir, ".swamp", "data", "command", "shell")
	models, err := os.ReadDir(shell)
	if err != nil || len(models) == 0 {
		b.Fatalf("no command/shell model in the generated repo (models get random types: try more items): %v", err)
	}
	id := models[0].Name()
	its, err := os.ReadDir(filepath.Join(shell, id))
	if err != nil || len(its) == 0 {
		b.Fatalf("no item of model %s: %v", id, err)
	}
	item := its[0].Name()
	md, err := os.ReadFile(filepath.Join(shell, id, item, "1", "metadata.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	m := modelNameRE.FindSubmatch(md)
	if m == nil {
		b.Fatalf("no modelName tag in %s/%s's metadata:\n%s", id, item, md)
	}
	name := string(m[1])
	def := fmt.Sprintf("type: command/shell\ntypeVersion: 2026.02.09.1\nid: %s\nname: %s\nversion: 1\ntags: {}\nglobalArguments: {}\nmethods: {}\n", id, name)
	if err := os.MkdirAll(filepath.Join(dir, "models", "command", "shell"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "models", "command", "shell", name+".yaml"), []byte(def), 0o644); err != nil {
		b.Fatal(err)
	}
	return name, item
}

// besideCopy makes a fresh copy of base at dst: the data tree hard-linked
// (cp -al: copying 3 files per version of 20,000 items would take longer
// than the jobs), every file a job may rewrite in place a real copy — the
// repo's configuration, the model definitions and the catalog. Neither
// tool writes a data file in place (swamp replaces latest by rename, and
// a migration renames directories); besideManifest checks it.
func besideCopy(b *testing.B, base, dst string) {
	b.Helper()
	if out, err := exec.Command("cp", "-al", base, dst).CombinedOutput(); err != nil {
		b.Fatalf("copying the repo: %v %s", err, out)
	}
	own := []string{".swamp.yaml", filepath.Join(".swamp", "data", "_catalog.db")}
	defs, _ := filepath.Glob(filepath.Join(dst, "models", "*", "*", "*.yaml"))
	for _, d := range defs {
		rel, _ := filepath.Rel(dst, d)
		own = append(own, rel)
	}
	for _, rel := range own {
		p := filepath.Join(dst, rel)
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.Remove(p); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// besideManifest is a digest of every file of dir's tree by path, size and
// modification time: a write through a hard link changes it.
func besideManifest(b *testing.B, dir string) string {
	b.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
