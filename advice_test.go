package swampj_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/lock"
)

// The errors of the packages below the host API name their next step, and
// NextIn finds it through wrapping and joining, from the fields that
// decide it.
func TestErrorsBelowTheHostAPINameTheirNext(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want swampj.Next
	}{
		{"journal lock", &journal.LockTimeoutError{Path: "j"}, swampj.NextWaitLonger},
		{"journal set aside", &journal.CorruptError{Path: "j", MovedTo: "j.bad"}, swampj.NextVerifyCatalog},
		{"journal damaged, read-only", &journal.CorruptError{Path: "j", ReadOnly: true}, swampj.NextRecoverWhereWritable},
		{"no intent", &journal.NotFoundError{ID: 7}, swampj.NextListAllIntents},
		{"journal not a file", &journal.NotAFileError{Path: "j"}, swampj.NextNothingToRecover},
		{"swamp lock with holder", &lock.TimeoutError{Path: "l", Holder: &lock.Info{Pid: 1}}, swampj.NextInspectSwampLock},
		{"swamp lock without holder", &lock.TimeoutError{Path: "l"}, swampj.NextWaitLongerForSwampLock},
		{"swamp lock changed", &lock.ChangedError{Path: "l"}, swampj.NextCheck},
		{"catalog missing", &catalog.MissingError{}, swampj.NextRebuildCatalog},
		{"catalog foreign", &catalog.ForeignSchemaError{}, swampj.NextInspectCatalogThenRebuild},
	} {
		wrapped := fmt.Errorf("doing it: %w", c.err)
		joined := errors.Join(errors.New("first"), wrapped)
		if !swampj.NextIn(wrapped, c.want) || !swampj.NextIn(joined, c.want) {
			t.Errorf("%s: NextIn(%v) does not find %d", c.name, c.err, c.want)
		}
		if swampj.NextIn(wrapped, swampj.NextNone) || swampj.NextIn(errors.New("plain"), c.want) {
			t.Errorf("%s: NextIn finds what is not there", c.name)
		}
	}
}
