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
	// RemedyRepair: the doctor's confirmed repair (Doctor with Repair and
	// Confirm).
	RemedyRepair Remedy = "repair"
)
