package main

// The hostile-repo suite: where the trust boundary of a repo lies. swampj
// often runs as root (systemd, a start-up hook) on repos other people can
// write into, so a repo's contents are untrusted input. Through the real
// binary, every case plants one hostile thing in a fresh repo (symlinks
// out of the repo, FIFOs, huge sparse files, /dev/zero, a journal copied
// from another repo, a poisoned change log, a repo owned by another user)
// and runs the ordinary commands on it. After each command:
//
//  1. nothing outside the repo is touched: a canary tree beside the repo
//     (unparseable records, lock-named files, an item-shaped tree with a
//     zero-byte version, all an hour old) is byte for byte as it was, no
//     entry appeared beside it, and no path a planted link names exists;
//  2. the command ends within 30 s (then SIGTERM, 5 s, SIGKILL: "hung");
//  3. it runs under a 4 GiB address-space cap and peaks under 512 MiB RSS;
//  4. the Go runtime did not crash (no panic, no fatal error).
//
// Exit codes are free (refusing is fine) unless a case says otherwise.
// With SWAMP_BIN set each case runs again on a repo made by the real swamp.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

type hostileCase struct {
	name  string
	plant func(t *testing.T, h *hostileEnv, base *swampBase)
}

func TestHostileRepo(t *testing.T) {
	var base *swampBase
	if os.Getenv("SWAMP_BIN") != "" {
		needSwamp(t)
		b := buildSwampBase(t)
		base = &b
	}
	// At most two cases at once: a hung command costs wall time, not CPU,
	// and the machine has two cores.
	sem := make(chan struct{}, 2)
	for _, c := range hostileCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sem <- struct{}{}
			defer func() { <-sem }()
			for _, kind := range []string{"example", "realswamp"} {
				t.Run(kind, func(t *testing.T) {
					if kind == "realswamp" && base == nil {
						t.Skip("SWAMP_BIN is not set: the case on a repo made by the real swamp is skipped")
					}
					h := newHostileEnv(t, kind, base)
					c.plant(t, h, base)
					runHostile(t, h)
				})
			}
		})
	}
}

