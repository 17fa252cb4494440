package meta

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/swampj/swampj/ops/swampyaml"
)

// fastDecode is Decode for the files swamp's own writer produces
// (swamp-format §2.4.1, §2.4.2), without the general YAML parser.
//
// It reads only a strict subset, line by line: a block mapping with the
// known top-level keys written plain at column 0; `tags:` and
// `ownerDefinition:` followed by their entries indented by exactly two
// spaces; values that are plain scalars, single-quoted scalars on one line
// (a doubled quote is an escaped quote), plain decimal integers and plain
// true/false. Every plain scalar must be obviously a string: printable,
// none of `: # , [ ] { } "`, a safe first character, and nothing the
// default schema could read as null, a boolean, a number, a timestamp or a
// merge key (plus the YAML 1.1 words, which the writer always quotes).
//
// Whenever the input leaves that subset, or the slow path would fail before
// validation (a missing required key, a value of the wrong type, a present
// but empty optional key), fastDecode reports handled == false and Decode
// falls back to the general parser, which decides. When it does handle the
// input, it builds exactly the Metadata the slow path builds and runs the
// same Validate, so the result is identical.
//
// The strings of the result are substrings of one copy of data.
func fastDecode(data []byte) (m *Metadata, handled bool, err error) {
	if len(data) == 0 || len(data) > fastMaxSize || data[len(data)-1] != '\n' {
		return nil, false, nil
	}
	s := string(data)

	// One allocation for the record and its size, written in place.
	out := new(fastRecord)
	md := &out.md
	var (
		present uint32 // bit per top-level key
		section = sectionNone
		entries int // entries of the open section
		scalars fastScalars
		tagBuf  [16]Tag
		tags    = tagBuf[:0]
		owner   uint16 // bit per ownerDefinition key
	)
	for pos := 0; pos < len(s); {
		eol := pos + strings.IndexByte(s[pos:], '\n')
		line := s[pos:eol]
		pos = eol + 1
		if len(line) > fastMaxLine {
			return nil, false, nil
		}

		if strings.HasPrefix(line, "  ") {
			// An entry of tags or ownerDefinition.
			var ok bool
			tags, owner, ok = fastSectionEntry(line[2:], section, md, tags, owner)
			if !ok {
				return nil, false, nil
			}
			entries++
			continue
		}

		// A top-level key: `key: value`, or `key:` opening a section.
		if section != sectionNone && entries == 0 {
			return nil, false, nil // `tags:` with no entries is null
		}
		section, entries = sectionNone, 0
		colon := strings.IndexByte(line, ':')
		if colon <= 0 {
			return nil, false, nil
		}
		bit := topKey(line[:colon])
		if bit == 0 || present&bit != 0 {
			return nil, false, nil // unknown or duplicate key
		}
		present |= bit
		rest := line[colon+1:]
		switch bit {
		case keyTags, keyOwner:
			if rest != "" {
				return nil, false, nil
			}
			section = sectionTags
			if bit == keyOwner {
				section = sectionOwner
			}
			continue
		}
		if len(rest) < 2 || rest[0] != ' ' {
			return nil, false, nil
		}
		if !fastTopValue(bit, rest[1:], md, &scalars) {
			return nil, false, nil
		}
	}
	if section != sectionNone && entries == 0 {
		return nil, false, nil
	}
	if present&keysRequired != keysRequired || owner&ownerRequired != ownerRequired {
		return nil, false, nil // the slow path reports which key is missing
	}

	return out.typed(present, scalars, tags)
}

