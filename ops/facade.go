package ops

// The host's names for what lives in ops's sub-packages. A host imports
// ops alone: the doctor (ops/doctor), catalog verify and rebuild
// (ops/catalogsync) and the vocabulary every operation reports in
// (ops/report) are re-exported here under the names they have always had,
// as aliases, so a value from either import path is the same type
// (errors.As, type switches and struct literals all agree). bbolt v1.4 did
// the same when it moved its errors into a sub-package.

import (
	"context"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
)

// ---- what every operation reports (ops/report)

type (
	// Progress receives ProgressEvents (report.Progress).
	Progress = report.Progress
	// ProgressEvent is one report of how far a long operation is.
	ProgressEvent = report.ProgressEvent
	// Remedy names the action that fixes what a finding or error reports.
	Remedy = report.Remedy
	// IntentOutcome is what recovery did (or would do) with one open intent.
	IntentOutcome = report.IntentOutcome
	// StepView is one step and what the disk says about it.
	StepView = report.StepView
	// OpenIntentsError refuses work that needs a settled disk.
	OpenIntentsError = report.OpenIntentsError
	// IntentStillOpenError is an intent recovery could not finish or undo.
	IntentStillOpenError = report.IntentStillOpenError
)

// The remedies (report.Remedy).
const (
	RemedyRecover           = report.RemedyRecover
	RemedyUnsetNamespace    = report.RemedyUnsetNamespace
	RemedyRecoverOrRollback = report.RemedyRecoverOrRollback
	RemedyRebuildCatalog    = report.RemedyRebuildCatalog
	RemedyMigrate           = report.RemedyMigrate
	RemedyMigrateReverse    = report.RemedyMigrateReverse
	RemedyUnsetMigrate      = report.RemedyUnsetMigrate
	RemedyRepair            = report.RemedyRepair

	RemedyNone           = report.RemedyNone
	RemedyFixAccess      = report.RemedyFixAccess
	RemedyInspect        = report.RemedyInspect
	RemedySwampUpgrade   = report.RemedySwampUpgrade
	RemedyMountReadWrite = report.RemedyMountReadWrite
	RemedyRetry          = report.RemedyRetry
	RemedyCheckAgain     = report.RemedyCheckAgain
)

// ---- the doctor (ops/doctor)

// Doctor checks the repo's data and catalog and, with Repair, fixes what
// it can (doctor.Run).
func Doctor(ctx context.Context, fsys fsx.FS, r *repo.Repo, opts DoctorOptions) (*DoctorReport, error) {
	return doctor.Run(ctx, fsys, r, opts)
}

type (
	DoctorOptions     = doctor.Options
	DoctorReport      = doctor.Report
	DoctorCheck       = doctor.Check
	DoctorCode        = doctor.Code
	DoctorFinding     = doctor.Finding
	DoctorInFlight    = doctor.InFlight
	DoctorMove        = doctor.Move
	DoctorRepairError = doctor.RepairError
	DoctorStatus      = doctor.Status
	DoctorOutcome     = doctor.Outcome
	DoctorAction      = doctor.Action
	DoctorNotice      = doctor.Notice
	SwampCheck        = doctor.SwampCheck
	LockChangedError  = lock.ChangedError
)

// IntentKindRepair is the journal kind of a doctor repair.
const IntentKindRepair = doctor.IntentKindRepair

// The doctor's finding codes (doctor.Code).
const (
	DoctorVersionUnreadable    = doctor.CodeVersionUnreadable
	DoctorLatestUnreadable     = doctor.CodeLatestUnreadable
	DoctorLatestNotFound       = doctor.CodeLatestNotFound
	DoctorLatestDamaged        = doctor.CodeLatestDamaged
	DoctorCatalogRowUnreadable = doctor.CodeCatalogRowUnreadable
	DoctorCatalogLatestWrong   = doctor.CodeCatalogLatestWrong
	DoctorCatalogUnusable      = doctor.CodeCatalogUnusable
	DoctorCatalogCopy          = doctor.CodeCatalogCopy
	DoctorStagingLeftover      = doctor.CodeStagingLeftover
	DoctorOpenIntent           = doctor.CodeOpenIntent
	DoctorDirectoryUnreadable  = doctor.CodeDirectoryUnreadable
	DoctorCatalogStale         = doctor.CodeCatalogStale
	DoctorLockDead             = doctor.CodeLockDead
	DoctorJournalHolderStale   = doctor.CodeJournalHolderStale
	DoctorRecordUnreadable     = doctor.CodeRecordUnreadable
	DoctorSwampCheck           = doctor.CodeSwampCheck
	DoctorLocalDirHidden       = doctor.CodeHiddenLocalDir
)

