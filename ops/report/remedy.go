package report

// Remedy names the action that fixes what a doctor finding, a migrate
// warning or an error reports. It is data: the library says which action,
// in words in the accompanying text and as this code; a front end says how
// (cmd/swampj renders each as its command, a host program calls the
// matching function). The empty Remedy is "no action of swampj's".
type Remedy string

const (
	// RemedyRecover: finish the open intents (recover.Run).
	RemedyRecover Remedy = "recover"
	// RemedyRecoverOrRollback: finish the open intents, or undo them
	// (recover.Run, with Options.Rollback to undo).
	RemedyRecoverOrRollback Remedy = "recover_or_rollback"
	// RemedyRebuildCatalog: rebuild the catalog from the disk
	// (RebuildCatalog with Confirm).
	RemedyRebuildCatalog Remedy = "rebuild_catalog"
	// RemedyMigrate: the forward namespace migration (Migrate with Confirm).
	RemedyMigrate Remedy = "migrate"
	// RemedyMigrateReverse: the reverse migration (Migrate with Reverse and
	// Confirm).
	RemedyMigrateReverse Remedy = "migrate_reverse"
	// RemedyUnsetMigrate: unset the namespace and move its data back
	// (Migrate with Unset and Confirm).
	RemedyUnsetMigrate Remedy = "unset_migrate"
	// RemedyUnsetNamespace: remove the namespace from the configuration,
	// moving no data (UnsetNamespace): swamp then reads the un-namespaced
	// root, where the data already is.
	RemedyUnsetNamespace Remedy = "unset_namespace"
	// RemedyRepair: the doctor's confirmed repair (Doctor with Repair and
	// Confirm).
	RemedyRepair Remedy = "repair"
)

// The actions only a person can take. The text beside the code names the
// path and says what to do; a front end shows it as it is (it has no
// command for it), and the summary of a run lists them, so that an
// operator knows what is left to do by hand.
const (
	// RemedyNone: nothing to do; the text explains a state that is not a
	// problem (what swamp's own doctor misreports).
	RemedyNone Remedy = "none"
	// RemedyFixAccess: make the named path readable (and, where it must be
	// written, writable) for the user that runs swamp and swampj: its
	// permissions, its owner, or something else in its place moved away.
	RemedyFixAccess Remedy = "fix_access"
	// RemedyInspect: look at the named paths and put them right by hand
	// (what was moved by hand in the middle of an operation, a file where
	// swamp expects another kind of file).
	RemedyInspect Remedy = "inspect"
	// RemedySwampUpgrade: run swamp's own `swamp repo upgrade` (a legacy
	// layout only swamp rewrites).
	RemedySwampUpgrade Remedy = "swamp_repo_upgrade"
	// RemedyMountReadWrite: the repo is on read-only media; mount it
	// read-write to use it with swamp.
	RemedyMountReadWrite Remedy = "mount_read_write"
	// RemedyRetry: something else held it (a busy lock); run the same
	// command again once it is idle.
	RemedyRetry Remedy = "retry"
	// RemedyCheckAgain: run the doctor again (what it could not look at,
	// or what changed while it ran).
	RemedyCheckAgain Remedy = "check_again"
)

// Human reports whether r is an action only a person can take (not one of
// swampj's commands, and not "nothing to do").
func (r Remedy) Human() bool {
	switch r {
	case RemedyFixAccess, RemedyInspect, RemedySwampUpgrade, RemedyMountReadWrite:
		return true
	}
	return false
}