// fastSectionEntry reads one entry of the open section (line without its
// two-space indent) into tags or md.Owner. owner holds a bit per
// ownerDefinition key already seen. ok == false hands the input to the slow
// path.
func fastSectionEntry(line string, section int, md *Metadata, tags []Tag, owner uint16) (_ []Tag, _ uint16, ok bool) {
	if section == sectionNone || line == "" || line[0] == ' ' {
		return tags, owner, false
	}
	key, value, ok := splitEntry(line)
	if !ok {
		return tags, owner, false
	}
	str, ok := stringValue(value)
	if !ok {
		return tags, owner, false
	}
	if section == sectionTags {
		if len(tags) == fastMaxTags || key == "__proto__" {
			return tags, owner, false
		}
		for _, t := range tags {
			if t.Key == key {
				return tags, owner, false // duplicate key: a parse error
			}
		}
		return append(tags, Tag{Key: key, Value: str}), owner, true
	}
	bit, field := ownerField(&md.Owner, key)
	if field == nil || owner&bit != 0 {
		return tags, owner, false // unknown (dropped by zod) or duplicate
	}
	if str == "" && bit&ownerNonEmpty != 0 {
		return tags, owner, false
	}
	*field = str
	return tags, owner | bit, true
}

// fastTopValue stores the value of the scalar top-level key bit: the
// strings in md, the scalars typed later (by typed) in sc. false hands the
// input to the slow path.
func fastTopValue(bit uint32, value string, md *Metadata, sc *fastScalars) bool {
	switch bit {
	case keyVersion:
		sc.version = value
		return true
	case keySize:
		sc.size = value
		return true
	case keyStreaming:
		sc.stream = value
		return true
	case keyGC:
		sc.gc = value
		return true
	}
	str, ok := stringValue(value)
	if !ok {
		return false
	}
	switch bit {
	case keyID:
		md.ID = str
	case keyName:
		md.Name = str
	case keyContentType:
		md.ContentType = str
	case keyLifetime:
		sc.life = str
	case keyCreatedAt:
		md.CreatedAt = str
	case keyChecksum:
		md.Checksum = str
	case keyLifecycle, keyRenamedTo:
		if str == "" {
			return false // refused before validation
		}
		if bit == keyLifecycle {
			md.Lifecycle = str
		} else {
			md.RenamedTo = str
		}
	}
	return true
}

// fastRecord is the record fastDecode builds and its size, one allocation.
type fastRecord struct {
	md   Metadata
	size int64
}

// fastScalars are the raw texts of the top-level scalars that get a type.
type fastScalars struct{ version, size, stream, gc, life string }

// typed gives the scalars their types, checks the tags' order and
// validates, as fastDecode's last step: handled == false hands the input to
// the general parser.
func (out *fastRecord) typed(present uint32, raw fastScalars, tags []Tag) (m *Metadata, handled bool, err error) {
	md := &out.md
	version, sizeStr, stream, gc, life := raw.version, raw.size, raw.stream, raw.gc, raw.life
	// Typed values.
	var ok bool
	if md.Version, ok = plainInt(version); !ok {
		return nil, false, nil
	}
	if present&keySize != 0 {
		if out.size, ok = plainInt(sizeStr); !ok {
			return nil, false, nil
		}
	}
	if present&keyStreaming != 0 {
		switch stream {
		case "true":
			md.Streaming = true
		case "false":
		default:
			return nil, false, nil
		}
	}
	if n, isInt := plainInt(gc); isInt {
		md.GarbageCollection.N = n
	} else {
		str, ok := stringValue(gc)
		if !ok || str == "" {
			return nil, false, nil // not a number or a string, or refused
		}
		md.GarbageCollection.Duration = str
	}
	md.Lifetime = life
	if life != "" && life[0] >= '0' && life[0] <= '9' {
		md.Lifetime = NormalizeLifetime(life) // only a duration can change
	}

	// Tags in JavaScript order: Parse puts array-index keys first in
	// ascending order; accept only files that already have that order.
	prev, named := uint64(0), false
	for i, t := range tags {
		if t.Key == "" || t.Key[0] < '0' || t.Key[0] > '9' || !swampyaml.IsArrayIndex(t.Key) {
			named = true
			continue
		}
		n, _ := strconv.ParseUint(t.Key, 10, 64)
		if named || (i > 0 && n <= prev) {
			return nil, false, nil
		}
		prev = n
	}
	md.Tags = make(Tags, len(tags))
	copy(md.Tags, tags)

	m = md
	if present&keySize != 0 {
		m.Size = &out.size
	}
	if err := validateUTF8Checked(m); err != nil { // every string passed plainString or singleQuoted
		return nil, true, err
	}
	return m, true, nil
}

