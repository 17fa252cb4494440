package meta

import (
	"bytes"
	"math"

	"github.com/swampj/swampj/ops/swampyaml"
)

// Decode reads a metadata.yaml as swamp does — @std/yaml parse, then the
// zod schema (swamp-format §2.4) — and returns the record or the reason swamp would
// refuse it: ErrEmpty for a zero-byte or whitespace-only file, otherwise an
// *InvalidError naming the field.
//
// The YAML typing matters: an unquoted createdAt is read as a Date and
// refused, an unquoted tag value such as 123 or true is a number or boolean
// and refused (tags map strings to strings), `012` is the number 10 (swamp-format §9.1).
// Unknown keys are dropped, as zod drops them; tags keep JavaScript order.
// A lifetime of zero duration is read as workflow.
//
// Because empty strings mean "absent" in Metadata, a present but empty
// checksum, workflowName, jobName, stepName or source (which swamp accepts)
// is decoded as absent and would not be written back by Encode; the other
// optional keys refuse the empty string, as the schema does.
func Decode(data []byte) (*Metadata, error) {
	if m, handled, err := fastDecode(data); handled {
		return m, err
	}
	return decodeSlow(data)
}

// decodeSlow is Decode through the general YAML parser; fastDecode
// (fastdecode.go) handles the files swamp's writer produces without it.
func decodeSlow(data []byte) (*Metadata, error) {
	if len(bytes.Trim(data, " \t\r\n")) == 0 {
		return nil, ErrEmpty
	}
	root, err := swampyaml.Parse(data)
	if err != nil {
		return nil, invalid("", "not valid YAML: %v", err)
	}
	if root.Kind != swampyaml.MapKind {
		return nil, invalid("", "expected a mapping at the top level, found %s", root.Kind)
	}
	r := reader{}
	m := &Metadata{
		ID:          r.str(root, "id", "id", true),
		Name:        r.str(root, "name", "name", true),
		Version:     r.integer(root, "version", "version", true),
		ContentType: r.str(root, "contentType", "contentType", true),
		Lifetime:    NormalizeLifetime(r.str(root, "lifetime", "lifetime", true)),
		CreatedAt:   r.createdAt(root),
		Checksum:    r.str(root, "checksum", "checksum", false),
		Lifecycle:   r.str(root, "lifecycle", "lifecycle", false),
		RenamedTo:   r.str(root, "renamedTo", "renamedTo", false),
	}
	m.GarbageCollection = r.garbageCollection(root)
	m.Streaming = r.streaming(root)
	m.Tags = r.tags(root)
	m.Owner = r.owner(root)
	if v, ok := root.Get("size"); ok {
		size := r.number(v, "size")
		m.Size = &size
	}
	// Optional keys whose schema refuses the empty string (min(1), enum,
	// uuid) must be refused here, where "present" is still visible.
	r.nonEmptyIfPresent(root, "lifecycle", "lifecycle")
	r.nonEmptyIfPresent(root, "renamedTo", "renamedTo")
	if r.err != nil {
		return nil, r.err
	}
	if err := Validate(m); err != nil {
		return nil, err
	}
	return m, nil
}

// reader extracts typed fields and keeps the first error, so Decode reads
// as a list of fields.
type reader struct{ err *InvalidError }

func (r *reader) fail(e *InvalidError) {
	if r.err == nil {
		r.err = e
	}
}

// str returns a string field; required fields must be present.
func (r *reader) str(m *swampyaml.Node, key, field string, required bool) string {
	v, ok := m.Get(key)
	if !ok {
		if required {
			r.fail(invalid(field, "is required"))
		}
		return ""
	}
	if v.Kind != swampyaml.StringKind {
		r.fail(notAString(field, v))
		return ""
	}
	return v.Str
}

// notAString explains how YAML typing turned a value into a non-string.
func notAString(field string, v *swampyaml.Node) *InvalidError {
	switch v.Kind {
	case swampyaml.TimestampKind:
		return invalid(field, "must be a quoted string: the unquoted value is read as a date")
	case swampyaml.NumberKind, swampyaml.BoolKind, swampyaml.NullKind:
		return invalid(field, "must be a string, found %s (quote it)", v.Kind)
	}
	return invalid(field, "must be a string, found a %s", v.Kind)
}

