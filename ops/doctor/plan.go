package doctor

// The repair plan: the quarantine directory, and one journal intent that moves every
// repairable unit's files there, rewrites `latest` and fixes the catalog rows.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/store"
)

// chooseQuarantine picks this run's quarantine directory. It is on the
// datastore base (the local tier when the data tree is local), so every
// rename stays on one file system, and the stamp is made unique.
func (s *survey) chooseQuarantine() error {
	base := s.r.Base
	if s.r.DataLocal {
		base = s.r.LocalDir
	}
	top := filepath.Join(base, store.QuarantineDirName)
	if s.o.quarantine != "" {
		s.qstamp = s.o.quarantine
		s.qroot = filepath.Join(s.qstamp, map[bool]string{true: soloSegment, false: s.r.Namespace}[s.r.Namespace == ""])
		return nil
	}
	stamp := s.o.Now().UTC().Format(stampLayout)
	name := stamp
	for i := 2; ; i++ {
		ok, err := fsx.Exists(s.fsys, filepath.Join(top, name))
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		name = fmt.Sprintf("%s-%d", stamp, i)
	}
	s.qstamp = filepath.Join(top, name)
	seg := s.r.Namespace
	if seg == "" {
		seg = soloSegment
	}
	s.qroot = filepath.Join(s.qstamp, seg)
	return nil
}

// qpath is where src (a path under the data root) goes in quarantine.
func (s *survey) qpath(src string) string {
	rel, err := filepath.Rel(s.r.DataRoot, src)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		rel = filepath.Base(src)
	}
	return filepath.Join(s.qroot, rel)
}

// anyRepair reports whether some unit has an automatic repair.
func (s *survey) anyRepair() bool {
	for _, u := range s.units {
		if u.hasRepair() {
			return true
		}
	}
	return false
}

// lockPaths lists the per-model locks of every unit with a repair, sorted.
func (s *survey) lockPaths() []string {
	seen := map[string]bool{}
	var out []string
	for _, u := range s.units {
		if u.hasDataRepair() && u.lockPath != "" && !seen[u.lockPath] {
			seen[u.lockPath] = true
			out = append(out, u.lockPath)
		}
	}
	sort.Strings(out)
	return out
}

func (s *survey) plannedMoves(allowed func(*unit) bool) []Move {
	moves := []Move{}
	for _, u := range s.units {
		if u.hasRepair() && allowed(u) {
			for _, m := range u.lockMoves {
				moves = append(moves, m.Move)
			}
			moves = append(moves, u.moves...)
		}
	}
	return moves
}

// plan builds the intent of the units allowed; nil when there is nothing
// to do.
func (s *survey) plan(allowed func(*unit) bool, command []string) (*journal.Intent, error) {
	var units []*unit
	for _, u := range s.units {
		if u.hasDataRepair() && allowed(u) {
			units = append(units, u)
		}
	}
	if len(units) == 0 {
		return nil, nil
	}
	in := &journal.Intent{Kind: IntentKindRepair, Repo: s.r.Dir, Command: command}
	locks := map[string]bool{}
	for _, u := range units {
		if u.lockPath != "" && !locks[u.lockPath] {
			locks[u.lockPath] = true
			in.Locks = append(in.Locks, u.lockPath)
		}
	}
	sort.Strings(in.Locks)

	mkdirs, err := s.quarantineDirSteps(units)
	if err != nil {
		return nil, err
	}
	in.Steps = append(in.Steps, mkdirs...)

	moves, latests := 0, 0
	for _, u := range units {
		for _, m := range u.moves {
			in.Steps = append(in.Steps, journal.Step{Kind: protocol.KindRename, Path: m.From, To: m.To, Note: "move into quarantine"})
			moves++
		}
	}
	for _, u := range units {
		if u.keepLatest != nil {
			in.Steps = append(in.Steps, *u.keepLatest)
		}
	}
	if moves > 0 {
		in.Steps = append(in.Steps, journal.Step{Kind: engine.KindBarrier, Note: "make the moves durable"})
	}
	rmdirs := 0
	for _, u := range units {
		for _, d := range u.rmdirs {
			in.Steps = append(in.Steps, journal.Step{Kind: protocol.KindRmdir, Path: d, Note: "remove a directory the moves emptied"})
			rmdirs++
		}
	}
	if rmdirs > 0 {
		in.Steps = append(in.Steps, journal.Step{Kind: engine.KindBarrier, Note: "make the removals durable"})
	}
	for _, u := range units {
		if u.latest != nil {
			in.Steps = append(in.Steps, *u.latest)
			latests++
		}
	}
	cat, items, err := s.repairCatalogStep(units)
	if err != nil {
		return nil, err
	}
	if cat != nil {
		in.Steps = append(in.Steps, *cat)
	}
	in.Summary = fmt.Sprintf("doctor: move %d path(s) into quarantine, rewrite %d latest pointer(s), fix catalog rows of %d item(s)",
		moves, latests, items)
	return in, nil
}