const (
	fastMaxSize = 64 << 10 // larger files are not swamp's
	fastMaxLine = 512      // keeps keys well inside YAML's 1024-character simple-key limit
	fastMaxTags = 64       // duplicate detection is quadratic
)

const (
	sectionNone = iota
	sectionTags
	sectionOwner
)

// Top-level keys, one bit each.
const (
	keyID uint32 = 1 << iota
	keyName
	keyVersion
	keyContentType
	keyLifetime
	keyGC
	keyStreaming
	keyTags
	keyOwner
	keyCreatedAt
	keySize
	keyChecksum
	keyLifecycle
	keyRenamedTo

	keysRequired = keyID | keyName | keyVersion | keyContentType | keyLifetime |
		keyGC | keyTags | keyOwner | keyCreatedAt
)

func topKey(k string) uint32 {
	switch k {
	case "id":
		return keyID
	case "name":
		return keyName
	case "version":
		return keyVersion
	case "contentType":
		return keyContentType
	case "lifetime":
		return keyLifetime
	case "garbageCollection":
		return keyGC
	case "streaming":
		return keyStreaming
	case "tags":
		return keyTags
	case "ownerDefinition":
		return keyOwner
	case "createdAt":
		return keyCreatedAt
	case "size":
		return keySize
	case "checksum":
		return keyChecksum
	case "lifecycle":
		return keyLifecycle
	case "renamedTo":
		return keyRenamedTo
	}
	return 0
}

// ownerDefinition keys, one bit each.
const (
	ownDefinitionHash uint16 = 1 << iota
	ownType
	ownRef
	ownWorkflowID
	ownWorkflowRunID
	ownWorkflowName
	ownJobName
	ownStepName
	ownSource

	ownerRequired = ownType | ownRef
	// ownerNonEmpty are the optional keys Decode refuses when present but
	// empty (before validation).
	ownerNonEmpty = ownDefinitionHash | ownWorkflowID | ownWorkflowRunID
)

func ownerField(o *Owner, k string) (uint16, *string) {
	switch k {
	case "definitionHash":
		return ownDefinitionHash, &o.DefinitionHash
	case "ownerType":
		return ownType, &o.OwnerType
	case "ownerRef":
		return ownRef, &o.OwnerRef
	case "workflowId":
		return ownWorkflowID, &o.WorkflowID
	case "workflowRunId":
		return ownWorkflowRunID, &o.WorkflowRunID
	case "workflowName":
		return ownWorkflowName, &o.WorkflowName
	case "jobName":
		return ownJobName, &o.JobName
	case "stepName":
		return ownStepName, &o.StepName
	case "source":
		return ownSource, &o.Source
	}
	return 0, nil
}

// splitEntry splits `key: value` where key is a plain scalar that is
// obviously a string, or a single-quoted scalar.
func splitEntry(line string) (key, value string, ok bool) {
	if line[0] == '\'' {
		k, end, ok := singleQuoted(line)
		if !ok || !strings.HasPrefix(line[end:], ": ") {
			return "", "", false
		}
		return k, line[end+2:], true
	}
	colon := strings.IndexByte(line, ':')
	if colon <= 0 || colon+1 >= len(line) || line[colon+1] != ' ' {
		return "", "", false
	}
	key = line[:colon]
	if !plainString(key) {
		return "", "", false
	}
	return key, line[colon+2:], true
}

// stringValue returns the string a whole-line value stands for, if it is a
// one-line single-quoted scalar or a plain scalar that is obviously a
// string.
func stringValue(v string) (string, bool) {
	if v == "" {
		return "", false
	}
	if v[0] == '\'' {
		s, end, ok := singleQuoted(v)
		return s, ok && end == len(v)
	}
	return v, plainString(v)
}

