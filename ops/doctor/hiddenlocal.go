package doctor

// Always-local directories hidden in a namespace (swamp-format
// §13.9). swamp 06b6147's own `datastore namespace
// migrate` moves {base}/secrets, bundles, vault-bundles, driver-bundles
// and report-bundles into {base}/{ns}/, yet swamp reads all five only from
// {repo}/.swamp/: afterwards its vault finds no secret ("Secret 'k1' not
// found in local vault 'v1'", 0 keys) and the bundles there are never read
// again. Newer swamp's design keeps them local, as swampj's migrate does.
//
// The doctor names each such directory and what swamp cannot see because
// of it (CodeHiddenLocalDir). A confirmed repair brings it back in the
// data intent, merged entry by entry (repo.HiddenLocalDir.Return): each
// file {home} lacks is renamed there (never replacing), each file {home}
// holds with the same bytes goes to quarantine, and the emptied
// directories are removed, deepest first; every step is journaled and
// undone by recovery like any other. A directory with a real conflict (the
// same path with other bytes, or another kind, on both sides) is not
// touched: the finding lists every such path and a person decides. No
// swamp lock covers these directories (swamp's vault takes none), so the
// unit has no lock path.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/swampj/swampj/ops/repo"
)

// CodeHiddenLocalDir: an always-local directory (secrets, bundles, …) that
// swamp's own migrate carried into a namespace, where swamp never reads it.
const CodeHiddenLocalDir Code = "local_dir_hidden"

// checkHiddenLocal is the survey phase of this check.
func (s *survey) checkHiddenLocal(ctx context.Context) error {
	dirs, err := repo.HiddenLocalDirs(s.fsys, s.r)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.warnings = append(s.warnings, "always-local directories in namespaces not all checked: "+err.Error())
	}
	for _, h := range dirs {
		if len(h.Files) == 0 && len(h.Dirs) <= 1 {
			continue // an empty directory hides nothing
		}
		f := Finding{Code: CodeHiddenLocalDir, Path: h.Path,
			Message: fmt.Sprintf("%s is swamp's always-local %s directory, carried into namespace %s by swamp's own migrate; swamp reads it only at %s, so %s",
				h.Path, h.Subdir, h.Namespace, h.Home, hiddenWhat(h))}
		u := &unit{}
		if len(h.Conflicts) > 0 {
			u.blocked = "conflicting files"
			f.Fix = fmt.Sprintf("none automatic: %d path(s) exist at both %s and %s with different content (%s); decide which to keep for each, "+
				"move the other aside, then run the repair again", len(h.Conflicts), h.Path, h.Home, strings.Join(h.Conflicts, ", "))
			u.add(f, false)
			s.units = append(s.units, u)
			continue
		}
		moves, rmdirs := h.Return(filepath.Join(s.qstamp, "local"))
		for _, m := range moves {
			u.moves = append(u.moves, Move{From: m.From, To: m.To})
		}
		u.rmdirs = rmdirs
		f.Fix = fmt.Sprintf("move its %d file(s) back to %s, merged entry by entry (files %s already holds with the same bytes go to %s/local), "+
			"then remove the emptied directories; nothing is replaced or deleted", len(h.Files), h.Home, h.Home, s.qstamp)
		u.add(f, true)
		s.units = append(s.units, u)
	}
	return nil
}

// hiddenWhat says what swamp cannot see because of h.
func hiddenWhat(h repo.HiddenLocalDir) string {
	if h.Subdir == "secrets" {
		if len(h.Vaults) == 0 {
			return fmt.Sprintf("its vaults cannot see the %d file(s) there", len(h.Files))
		}
		keys := 0
		for _, f := range h.Files {
			if strings.HasSuffix(f, ".enc") {
				keys++
			}
		}
		return fmt.Sprintf("the local vault(s) %s cannot find their %d secret(s) (swamp vault read-secret says the secret is not found)",
			strings.Join(h.Vaults, ", "), keys)
	}
	return fmt.Sprintf("swamp never reads the %d bundle file(s) there (it rebuilds what it can from source; a bundle without source is lost to it)", len(h.Files))
}