// quarantineDirSteps are the steps that create the directories the units'
// moves and latest pointers need that do not exist yet, outermost first,
// and the barrier that makes them durable.
func (s *survey) quarantineDirSteps(units []*unit) ([]journal.Step, error) {
	var steps []journal.Step
	planned := map[string]bool{}
	var dests []string
	for _, u := range units {
		for _, m := range u.moves {
			dests = append(dests, m.To)
		}
		if u.keepLatest != nil {
			dests = append(dests, u.keepLatest.Path)
		}
	}
	for _, d := range dests {
		missing, err := protocol.MissingDirs(s.fsys, filepath.Dir(d), planned)
		if err != nil {
			return nil, err
		}
		for _, m := range missing {
			note := "create a quarantine directory"
			if !strings.HasPrefix(m, s.qstamp) {
				note = "create a directory an always-local directory returns into"
			}
			steps = append(steps, journal.Step{Kind: protocol.KindMkdir, Path: m, Note: note})
		}
	}
	if len(steps) > 0 {
		steps = append(steps, journal.Step{Kind: engine.KindBarrier, Note: "make the quarantine directories durable"})
	}
	return steps, nil
}

// repairCatalogStep is the step that fixes the catalog rows of the units'
// items, in catalog order, and the number of items; nil when no row
// changes.
func (s *survey) repairCatalogStep(units []*unit) (*journal.Step, int, error) {
	ch := protocol.RepairCatalogChange{Namespace: s.r.Namespace}
	for _, u := range units {
		if u.catalog != nil {
			ch.Items = append(ch.Items, *u.catalog)
		}
	}
	if len(ch.Items) == 0 {
		return nil, 0, nil
	}
	var pos []int // of each ch.Order entry
	for i, it := range ch.Items {
		for j, row := range it.Before {
			ch.Order = append(ch.Order, protocol.RepairRowRef{Item: i, Version: row.Version})
			pos = append(pos, it.Pos[j])
		}
	}
	sort.Sort(byPos{ch.Order, pos})
	b, err := json.Marshal(ch)
	if err != nil {
		return nil, 0, err
	}
	return &journal.Step{Kind: protocol.KindRepairCatalog, Path: s.r.CatalogPath, Catalog: b,
		Note: fmt.Sprintf("catalog rows of %d item(s): remove unreadable versions, set latest flags", len(ch.Items))}, len(ch.Items), nil
}

// byPos sorts row refs by their catalog positions.
type byPos struct {
	refs []protocol.RepairRowRef
	pos  []int
}

func (b byPos) Len() int { return len(b.refs) }

func (b byPos) Less(i, j int) bool { return b.pos[i] < b.pos[j] }

func (b byPos) Swap(i, j int) {
	b.refs[i], b.refs[j] = b.refs[j], b.refs[i]
	b.pos[i], b.pos[j] = b.pos[j], b.pos[i]
}
