// Package testseam carries the one hook of package write that the
// cross-protocol crash suites of package ops need: a write whose version id
// and createdAt are fixed, so that two runs leave byte-identical trees.
// WriteOptions keeps its clock and id source unexported, so no host sees
// them; package write fills this in when it is initialised, and only code
// inside ops can import it.
package testseam

import "time"

// FixWriteIdentity returns a copy of opts, a write.WriteOptions, whose
// versions all get id and createdAt at.
var FixWriteIdentity func(opts any, id string, at time.Time) any