func hostileCases() []hostileCase {
	var cases []hostileCase

	// The run-record trees swamp reads back and the doctor walks and
	// repairs: led out of the repo, they must not be walked into.
	for _, sub := range []string{"audit", "outputs", "workflow-runs"} {
		for _, rel := range []bool{false, true} {
			name := strings.ReplaceAll(sub, "-", "_") + "_symlink_to_outside"
			if rel {
				name = strings.ReplaceAll(sub, "-", "_") + "_relative_symlink_to_outside"
			}
			cases = append(cases, hostileCase{name, func(t *testing.T, h *hostileEnv, _ *swampBase) {
				link, text := h.swampDir(sub), h.canary
				if rel {
					text = "../../../canary" // from .swamp: repo, r, then the directory holding the canary
				}
				hostileSymlink(t, text, link)
				h.outsideLinks = append(h.outsideLinks, hostileLink{path: link, target: h.canary, text: text})
			}})
		}
	}

	cases = append(cases,
		hostileCase{"data_symlink_to_outside_copy", func(t *testing.T, h *hostileEnv, _ *swampBase) {
			// A real data tree, catalog included, that lives elsewhere:
			// repair, rebuild and migration have no business in it.
			elsewhere := t.TempDir()
			outData := filepath.Join(elsewhere, "data")
			hostileCopyTree(t, h.swampDir("data"), outData)
			hostileAge(t, elsewhere)
			hostileSymlink(t, outData, h.swampDir("data"))
			h.extraCanaries = append(h.extraCanaries, elsewhere)
			h.outsideLinks = append(h.outsideLinks, hostileLink{path: h.swampDir("data"), target: outData, text: outData})
		}},
		hostileCase{"item_dir_symlink_to_outside", func(t *testing.T, h *hostileEnv, _ *swampBase) {
			before, err := hostileCatalogRows(t, h.repo, h.modelID, h.dataName)
			if err != nil {
				t.Fatalf("reading the catalog: %v", err)
			}
			hostileSymlink(t, h.canary, h.item)
			h.outsideLinks = append(h.outsideLinks, hostileLink{path: h.item, target: h.canary, text: h.canary})
			h.afterCmd = func(t *testing.T, args []string, r hostileRun) {
				if r.name() == "doctor --json" {
					for _, f := range hostileMustFindings(t, r) {
						if f.Path == h.item && strings.Contains(f.Message, "has no directory on disk") {
							t.Errorf("doctor --json: the item led outside the repo is reported as missing (%s: %s), not as a path outside the repo", f.Code, f.Message)
						}
					}
				}
				if r.name() != "doctor --repair --confirm" {
					return
				}
				if before == 0 {
					t.Logf("the catalog has no rows of %s: nothing to check after the repair", h.itemAddr)
					return
				}
				after, err := hostileCatalogRows(t, h.repo, h.modelID, h.dataName)
				if err != nil {
					t.Errorf("doctor --repair --confirm: reading the catalog afterwards: %v", err)
				} else if after != before {
					t.Errorf("doctor --repair --confirm: the catalog rows of %s (its directory a link outside the repo) went from %d to %d", h.itemAddr, before, after)
				}
			}
		}},
	)

	// latest is read by nearly every command: whatever it is, reading it
	// must be bounded, and what lies outside must never be printed.
	withGet := func(h *hostileEnv) { h.insertAfterDoctorJSON([]string{"data", "get", h.itemAddr}) }
	cases = append(cases,
		hostileCase{"latest_symlink_to_outside_file", func(t *testing.T, h *hostileEnv, _ *swampBase) {
			h.secret = hostileSecret(t)
			secretFile := filepath.Join(h.canary, "secret.txt")
			hostileWriteFiles(t, h.canary, map[string]string{"secret.txt": h.secret})
			hostileSymlink(t, secretFile, filepath.Join(h.item, "latest"))
			withGet(h)
		}},
		hostileCase{"latest_symlink_to_dev_zero", func(t *testing.T, h *hostileEnv, _ *swampBase) {
			hostileSymlink(t, "/dev/zero", filepath.Join(h.item, "latest"))
			withGet(h)
		}},
		hostileCase{"latest_fifo", func(t *testing.T, h *hostileEnv, _ *swampBase) {
			hostileFifo(t, filepath.Join(h.item, "latest"))
			withGet(h)
		}},
		hostileCase{"latest_sparse_3GB", func(t *testing.T, h *hostileEnv, _ *swampBase) {
			hostileSparse(t, filepath.Join(h.item, "latest"))
			withGet(h)
		}},
	)

	// swamp's lock files are JSON swampj reads to judge a holder. None of
	// the standard commands reads the solo global lock or an idle model's
	// lock, so a write of the item (which takes its model's lock and checks
	// the global one) runs too.
	withWrite := func(t *testing.T, h *hostileEnv) {
		payload := filepath.Join(t.TempDir(), "payload.json")
		if err := os.WriteFile(payload, []byte(`{"hostile":"payload"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		h.insertAfterDoctorJSON([]string{"data", "write", h.itemAddr, "--file", payload})
	}
	for _, lk := range []struct{ name, path string }{
		{"model_lock", ""}, // {base}/data/{type}/{modelId}/.lock
		{"global_lock", ".datastore.lock"},
	} {
		where := func(h *hostileEnv) string {
			if lk.path == "" {
				return filepath.Join(filepath.Dir(h.item), ".lock")
			}
			return h.swampDir(lk.path)
		}
		cases = append(cases,
			hostileCase{lk.name + "_fifo", func(t *testing.T, h *hostileEnv, _ *swampBase) {
				hostileFifo(t, where(h))
				withWrite(t, h)
			}},
			hostileCase{lk.name + "_sparse_3GB", func(t *testing.T, h *hostileEnv, _ *swampBase) {
				hostileSparse(t, where(h))
				withWrite(t, h)
			}},
			hostileCase{lk.name + "_symlink_to_dev_zero", func(t *testing.T, h *hostileEnv, _ *swampBase) {
				hostileSymlink(t, "/dev/zero", where(h))
				withWrite(t, h)
			}},
		)
	}

	// The journal and its lock files are opened with O_CREATE, and open
	// follows links: a planted link would have root create a file anywhere.
	for _, j := range []struct{ name, file string }{
		{"journal_gate_symlink_to_missing_outside", "_journal.db.gate"},
		{"journal_lock_symlink_to_missing_outside", "_journal.db.lock"},
		{"journal_symlink_to_missing_outside", "_journal.db"},
	} {
		cases = append(cases, hostileCase{j.name, func(t *testing.T, h *hostileEnv, _ *swampBase) {
			missing := filepath.Join(h.canary, "new-file")
			hostileSymlink(t, missing, h.swampDir(j.file))
			h.mustNotExist = append(h.mustNotExist, missing)
		}})
	}

	// Files beside the journal that swampj opens to read: a FIFO nobody
	// writes must not stop recover, doctor or run.
	cases = append(cases,
		hostileCase{"run_log_fifo", func(t *testing.T, h *hostileEnv, _ *swampBase) {
			hostileFifo(t, h.swampDir("_journal.db.run-1-1"))
		}},
		hostileCase{"journal_holder_fifo", func(t *testing.T, h *hostileEnv, _ *swampBase) {
			hostileFifo(t, h.swampDir("_journal.db.holder"))
		}},
		hostileCase{"foreign_journal", hostilePlantForeignJournal},
		hostileCase{"changelog_line_over_1MiB", func(t *testing.T, h *hostileEnv, _ *swampBase) {
			log := hostileDeadRun(t, h.repo)
			toCanary, _ := filepath.Rel(h.swampDir("outputs"), h.canary)
			// A path under the repo's outputs that, cleaned, is a canary
			// record, padded past 1 MiB with "/." components.
			long := h.swampDir("outputs") + strings.Repeat("/.", 600_000) + "/" + toCanary + "/state.json\n"
			hostileAppend(t, log, []byte(long+filepath.Join(h.item, "latest")+"\n"))
		}},
		hostileCase{"changelog_names_outside_paths", func(t *testing.T, h *hostileEnv, _ *swampBase) {
			log := hostileDeadRun(t, h.repo)
			var lines []string
			// Absolute paths outside the repo, as /etc/... would be.
			for _, f := range []string{"state.json", "config.yaml", "events.jsonl", "latest", "1/raw", "1/metadata.yaml", "sub/run.yaml", "sub/inner.json"} {
				lines = append(lines, filepath.Join(h.canary, f))
			}
			// Paths that start under the repo's record and data trees
			// and climb out with "..".
			for _, from := range []string{h.swampDir("outputs"), h.swampDir("audit"), h.swampDir("data"), h.item, filepath.Join(h.item, "1")} {
				up, _ := filepath.Rel(from, h.canary)
				lines = append(lines, from+"/"+up+"/sub/run.yaml", from+"/"+up+"/1/raw", from+"/"+up+"/1")
			}
			hostileAppend(t, log, []byte(strings.Join(lines, "\n")+"\n"))
		}},
		hostileCase{"version_dir_beyond_int64", func(t *testing.T, h *hostileEnv, _ *swampBase) {
			const name = "99999999999999999999999"
			if err := os.Mkdir(filepath.Join(h.item, name), 0o755); err != nil {
				t.Fatal(err)
			}
			h.afterCmd = func(t *testing.T, args []string, r hostileRun) {
				if r.name() == "doctor --json" && !strings.Contains(r.stdout, name) {
					t.Errorf("doctor --json: the version directory %s (beyond int64) is not reported:\n%s", filepath.Join(h.item, name), tail(r.stdout, 1500))
				}
			}
		}},
		hostileCase{"repo_owned_by_other_uid", hostilePlantOtherOwner},
	)
	return cases
}

// hostilePlantForeignJournal: repo A is left with an open migration intent
// (the process killed right after the intent's commit); A's journal is
// copied into this repo (B). The journal records absolute paths, so
// recovering B must refuse a journal that is not its own, and leave A byte
// for byte as it was.
func hostilePlantForeignJournal(t *testing.T, h *hostileEnv, base *swampBase) {
	aParent := t.TempDir()
	a := filepath.Join(aParent, "a")
	hostileCopyRepo(t, h.kind, base, a)
	if r, _ := hostileSetup(t, a, nil, "datastore", "namespace", "set", "x"); r.code != 0 {
		t.Fatalf("namespace set in repo A: %s", r)
	}
	r, ps := hostileSetup(t, a, []string{"SWAMPJ_FAILPOINT=failpoint:journal.begin"}, "datastore", "namespace", "migrate", "--confirm")
	if ws, ok := ps.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the migration in repo A was not killed at its intent commit: %s", r)
	}
	b, err := os.ReadFile(filepath.Join(a, ".swamp", "_journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.swampDir("_journal.db"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	h.extraCanaries = append(h.extraCanaries, aParent)
	h.cmds = append([][]string{{"recover"}}, h.cmds...)
	h.firstCmdMustRefuse = func(t *testing.T, r hostileRun) {
		// Handled as a damaged journal is: set aside (nothing deleted),
		// never acted on, and recover goes on with a fresh one (exit 0).
		// What it must say is whose journal it was; the canaries say A
		// was not touched.
		out := strings.ToLower(r.stdout + r.stderr)
		if !strings.Contains(out, "another repo") || !strings.Contains(out, "made for the repo at "+strings.ToLower(a)) {
			t.Errorf("recover with another repo's journal: want it set aside, naming the repo it came from, got %s", r)
		}
	}
}

// hostilePlantOtherOwner: a repo owned by someone else, worked on as root,
// must not gain files root owns (its owner could no longer change them).
func hostilePlantOtherOwner(t *testing.T, h *hostileEnv, _ *swampBase) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the case runs swampj as root on a repo owned by uid 4242")
	}
	const owner = 4242
	err := filepath.WalkDir(h.repo, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, owner, owner)
	})
	if err != nil {
		t.Fatal(err)
	}
	h.cmds = [][]string{
		{"doctor", "--repair", "--confirm"},
		{"recover"},
		{"run", "--", "true"},
		{"catalog", "rebuild", "--confirm"},
	}
	h.afterAll = func(t *testing.T) {
		var wrong []string
		_ = filepath.WalkDir(h.repo, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return nil
			}
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != owner {
				rel, _ := filepath.Rel(h.repo, p)
				wrong = append(wrong, rel+" (uid "+itoa(int(st.Uid))+")")
			}
			return nil
		})
		if len(wrong) > 0 {
			t.Errorf("after the commands run as root, %d path(s) under the repo owned by uid %d are no longer owned by it: %s", len(wrong), owner, strings.Join(wrong, ", "))
		}
	}
}

// insertAfterDoctorJSON adds a command right after `doctor --json`, so it
// meets the planted thing before any repair has moved it.
func (h *hostileEnv) insertAfterDoctorJSON(args []string) {
	i := slices.IndexFunc(h.cmds, func(a []string) bool { return strings.Join(a, " ") == "doctor --json" })
	h.cmds = slices.Insert(h.cmds, i+1, args)
}

func hostileMustFindings(t *testing.T, r hostileRun) []hostileFinding {
	t.Helper()
	fs, err := hostileFindings(r.stdout)
	if err != nil {
		t.Errorf("%s: stdout is not doctor's JSON document (%v): %s", r.name(), err, r)
	}
	return fs
}

// hostileCheckOutside: each planted link out of the repo is reported as
// path_outside_repo, naming the link and where it leads.
func hostileCheckOutside(t *testing.T, h *hostileEnv, r hostileRun) {
	t.Helper()
	fs := hostileMustFindings(t, r)
	var codes []string
	for _, f := range fs {
		codes = append(codes, f.Code)
	}
	for _, l := range h.outsideLinks {
		rel, _ := filepath.Rel(h.repo, l.path)
		found := false
		for _, f := range fs {
			text := f.Path + "\n" + f.Item + "\n" + f.Message + "\n" + f.Fix
			if f.Code == "path_outside_repo" &&
				(strings.Contains(text, l.path) || strings.Contains(text, rel)) &&
				(strings.Contains(text, l.target) || strings.Contains(text, l.text)) {
				found = true
			}
		}
		if !found {
			t.Errorf("doctor --json: no path_outside_repo finding naming the link %s and its target %s (finding codes: %v)", l.path, l.target, codes)
		}
	}
}

// runHostile runs the case's commands in order, checking the contract after
// each. A hung command ends the case: the rest are named, not run.
func runHostile(t *testing.T, h *hostileEnv) {
	roots := append([]string{h.canary}, h.extraCanaries...)
	snaps := map[string]map[string]hostileEntry{}
	for _, root := range roots {
		snaps[root] = hostileSnapshot(t, root)
	}
	beside := hostileDirNames(t, h.outside)
	for i, args := range h.cmds {
		r := hostileExec(t, h.repo, h.secret, args...)
		name := r.name()
		t.Logf("%s: exit %d in %s, peak RSS %d KiB", name, r.code, r.elapsed.Round(time.Millisecond), r.maxRSSKiB)
		if testing.Verbose() {
			t.Logf("  stdout: %s\n  stderr: %s", hostileHead(r.stdout, 300), hostileHead(r.stderr, 300))
		}
		if r.hung {
			t.Errorf("%s: hung: still running after %s, killed", name, hostileCmdTimeout)
		}
		for _, m := range hostileCrashMarkers {
			if at := strings.Index(r.stderr, m); at >= 0 {
				t.Errorf("%s: crashed: %s", name, hostileHead(r.stderr[at:], 160))
				break
			}
		}
		if r.maxRSSKiB >= hostileMaxRSSKiB {
			t.Errorf("%s: peak RSS %d MiB, over the %d MiB bound", name, r.maxRSSKiB>>10, hostileMaxRSSKiB>>10)
		}
		for _, root := range roots {
			now := hostileSnapshot(t, root)
			if d := hostileDiff(snaps[root], now, filepath.Dir(root)); len(d) > 0 {
				t.Errorf("%s: touched %d path(s) outside the repo (under %s): %s", name, len(d), filepath.Dir(root), strings.Join(hostileFirstN(d, 6), "; "))
				snaps[root] = now // later commands answer for their own changes only
			}
		}
		for n := range hostileDirNames(t, h.outside) {
			if !beside[n] {
				t.Errorf("%s: created %s beside the canary, outside the repo", name, filepath.Join(h.outside, n))
				beside[n] = true
			}
		}
		for _, p := range h.mustNotExist {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s: created %s, the missing target of a link in the repo", name, p)
			}
		}
		if r.secretSeen {
			t.Errorf("%s: printed the content of a file outside the repo (the secret %s…) that latest links to", name, h.secret[:8])
		}
		if i == 0 && h.firstCmdMustRefuse != nil {
			h.firstCmdMustRefuse(t, r)
		}
		if name == "doctor --json" && len(h.outsideLinks) > 0 {
			hostileCheckOutside(t, h, r)
		}
		if h.afterCmd != nil {
			h.afterCmd(t, args, r)
		}
		if r.hung {
			var rest []string
			for _, a := range h.cmds[i+1:] {
				rest = append(rest, strings.Join(a, " "))
			}
			if len(rest) > 0 {
				t.Errorf("not run after the hang: %s", strings.Join(rest, ", "))
			}
			return
		}
	}
	if h.afterAll != nil {
		h.afterAll(t)
	}
}

// hostileHead is the start of s on one line.
func hostileHead(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func hostileFirstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], "…")
	}
	return s
}
