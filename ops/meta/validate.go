package meta

import (
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/swampj/swampj/ops/jsfmt"
)

// The checks below are swamp's zod schema DataMetadataSchema
// (src/domain/data/data_metadata.ts, zod 4.4.3), summarised in
// swamp-format §2.4.

// maxSafeInteger is Number.MAX_SAFE_INTEGER: zod 4's .int() accepts only
// safe integers.
const maxSafeInteger = 1<<53 - 1

// uuidPattern is zod 4's uuid() regex: RFC 9562 version nibble 1–8 and
// variant 8–b in either case, plus the nil UUID and the lower-case max UUID.
// These patterns are compiled on first use, not at every swampj process's
// start-up; uuidPattern and datetimePattern only by patterns_test.go.
var uuidPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[1-8][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}|00000000-0000-0000-0000-000000000000|ffffffff-ffff-ffff-ffff-ffffffffffff)$`)
})

// datetimePattern is zod 4's datetime() regex with default options: a real
// calendar date (leap years included), `T`, HH:MM with optional seconds and
// any number of fraction digits, and a mandatory upper-case Z.
var datetimePattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|(?:02)-(?:0[1-9]|1\d|2[0-8])))T(?:(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d+)?)?(?:Z))$`)
})

// durationPattern is the duration form shared by lifetime and
// garbageCollection.
var durationPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\d+)(mo|y|h|m|d|w)$`) })

// OwnerTypes are the accepted ownerDefinition.ownerType values.
var OwnerTypes = []string{"model-method", "workflow-step", "manual"}

// Validate reports the first way m breaks swamp's metadata schema, as an
// *InvalidError, or nil. Decode calls it on what it read; writers call it
// (Encode does) so that swampj never leaves a metadata.yaml swamp would
// refuse — one such file hides its whole model from swamp (swamp-format §9.2).
//
// A Go string cannot say "present but empty" for the optional fields, so
// empty means absent throughout; see Decode for what that drops.
func Validate(m *Metadata) error {
	if m == nil {
		return invalid("", "no metadata")
	}
	if err := validUTF8(m); err != nil {
		return err
	}
	return validateUTF8Checked(m)
}

// validateUTF8Checked is Validate for a record whose strings are known to
// be valid UTF-8: fastDecode accepts only printable UTF-8 in every key and
// value it keeps, so the pass over every field would find nothing.
func validateUTF8Checked(m *Metadata) error {
	if !isUUID(m.ID) {
		return invalid("id", "must be a UUID (RFC 9562 version 1-8, variant 8-b), got %q", m.ID)
	}
	if err := validateNameRules(m.Name); err != nil {
		return err
	}
	if m.Version <= 0 || m.Version > maxSafeInteger {
		return invalid("version", "must be a positive integer, got %d", m.Version)
	}
	if m.ContentType == "" {
		return invalid("contentType", "must not be empty")
	}
	if !validLifetime(m.Lifetime) {
		return invalid("lifetime", "must be a duration like 1h, 5m, 10d, 2w, 1mo, 10y or one of ephemeral, infinite, job, workflow, got %q", m.Lifetime)
	}
	if err := validateGarbageCollection(m.GarbageCollection); err != nil {
		return err
	}
	if _, ok := m.Tags.Get("type"); !ok {
		return invalid("tags", "must include the key \"type\"")
	}
	if k, dup := duplicateTag(m.Tags); dup {
		return invalid("tags."+k, "duplicate tag key")
	}
	if err := validateOwner(&m.Owner); err != nil {
		return err
	}
	if !isDatetime(m.CreatedAt) {
		return invalid("createdAt", "must be an ISO-8601 UTC timestamp such as 2026-08-01T12:00:00.000Z (upper-case Z, no offset), got %q", m.CreatedAt)
	}
	if m.Size != nil && (*m.Size < 0 || *m.Size > maxSafeInteger) {
		return invalid("size", "must be a non-negative integer, got %d", *m.Size)
	}
	switch m.Lifecycle {
	case "", "active", "deleted":
	default:
		return invalid("lifecycle", "must be active or deleted, got %q", m.Lifecycle)
	}
	return nil
}

// duplicateTag returns the first tag key that repeats an earlier one.
// Metadata has a handful of tags: comparing pairs is cheaper than the map
// a scan of 100,000 files would make and drop each time.
func duplicateTag(tags Tags) (string, bool) {
	if len(tags) > 32 {
		seen := make(map[string]bool, len(tags))
		for _, t := range tags {
			if seen[t.Key] {
				return t.Key, true
			}
			seen[t.Key] = true
		}
		return "", false
	}
	for i := 1; i < len(tags); i++ {
		for j := 0; j < i; j++ {
			if tags[j].Key == tags[i].Key {
				return tags[i].Key, true
			}
		}
	}
	return "", false
}

// validateNameRules is the schema's name refinement (swamp-format §2.2): non-empty, no
// path traversal.
func validateNameRules(name string) error {
	switch {
	case name == "":
		return invalid("name", "must not be empty")
	case strings.Contains(name, ".."), strings.Contains(name, "/"),
		strings.Contains(name, `\`), strings.Contains(name, "\x00"):
		return invalid("name", "must not contain '..', '/', '\\' or NUL (path traversal), got %q", name)
	}
	return nil
}

// ValidateDataName checks a data name as swamp does before writing one
// (swamp-format §2.2): the schema rules plus the reserved name `latest`, compared
// case-insensitively (JavaScript toLowerCase, so `LATEST` and `Latest` are
// refused). Names swamp accepts that are not portable (`:`, `*`, trailing
// dots, purely numeric…) pass, as they do in swamp (swamp-format §9.6).
func ValidateDataName(name string) error {
	if !utf8.ValidString(name) {
		return invalid("name", "is not valid UTF-8")
	}
	if err := validateNameRules(name); err != nil {
		return err
	}
	if jsfmt.ToLower(name) == "latest" {
		return invalid("name", "%q is reserved (it is the name of the latest-version pointer file)", name)
	}
	return nil
}

// validLifetime is LifetimeSchema.
func validLifetime(s string) bool {
	switch s {
	case "ephemeral", "infinite", "job", "workflow":
		return true
	}
	return durationPattern().MatchString(s)
}

// NormalizeLifetime maps a zero duration (`0h`, `00w`, …) to "workflow", as
// swamp's normalizeLifetime does on create and on read (swamp-format §2.4); anything else
// is returned unchanged.
func NormalizeLifetime(s string) string {
	if m := durationPattern().FindStringSubmatch(s); m != nil && strings.Trim(m[1], "0") == "" {
		return "workflow"
	}
	return s
}

// validateGarbageCollection is GarbageCollectionSchema: a positive safe
// integer, or a duration whose number is greater than zero.
func validateGarbageCollection(gc GarbageCollection) error {
	switch {
	case gc.Duration != "" && gc.N != 0:
		return invalid("garbageCollection", "is both a count (%d) and a duration (%q)", gc.N, gc.Duration)
	case gc.Duration != "":
		m := durationPattern().FindStringSubmatch(gc.Duration)
		if m == nil {
			return invalid("garbageCollection", "must be a positive integer or a duration like 30d, got %q", gc.Duration)
		}
		if strings.Trim(m[1], "0") == "" {
			return invalid("garbageCollection", "duration must be greater than zero, got %q", gc.Duration)
		}
	case gc.N <= 0 || gc.N > maxSafeInteger:
		return invalid("garbageCollection", "must be a positive integer or a duration like 30d, got %d", gc.N)
	}
	return nil
}

// validateOwner is OwnerDefinitionSchema.
func validateOwner(o *Owner) error {
	known := false
	for _, t := range OwnerTypes {
		known = known || o.OwnerType == t
	}
	if !known {
		return invalid("ownerDefinition.ownerType", "must be one of model-method, workflow-step, manual, got %q", o.OwnerType)
	}
	if o.OwnerRef == "" {
		return invalid("ownerDefinition.ownerRef", "must not be empty")
	}
	if o.WorkflowID != "" && !isUUID(o.WorkflowID) {
		return invalid("ownerDefinition.workflowId", "must be a UUID, got %q", o.WorkflowID)
	}
	if o.WorkflowRunID != "" && !isUUID(o.WorkflowRunID) {
		return invalid("ownerDefinition.workflowRunId", "must be a UUID, got %q", o.WorkflowRunID)
	}
	return nil
}

// validUTF8 rejects strings JavaScript could not hold.
func validUTF8(m *Metadata) error {
	fields := []struct{ name, value string }{
		{"id", m.ID}, {"name", m.Name}, {"contentType", m.ContentType},
		{"lifetime", m.Lifetime}, {"garbageCollection", m.GarbageCollection.Duration},
		{"ownerDefinition.definitionHash", m.Owner.DefinitionHash},
		{"ownerDefinition.ownerType", m.Owner.OwnerType},
		{"ownerDefinition.ownerRef", m.Owner.OwnerRef},
		{"ownerDefinition.workflowId", m.Owner.WorkflowID},
		{"ownerDefinition.workflowRunId", m.Owner.WorkflowRunID},
		{"ownerDefinition.workflowName", m.Owner.WorkflowName},
		{"ownerDefinition.jobName", m.Owner.JobName},
		{"ownerDefinition.stepName", m.Owner.StepName},
		{"ownerDefinition.source", m.Owner.Source},
		{"createdAt", m.CreatedAt}, {"checksum", m.Checksum},
		{"lifecycle", m.Lifecycle}, {"renamedTo", m.RenamedTo},
	}
	for _, f := range fields {
		if !utf8.ValidString(f.value) {
			return invalid(f.name, "is not valid UTF-8")
		}
	}
	for _, t := range m.Tags {
		if !utf8.ValidString(t.Key) || !utf8.ValidString(t.Value) {
			return invalid("tags", "tag %q is not valid UTF-8", t.Key)
		}
	}
	return nil
}