// What happened (or would happen) to a finding (doctor.Status).
const (
	DoctorFound       = doctor.StatusFound
	DoctorWouldRepair = doctor.StatusWouldRepair
	DoctorRepaired    = doctor.StatusRepaired
	DoctorSkipped     = doctor.StatusSkipped
	DoctorManual      = doctor.StatusManual
)

// The kinds of DoctorNotice.
const (
	DoctorNoticeNote    = doctor.NoticeNote
	DoctorNoticeWarning = doctor.NoticeWarning
)

// What a doctor run leaves (doctor.Outcome).
const (
	DoctorClean       = doctor.OutcomeClean
	DoctorRepairedAll = doctor.OutcomeRepaired
	DoctorRepairable  = doctor.OutcomeRepairable
	DoctorBusy        = doctor.OutcomeBusy
	DoctorManualLeft  = doctor.OutcomeManual
)

// The checks of swamp's own doctor that the doctor runs (SwampCheck.Name).
const (
	SwampCheckHealth        = doctor.SwampCheckHealth
	SwampCheckMigration     = doctor.SwampCheckMigration
	SwampCheckContamination = doctor.SwampCheckContamination
	SwampCheckCompleteness  = doctor.SwampCheckCompleteness
)

// ---- the catalog compared with the disk (ops/catalogsync)

// VerifyCatalog compares the catalog with the disk, read-only
// (catalogsync.Verify).
func VerifyCatalog(ctx context.Context, fsys fsx.FS, r *repo.Repo, opts CatalogOptions) (*CatalogReport, error) {
	return catalogsync.Verify(ctx, fsys, r, opts)
}

// RebuildCatalog rebuilds the catalog from the disk (catalogsync.Rebuild).
func RebuildCatalog(ctx context.Context, fsys fsx.FS, r *repo.Repo, opts CatalogOptions) (*CatalogReport, error) {
	return catalogsync.Rebuild(ctx, fsys, r, opts)
}

// ExpectedRows is the catalog the disk implies (catalogsync.ExpectedRows).
func ExpectedRows(ctx context.Context, fsys fsx.FS, r *repo.Repo, opts ExpectedOptions) (*Expected, error) {
	return catalogsync.ExpectedRows(ctx, fsys, r, opts)
}

// OpenCatalog opens a handle on the repo's catalog that several calls
// share (catalogsync.OpenHandle).
func OpenCatalog(fsys fsx.FS, repoDir string) *CatalogHandle {
	return catalogsync.OpenHandle(fsys, repoDir)
}

type (
	CatalogOptions    = catalogsync.Options
	CatalogReport     = catalogsync.Report
	CatalogCounts     = catalogsync.Counts
	RebuildTimings    = catalogsync.Timings
	CatalogHandle     = catalogsync.Handle
	StaleNamespace    = catalogsync.StaleNamespace
	ExpectedOptions   = catalogsync.ExpectedOptions
	Expected          = catalogsync.Expected
	UnmigratedError   = catalogsync.UnmigratedError
	UnreadableVersion = catalogsync.UnreadableVersion
	ForeignNamespace  = catalogsync.ForeignNamespace
	ItemProblem       = catalogsync.ItemProblem
	Problem           = catalogsync.Problem
)

// Codes of the problems a catalog comparison adds to the store's own.
const (
	CodeRowInvalid        = catalogsync.CodeRowInvalid
	CodeTypeNotNormalized = catalogsync.CodeTypeNotNormalized
)
