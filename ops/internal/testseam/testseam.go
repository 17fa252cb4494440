// Package testseam carries the hooks of package write that the
// cross-protocol crash suites of package ops need: a write whose version id
// and createdAt are fixed, so that two runs leave byte-identical trees, and
// a write handle without its settle timer, so that the number of
// operations a run issues does not depend on how fast the machine is.
// WriteOptions keeps its clock and id source unexported, so no host sees
// them; package write fills this in when it is initialised, and only code
// inside ops can import it.
package testseam

import "time"

// FixWriteIdentity returns a copy of opts, a write.WriteOptions, whose
// versions all get id and createdAt at.
var FixWriteIdentity func(opts any, id string, at time.Time) any

// NoSettleTimer returns a copy of opts, a write.WriteOptions, with which
// write.Open gives a handle that syncs its catalog and marks its parked
// intents only every 64 writes and at Close, never on its timer.
var NoSettleTimer func(opts any) any