// singleQuoted reads the single-quoted scalar at the start of s, on one
// line, and returns its value and the index just past the closing quote.
func singleQuoted(s string) (string, int, bool) {
	escaped := false
	for i := 1; i < len(s); {
		c := s[i]
		switch {
		case c == '\'':
			if i+1 < len(s) && s[i+1] == '\'' {
				escaped = true
				i += 2
				continue
			}
			v := s[1:i]
			if escaped {
				v = strings.ReplaceAll(v, "''", "'")
			}
			return v, i + 1, true
		case c >= 0x20 && c < 0x7f:
			i++
		case c < 0x80:
			return "", 0, false // control character or DEL
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if n == 1 || !printable(r) {
				return "", 0, false
			}
			i += n
		}
	}
	return "", 0, false // unterminated on this line
}

// plainString reports whether v, written plain, is read back as exactly the
// string v, by a conservative check.
func plainString(v string) bool {
	if v == "" || v[len(v)-1] == ' ' || !plainFirst[v[0]] {
		return false
	}
	for i := 0; i < len(v); {
		c := v[i]
		if c < 0x80 {
			if !plainSafe[c] {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(v[i:])
		if n == 1 || !printable(r) {
			return false
		}
		i += n
	}
	return !mayResolve(v)
}

// mayResolve over-approximates "the default schema resolves the plain
// scalar v to something other than a string" for v without ':' (so no
// base-60 number and no time of day): the null, boolean and merge words,
// the YAML 1.1 words, and anything shaped like a number or a date.
func mayResolve(v string) bool {
	switch v {
	case "~", "null", "Null", "NULL",
		"true", "True", "TRUE", "false", "False", "FALSE",
		"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
		"on", "On", "ON", "off", "Off", "OFF", "<<":
		return true
	}
	date := len(v) == 10 // YYYY-MM-DD
	w := v
	if w[0] == '-' || w[0] == '+' {
		w = w[1:]
		if w == "" {
			return true
		}
	}
	if w[0] == '.' {
		return true // .5, .inf, .nan and their variants
	}
	if len(w) > 1 && w[0] == '0' && (w[1] == 'x' || w[1] == 'b') {
		// 0x… and 0b… integers: hex digits and '_' only.
		for i := 2; i < len(w); i++ {
			if c := w[i]; !isHex(c) && c != '_' {
				return false
			}
		}
		return true
	}
	// Decimal and octal integers, floats and dates use only digits, '_',
	// '.', e/E, and '-' or '+' after e/E or between the parts of a date.
	off := len(v) - len(w)
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case c >= '0' && c <= '9', c == '_', c == '.', c == 'e', c == 'E':
		case c == '-' || c == '+':
			if i > 0 && (w[i-1] == 'e' || w[i-1] == 'E') {
				continue
			}
			if date && c == '-' && (i+off == 4 || i+off == 7) {
				continue
			}
			return false
		default:
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// plainInt reads a plain integer: 0, or up to 16 digits without a leading
// zero and at most Number.MAX_SAFE_INTEGER (exact in a float64). Anything
// else goes to the slow path.
func plainInt(v string) (int64, bool) {
	if v == "" || len(v) > 16 || (v[0] == '0' && len(v) > 1) {
		return 0, false
	}
	var n int64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, n <= maxSafeInteger
}

// printable is the non-ASCII part of @std/yaml's isPrintable for BMP
// characters; it excludes everything YAML treats as a line break or BOM.
func printable(r rune) bool {
	return (0xa1 <= r && r <= 0xd7ff && r != 0x2028 && r != 0x2029) ||
		(0xe000 <= r && r <= 0xfffd && r != 0xfeff)
}

// plainFirst and plainSafe are the ASCII characters allowed first and
// anywhere in a plain scalar of the subset.
var plainFirst, plainSafe = func() (first, safe [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		safe[c] = !strings.ContainsRune(`:#,[]{}"`, rune(c))
	}
	for c := 0x80; c < 0x100; c++ {
		first[c], safe[c] = true, true // checked as UTF-8 by the caller
	}
	for _, c := range []byte(`abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./+($^;\=~<)`) {
		first[c] = true
	}
	return first, safe
}()
