package meta

import (
	"errors"
	"fmt"
)

// ErrEmpty is returned by Decode for a zero-byte or whitespace-only
// metadata.yaml. swamp parses such a file as null and Data.fromData then
// throws, so the version is unreadable to swamp (swamp-format §2.4, §9.2); a crash between
// creating and filling the file leaves exactly this.
var ErrEmpty = errors.New("metadata.yaml: file is empty")

// InvalidError says which field of a metadata.yaml (or of a Metadata about
// to be written) swamp would reject, and why. Field is the YAML path
// ("createdAt", "tags.type", "ownerDefinition.ownerRef"); it is empty when
// the document as a whole is wrong (not YAML, not a mapping).
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string {
	if e.Field == "" {
		return "metadata.yaml: " + e.Reason
	}
	return fmt.Sprintf("metadata.yaml: field %q: %s", e.Field, e.Reason)
}

func invalid(field, format string, args ...any) *InvalidError {
	return &InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