// number returns a safe integer (zod 4's .int()).
func (r *reader) number(v *swampyaml.Node, field string) int64 {
	if v.Kind != swampyaml.NumberKind {
		r.fail(invalid(field, "must be an integer, found %s", v.Kind))
		return 0
	}
	f := v.Num
	if f != math.Trunc(f) || math.Abs(f) > maxSafeInteger {
		r.fail(invalid(field, "must be an integer, got %s", swampyaml.JSNumberString(f)))
		return 0
	}
	return int64(f)
}

func (r *reader) integer(m *swampyaml.Node, key, field string, required bool) int64 {
	v, ok := m.Get(key)
	if !ok {
		if required {
			r.fail(invalid(field, "is required"))
		}
		return 0
	}
	return r.number(v, field)
}

// createdAt must be a string: swamp's parser turns an unquoted timestamp
// into a Date, which z.string().datetime() rejects (swamp-format §2.4, §9.1).
func (r *reader) createdAt(m *swampyaml.Node) string {
	v, ok := m.Get("createdAt")
	switch {
	case !ok:
		r.fail(invalid("createdAt", "is required"))
	case v.Kind == swampyaml.TimestampKind:
		r.fail(invalid("createdAt", "must be a quoted ISO-8601 UTC timestamp (unquoted, swamp reads it as a date and rejects it)"))
	case v.Kind != swampyaml.StringKind:
		r.fail(notAString("createdAt", v))
	default:
		return v.Str
	}
	return ""
}

func (r *reader) garbageCollection(m *swampyaml.Node) GarbageCollection {
	v, ok := m.Get("garbageCollection")
	switch {
	case !ok:
		r.fail(invalid("garbageCollection", "is required"))
	case v.Kind == swampyaml.NumberKind:
		return GarbageCollection{N: r.number(v, "garbageCollection")}
	case v.Kind == swampyaml.StringKind:
		if v.Str == "" {
			r.fail(invalid("garbageCollection", "must be a positive integer or a duration like 30d, got \"\""))
		}
		return GarbageCollection{Duration: v.Str}
	default:
		r.fail(invalid("garbageCollection", "must be a positive integer or a duration like 30d, found %s", v.Kind))
	}
	return GarbageCollection{}
}

// streaming defaults to false when absent (z.boolean().default(false));
// null is not absent.
func (r *reader) streaming(m *swampyaml.Node) bool {
	v, ok := m.Get("streaming")
	if !ok {
		return false
	}
	if v.Kind != swampyaml.BoolKind {
		r.fail(invalid("streaming", "must be true or false, found %s", v.Kind))
		return false
	}
	return v.Bool
}

func (r *reader) tags(m *swampyaml.Node) Tags {
	v, ok := m.Get("tags")
	if !ok {
		r.fail(invalid("tags", "is required"))
		return nil
	}
	if v.Kind != swampyaml.MapKind {
		r.fail(invalid("tags", "must be a mapping of strings, found %s", v.Kind))
		return nil
	}
	tags := make(Tags, 0, len(v.Pairs))
	for _, p := range v.Pairs {
		if p.Value.Kind != swampyaml.StringKind {
			r.fail(notAString("tags."+p.Key, p.Value))
			return nil
		}
		tags = append(tags, Tag{Key: p.Key, Value: p.Value.Str})
	}
	return tags
}

func (r *reader) owner(m *swampyaml.Node) Owner {
	v, ok := m.Get("ownerDefinition")
	if !ok {
		r.fail(invalid("ownerDefinition", "is required"))
		return Owner{}
	}
	if v.Kind != swampyaml.MapKind {
		r.fail(invalid("ownerDefinition", "must be a mapping, found %s", v.Kind))
		return Owner{}
	}
	var o Owner
	for _, f := range ownerFields(&o) {
		required := f.key == "ownerType" || f.key == "ownerRef"
		*f.value = r.str(v, f.key, "ownerDefinition."+f.key, required)
	}
	for _, key := range []string{"definitionHash", "workflowId", "workflowRunId"} {
		r.nonEmptyIfPresent(v, key, "ownerDefinition."+key)
	}
	return o
}

func (r *reader) nonEmptyIfPresent(m *swampyaml.Node, key, field string) {
	if v, ok := m.Get(key); ok && v.Kind == swampyaml.StringKind && v.Str == "" {
		r.fail(invalid(field, "must not be empty when present"))
	}
}
