package meta

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var goldenFiles = []string{"metadata-model-method.yaml", "metadata-workflow-step.yaml"}

func goldenBytes(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "golden", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// checkSame fails unless fastDecode, having handled data, returned exactly
// what the general parser returns: the same Metadata and the same error.
func checkSame(t testing.TB, data []byte, m *Metadata, err error) {
	t.Helper()
	sm, serr := decodeSlow(data)
	if !reflect.DeepEqual(m, sm) || !reflect.DeepEqual(err, serr) {
		t.Fatalf("fast path differs from slow path on\n%q\nfast: %+v, %v\nslow: %+v, %v", data, m, err, sm, serr)
	}
}

func TestFastDecodeGolden(t *testing.T) {
	for _, name := range goldenFiles {
		data := goldenBytes(t, name)
		m, handled, err := fastDecode(data)
		if !handled {
			t.Fatalf("%s: fast path did not handle it", name)
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		checkSame(t, data, m, err)
	}
}

// TestFastDecodeSubset pins what the fast path handles (the writer's
// output, quoted values included) and what it leaves to the slow path.
func TestFastDecodeSubset(t *testing.T) {
	handled := map[string]func(m *Metadata){
		"numeric name":      func(m *Metadata) { m.Name = "207333" },
		"date-like name":    func(m *Metadata) { m.Name = "2026-01-01" },
		"bool-like name":    func(m *Metadata) { m.Name = "true" },
		"yaml 1.1 word":     func(m *Metadata) { m.Name = "yes" },
		"colon name":        func(m *Metadata) { m.Name = "a:b" },
		"quote in name":     func(m *Metadata) { m.Name = "'q' it's" },
		"unicode name":      func(m *Metadata) { m.Name = "日本語 ß é" },
		"spaced name":       func(m *Metadata) { m.Name = "  spaced  " },
		"plain oddities":    func(m *Metadata) { m.Name = "x? a@b 1.2.3 a'b NaN 0o17 09" },
		"78-character name": func(m *Metadata) { m.Name = strings.Repeat("n", 78) },
		"zero lifetime":     func(m *Metadata) { m.Lifetime = "0h" },
		"duration lifetime": func(m *Metadata) { m.Lifetime = "10y"; m.GarbageCollection = GarbageCollection{Duration: "005m"} },
		"streaming":         func(m *Metadata) { m.Streaming = true },
		"tombstone":         func(m *Metadata) { m.Lifecycle = "deleted"; m.RenamedTo = "207333"; m.Size = nil; m.Checksum = "" },
		"size zero":         func(m *Metadata) { m.Size = int64p(0) },
		"upper-case uuid":   func(m *Metadata) { m.ID = "7D3F2C1E-9A4B-4C2D-8E1F-0A1B2C3D4E5F" },
		"microseconds":      func(m *Metadata) { m.CreatedAt = "2026-08-01T12:00:00.123456Z" },
		"integer-like keys": func(m *Metadata) { m.Tags = Tags{{"7", "x"}, {"42", "y"}, {"type", "resource"}, {"007", "z"}} },
		"quoted tag values": func(m *Metadata) {
			m.Tags = Tags{{"type", "207333"}, {"a", "a:b"}, {"b", "true"}, {"c", "2026-01-01"}, {"d", ""}}
		},
		"quoted tag keys":    func(m *Metadata) { m.Tags = Tags{{"type", "x"}, {"a:b", "1"}, {"yes", "2"}, {"", "3"}, {"null", "4"}} },
		"all owner fields":   func(m *Metadata) { m.Owner.DefinitionHash = "abc" },
		"definitionHash num": func(m *Metadata) { m.Owner.DefinitionHash = "123" },
		"76-character tag":   func(m *Metadata) { m.Tags = Tags{{"type", strings.Repeat("v", 76)}} },
		"nil uuid":           func(m *Metadata) { m.ID = "00000000-0000-0000-0000-000000000000" },
		"decimal uuid":       func(m *Metadata) { m.ID = "12345678-1234-4234-8234-123456789012" },
		"max version":        func(m *Metadata) { m.Version = maxSafeInteger },
		"digit checksum":     func(m *Metadata) { m.Checksum = strings.Repeat("1", 64) },
	}
	bails := map[string]func(m *Metadata){
		"folded long name": func(m *Metadata) { m.Name = strings.Repeat("n", 79) },
		"folded long tag":  func(m *Metadata) { m.Tags = Tags{{"type", strings.Repeat("v", 77)}} },
		"emoji":            func(m *Metadata) { m.Name = "ok 😀" },
		"tab":              func(m *Metadata) { m.Tags = Tags{{"type", "a\tb"}} },
		"newline":          func(m *Metadata) { m.Tags = Tags{{"type", "a\nb"}} },
		"nbsp":             func(m *Metadata) { m.Name = "a\u00a0b" },
		"__proto__ tag":    func(m *Metadata) { m.Tags = Tags{{"type", "x"}, {"__proto__", "y"}} },
	}
	run := func(name string, mutate func(m *Metadata), want bool) {
		t.Run(name, func(t *testing.T) {
			m := exampleWorkflowStep()
			m.Owner = Owner{"h", "workflow-step", "ref", "b5e1d0c4-2f3a-4b6c-8d7e-9f0a1b2c3d4e",
				"c8a7f6e5-d4c3-4b2a-9180-7f6e5d4c3b2a", "wf", "job", "step", "src"}
			mutate(m)
			data, err := Encode(m)
			if err != nil {
				t.Fatal(err)
			}
			got, handled, ferr := fastDecode(data)
			if handled != want {
				t.Fatalf("handled = %v, want %v:\n%s", handled, want, data)
			}
			if !handled {
				return
			}
			checkSame(t, data, got, ferr)
			if ferr != nil {
				t.Fatalf("%v\n%s", ferr, data)
			}
			m.Tags = m.Tags.JSOrder()
			m.Lifetime = NormalizeLifetime(m.Lifetime)
			if !reflect.DeepEqual(got, m) {
				t.Errorf("got %+v\nwant %+v", got, m)
			}
		})
	}
	for name, mutate := range handled {
		run(name, mutate, true)
	}
	for name, mutate := range bails {
		run(name, mutate, false)
	}
}

// TestFastDecodeBailsOut feeds inputs outside the subset, or that the slow
// path refuses before validation, and checks the fast path leaves them.
func TestFastDecodeBailsOut(t *testing.T) {
	g := string(goldenBytes(t, "metadata-workflow-step.yaml"))
	edits := map[string][2]string{
		"comment":             {"size: 124", "size: 124 # bytes"},
		"comment line":        {"size: 124\n", "size: 124\n# c\n"},
		"double quotes":       {"name: result", `name: "result"`},
		"block scalar":        {"  job: scan", "  job: |-\n    scan"},
		"folded scalar":       {"name: result", "name: >-\n  result"},
		"flow map":            {"tags:\n  type: resource", "tags: {type: resource}\nx:\n  type: resource"},
		"anchor":              {"name: result", "name: &a result"},
		"tab":                 {"size: 124", "size:\t124"},
		"crlf":                {"size: 124\n", "size: 124\r\n"},
		"document start":      {"id:", "---\nid:"},
		"document end":        {"size: 124\n", "size: 124\n...\n"},
		"quoted key":          {"size: 124", "'size': 124"},
		"duplicate key":       {"size: 124", "size: 124\nsize: 124"},
		"duplicate tag":       {"  job: scan", "  job: scan\n  job: scan"},
		"unknown key":         {"size: 124", "size: 124\nfuture: x"},
		"unknown owner key":   {"  jobName: scan", "  jobName: scan\n  future: x"},
		"indent 4":            {"  job: scan", "    job: scan"},
		"indent 1":            {"  job: scan", " job: scan"},
		"continuation":        {"name: result", "name: result\n  more"},
		"unquoted date":       {"createdAt: '2026-08-01T12:05:09.007Z'", "createdAt: 2026-08-01"},
		"octal size":          {"size: 124", "size: 012"},
		"hex version":         {"version: 1", "version: 0x1"},
		"float version":       {"version: 1", "version: 1.0"},
		"number tag":          {"  job: scan", "  job: 123"},
		"null tag":            {"  job: scan", "  job: null"},
		"empty tag":           {"  job: scan", "  job:"},
		"yes tag":             {"  job: scan", "  job: yes"},
		"exponent":            {"  job: scan", "  job: 1e5"},
		"dot first":           {"  job: scan", "  job: .inf"},
		"empty lifecycle":     {"size: 124", "size: 124\nlifecycle: ''"},
		"empty workflowId":    {"  workflowName: nightly-scan", "  definitionHash: ''\n  workflowName: nightly-scan"},
		"missing createdAt":   {"createdAt: '2026-08-01T12:05:09.007Z'\n", ""},
		"missing ownerRef":    {"  ownerRef: 9e8d7c6b-5a49-4837-a625-1403f2e1d0c9\n", ""},
		"empty tags":          {"tags:\n  type: resource\n  specName: result\n  modelName: scan-shell\n  source: step-output\n  workflow: nightly-scan\n  workflowId: b5e1d0c4-2f3a-4b6c-8d7e-9f0a1b2c3d4e\n  workflowRunId: c8a7f6e5-d4c3-4b2a-9180-7f6e5d4c3b2a\n  job: scan\n  step: run-shell\n", "tags:\n"},
		"quoted gc number":    {"garbageCollection: 30d", "garbageCollection: ''"},
		"streaming True":      {"streaming: false", "streaming: False"},
		"tags out of order":   {"  job: scan", "  job: scan\n  '7': x"},
		"unterminated quote":  {"name: result", "name: 'result"},
		"trailing after '":    {"name: result", "name: 'result' x"},
		"trailing space":      {"name: result", "name: result "},
		"merge key":           {"  job: scan", "  <<: scan"},
		"proto key":           {"  job: scan", "  '__proto__': scan"},
		"dash value":          {"  job: scan", "  job: -scan"},
		"no trailing newline": {"checksum: 11f0be56e4128d6df51f2db29d89e18ff2afbbbf6ce9f203b3e884f04780d0fa\n", "checksum: 11f0be56e4128d6df51f2db29d89e18ff2afbbbf6ce9f203b3e884f04780d0fa"},
		"blank line":          {"size: 124\n", "size: 124\n\n"},
		"bom":                 {"id:", "\ufeffid:"},
		"over-long line":      {"  job: scan", "  job: " + strings.Repeat("s", 510)},
		"over-long key":       {"  job: scan", "  '" + strings.Repeat("k", 1030) + "': scan"}, // not YAML
	}
	for name, e := range edits {
		if !strings.Contains(g, e[0]) {
			t.Fatalf("%s: golden lacks %q", name, e[0])
		}
		data := []byte(strings.Replace(g, e[0], e[1], 1))
		if m, handled, err := fastDecode(data); handled {
			t.Errorf("%s: handled (%+v, %v):\n%s", name, m, err, data)
		}
	}
	for _, src := range []string{"", " ", "\n", "null\n", "id\n", "- a\n"} {
		if _, handled, _ := fastDecode([]byte(src)); handled {
			t.Errorf("%q handled", src)
		}
	}
}

// TestFastDecodeValidationErrors: inputs inside the subset that Validate
// refuses are answered by the fast path with the slow path's error.
func TestFastDecodeValidationErrors(t *testing.T) {
	g := string(goldenBytes(t, "metadata-workflow-step.yaml"))
	edits := map[string][2]string{
		"bad id":            {"id: 0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d", "id: not-a-uuid"},
		"empty name":        {"name: result", "name: ''"},
		"traversal":         {"name: result", "name: a..b"},
		"version zero":      {"version: 1", "version: 0"},
		"bad lifetime":      {"lifetime: infinite", "lifetime: forever"},
		"gc zero":           {"garbageCollection: 30d", "garbageCollection: 0"},
		"gc zero duration":  {"garbageCollection: 30d", "garbageCollection: 00d"},
		"gc quoted count":   {"garbageCollection: 30d", "garbageCollection: '10'"},
		"no type tag":       {"  type: resource\n", ""},
		"owner type":        {"ownerType: model-method", "ownerType: robot"},
		"owner workflowId":  {ownerWorkflowID, strings.Replace(ownerWorkflowID, "b5e1d0c4-2f3a-4b6c-8d7e-9f0a1b2c3d4e", "nope", 1)},
		"createdAt offset":  {"createdAt: '2026-08-01T12:05:09.007Z'", "createdAt: '2026-08-01T12:05:09.007+00:00'"},
		"createdAt day":     {"createdAt: '2026-08-01T12:05:09.007Z'", "createdAt: '2026-02-30T12:05:09.007Z'"},
		"lifecycle unknown": {"size: 124", "size: 124\nlifecycle: gone"},
	}
	for name, e := range edits {
		data := []byte(strings.Replace(g, e[0], e[1], 1))
		m, handled, err := fastDecode(data)
		if !handled || err == nil {
			t.Errorf("%s: handled %v, err %v", name, handled, err)
			continue
		}
		checkSame(t, data, m, err)
	}
}

// --- differential test over generated metadata ---

// trickyStrings are values that exercise the writer's quoting rules
// (swamp-format §2.4.1) and the reader's typing (swamp-format §2.4).
var trickyStrings = []string{
	"", "result", "207333", "0", "012", "09", "0o17", "0x1F", "0b101", "1e5", "1E5", "1_000", "-1", "+1",
	"1.5", "1.", ".5", ".inf", "-.inf", ".nan", "NaN", "1.2.3", "1:30", "~", "null", "Null", "NULL",
	"true", "True", "TRUE", "false", "yes", "No", "on", "OFF", "y", "n", "<<", "2026-01-01",
	"2026-01-01T00:00:00Z", "2026-1-1 1:00:00", "a:b", "ns:model", "http://x", "a #b", "a#b", "a, b",
	"[x]", "{x}", "-dash", "- dash", "?q", "x?", ":c", "&a", "*a", "!t", "|p", ">f", "'q'", `"d"`,
	"%p", "@at", "`b`", "a'b", "it's", "a@b", "a b", "a  b", " lead", "trail ", "  both  ", "日本語",
	"é", "ß", "ok 😀", "a\tb", "a\nb", "a\n", "\x01", "\x7f", "\u0085", "\u00a0", "\u2028", "\ufeff",
	"\ufffd", "C:\\x", "a\\b", "(x)", "$v", "^c", ";s", "=e", "~x", "<x", "a=b", "result-prod",
	"application/json", "step-output", "nightly-scan", "__proto__", ".hidden", "..", "a..b", "a/b",
	"-", "+", ".", "_", "_1", "1_", "e", "E5", "0e", "00", "0.0", "-0", "+.5", "1e+5", "1e5x", "3d",
	"30d", "1mo", "infinite", "workflow", "0h", "00w", "10y", "5m", "resource", "file",
}

// gen makes random records. tricky is the chance that a string is drawn
// from the tricky pools rather than the everyday names swamp writes.
type gen struct {
	r      *rand.Rand
	tricky float64
}

func (g gen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

func (g gen) uuid() string {
	const hex = "0123456789abcdef"
	b := []byte("xxxxxxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx")
	for i, c := range b {
		if c == 'x' {
			b[i] = hex[g.r.IntN(16)]
		}
	}
	switch g.r.IntN(20) {
	case 0:
		return strings.ToUpper(string(b))
	case 1:
		return "00000000-0000-0000-0000-000000000000"
	case 2:
		return "12345678-1234-4234-8234-123456789012" // all decimal digits
	case 3:
		return "0b345678-1234-4234-8234-123456789012"
	}
	return string(b)
}

// str returns a random string: a tricky one, a random mix, or a long one
// that the writer folds.
func (g gen) str() string {
	if g.r.Float64() >= g.tricky {
		return g.pick([]string{"result", "scan-shell", "run-shell", "hello-shell", "my.data_1", "v2",
			"resource", "modelName", "specName", "step-output", "x", "Data Set 3", "日本語"})
	}
	switch g.r.IntN(6) {
	case 0, 1:
		return g.pick(trickyStrings)
	case 2:
		const alpha = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./@+ :#'\"é日ß"
		runes := []rune(alpha)
		n := g.r.IntN(90)
		var b strings.Builder
		for range n {
			b.WriteRune(runes[g.r.IntN(len(runes))])
		}
		return b.String()
	case 3:
		return strings.Repeat(g.pick([]string{"n", "ab ", "日", "x-"}), 20+g.r.IntN(50))
	}
	return g.pick([]string{"result", "scan-shell", "run-shell", "hello-shell", "my.data_1", "v2"})
}

func (g gen) metadata() *Metadata {
	m := &Metadata{
		ID:          g.uuid(),
		Name:        g.str(),
		Version:     1 + g.r.Int64N(1000),
		ContentType: g.pick([]string{"application/json", "text/plain", "a:b", "x"}),
		Lifetime:    g.pick([]string{"infinite", "ephemeral", "job", "workflow", "1h", "0h", "30d", "1mo", "10y", "00w"}),
		CreatedAt:   g.pick([]string{"2026-08-01T12:00:00.000Z", "2028-02-29T23:59Z", "2026-08-01T12:00:00.123456Z", "2026-08-01T12:00:00Z"}),
	}
	switch g.r.IntN(10) {
	case 0:
		m.Version = maxSafeInteger
	case 1:
		m.Version = 1e14 + g.r.Int64N(1e15)
	}
	if g.r.IntN(2) == 0 {
		m.GarbageCollection.N = 1 + g.r.Int64N(100)
	} else {
		m.GarbageCollection.Duration = g.pick([]string{"30d", "1mo", "005m", "2w", "1y"})
	}
	m.Streaming = g.r.IntN(3) == 0
	m.Tags = Tags{{"type", g.pick([]string{"resource", "file", g.str()})}}
	for range g.r.IntN(10) {
		key := g.str()
		if g.r.IntN(4) == 0 {
			key = fmt.Sprint(g.r.IntN(100)) // array-index key
		}
		if _, dup := m.Tags.Get(key); !dup {
			m.Tags = append(m.Tags, Tag{key, g.str()})
		}
	}
	m.Tags = m.Tags.JSOrder()
	m.Owner.OwnerType = g.pick(OwnerTypes)
	m.Owner.OwnerRef = g.pick([]string{g.uuid(), g.str()})
	if m.Owner.OwnerRef == "" {
		m.Owner.OwnerRef = "ref"
	}
	opt := func(s *string, v func() string) {
		if g.r.IntN(2) == 0 {
			*s = v()
		}
	}
	opt(&m.Owner.DefinitionHash, g.str)
	opt(&m.Owner.WorkflowID, g.uuid)
	opt(&m.Owner.WorkflowRunID, g.uuid)
	opt(&m.Owner.WorkflowName, g.str)
	opt(&m.Owner.JobName, g.str)
	opt(&m.Owner.StepName, g.str)
	opt(&m.Owner.Source, g.str)
	if g.r.IntN(4) != 0 {
		size := g.r.Int64N(1 << 20)
		if g.r.IntN(10) == 0 {
			size = 0
		}
		m.Size = &size
		m.Checksum = "11f0be56e4128d6df51f2db29d89e18ff2afbbbf6ce9f203b3e884f04780d0fa"
	}
	if g.r.IntN(5) == 0 {
		m.Lifecycle = "deleted"
		opt(&m.RenamedTo, g.str)
	}
	return m
}

// mutate applies a random line-level edit to an encoded file, to reach
// inputs swamp does not write (errors, odd spellings, broken structure).
func (g gen) mutate(data []byte) []byte {
	lines := strings.SplitAfter(string(data), "\n")
	lines = lines[:len(lines)-1] // after the final "\n"
	i := g.r.IntN(len(lines))
	line := strings.TrimSuffix(lines[i], "\n")
	key, _, hasValue := strings.Cut(line, ": ")
	switch g.r.IntN(12) {
	case 0:
		lines = append(lines[:i], lines[i+1:]...)
	case 1:
		lines = append(lines[:i+1], lines[i:]...)
	case 2:
		j := g.r.IntN(len(lines))
		lines[i], lines[j] = lines[j], lines[i]
	case 3, 4, 5, 6:
		if hasValue {
			v := g.pick(trickyStrings)
			switch g.r.IntN(3) {
			case 0:
				v = "'" + strings.ReplaceAll(v, "'", "''") + "'"
			case 1:
				v = fmt.Sprint(g.r.IntN(20))
			}
			lines[i] = key + ": " + v + "\n"
		}
	case 7:
		lines[i] = g.pick([]string{" ", "  ", "    ", "'", "\t", "# c\n", "- "}) + lines[i]
	case 8:
		lines[i] = line + g.pick([]string{" ", " # c", "\r", ":", "'", " x"}) + "\n"
	case 9:
		lines = append(lines[:i], append([]string{g.pick([]string{
			"future: x\n", "  extra: y\n", "---\n", "\n", "  '42': answer\n", "  7: seven\n",
			"lifecycle: deleted\n", "renamedTo: x\n", "size: 1\n", "streaming: true\n",
		})}, lines[i:]...)...)
	case 10:
		if hasValue {
			lines[i] = "'" + key + "': " + line[len(key)+2:] + "\n"
		}
	case 11:
		pos := g.r.IntN(len(line) + 1)
		lines[i] = line[:pos] + g.pick([]string{"'", "''", ":", "#", " ", "0", "é", "\x00", "\xff"}) + line[pos:] + "\n"
	}
	return []byte(strings.Join(lines, ""))
}

func TestFastDecodeDifferential(t *testing.T) {
	n := 10000
	if testing.Short() {
		n = 2000
	}
	g := gen{r: rand.New(rand.NewPCG(1, 2))}
	var encoded, handledEncoded, mutated, handledMutated, handledErrors int
	var plainEncoded, plainHandled int // records without tricky strings
	for range n {
		level := g.r.IntN(4)
		g.tricky = []float64{0, 0.05, 0.2, 0.6}[level]
		m := g.metadata()
		data, err := Encode(m)
		if err != nil {
			continue // not a record swamp could hold
		}
		encoded++
		fm, handled, ferr := fastDecode(data)
		if level == 0 {
			plainEncoded++
			if handled {
				plainHandled++
			}
		}
		if handled {
			handledEncoded++
			checkSame(t, data, fm, ferr)
			if ferr != nil {
				t.Fatalf("an encoded record fails: %v\n%s", ferr, data)
			}
		}
		for range 3 {
			data = g.mutate(data)
			mutated++
			if fm, handled, ferr := fastDecode(data); handled {
				handledMutated++
				if ferr != nil {
					handledErrors++
				}
				checkSame(t, data, fm, ferr)
			}
		}
	}
	t.Logf("encoded %d records, fast path handled %d (%d of %d without tricky strings); %d mutations, handled %d (%d of them validation errors)",
		encoded, handledEncoded, plainHandled, plainEncoded, mutated, handledMutated, handledErrors)
	if handledEncoded < encoded/4 || plainHandled < plainEncoded*3/4 || handledMutated == 0 || handledErrors == 0 {
		t.Errorf("fast path handled too few inputs to be meaningful")
	}
}

// TestFastDecodeByteMutations is the fuzz target's check over a fixed set of
// random byte-level edits of the golden files (a replaced, deleted, inserted
// or duplicated run of bytes), so that it runs on every go test.
func TestFastDecodeByteMutations(t *testing.T) {
	n := 30000
	if testing.Short() {
		n = 3000
	}
	r := rand.New(rand.NewPCG(5, 6))
	var seeds [][]byte
	for _, name := range goldenFiles {
		seeds = append(seeds, goldenBytes(t, name))
	}
	alphabet := []byte("azAZ09 :'\"#-_.~<>+eEx,[]{}&*!|%@\n\t\r\x00\x7f\xff\xc2\x85\xc3\xa9")
	handled := 0
	for range n {
		d := append([]byte(nil), seeds[r.IntN(len(seeds))]...)
		for range 1 + r.IntN(3) {
			i := r.IntN(len(d))
			switch r.IntN(4) {
			case 0:
				d[i] = alphabet[r.IntN(len(alphabet))]
			case 1:
				d = append(d[:i], d[i+1:]...)
			case 2:
				d = append(d[:i], append([]byte{alphabet[r.IntN(len(alphabet))]}, d[i:]...)...)
			case 3:
				if j := r.IntN(len(d)); j > i && j-i < 40 {
					d = append(d[:j], append(append([]byte(nil), d[i:j]...), d[j:]...)...)
				}
			}
		}
		if m, ok, err := fastDecode(d); ok {
			handled++
			checkSame(t, d, m, err)
		}
	}
	t.Logf("%d byte-mutated inputs, fast path handled %d", n, handled)
}

func FuzzFastDecode(f *testing.F) {
	for _, name := range goldenFiles {
		g := goldenBytes(f, name)
		f.Add(g)
		s := string(g)
		for _, e := range [][2]string{
			{"name: result", "name: '207333'"},
			{"name: result", "name: 'it''s'"},
			{"  job: scan", "  '42': x\n  job: ''"},
			{"  job: scan", "  'a:b': 'true'"},
			{"  type: resource", "  '7': '2026-01-01'\n  type: resource"},
			{"version: 1", "version: 0"},
			{"version: ", "version: 0"}, // leading zero: octal
			{"size: 124", "size: 124\nlifecycle: deleted\nrenamedTo: x"},
			{"lifetime: infinite", "lifetime: 00w"},
			{"streaming: false", "streaming: true"},
			{"name: result", "name: 日本語"},
			{"createdAt: '2026-08-01T12:0", "createdAt: '2026-02-29T12:0"},
		} {
			if strings.Contains(s, e[0]) {
				f.Add([]byte(strings.Replace(s, e[0], e[1], 1)))
			}
		}
	}
	g := gen{r: rand.New(rand.NewPCG(3, 4)), tricky: 0.2}
	for range 8 {
		if data, err := Encode(g.metadata()); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, handled, err := fastDecode(data)
		if handled {
			checkSame(t, data, m, err)
		}
	})
}

// BenchmarkDecode compares the general parser (slow) with Decode, which
// takes the fast path on these files; the fast sub-benchmark reports the
// speedup over the slow one as x-speedup.
func BenchmarkDecode(b *testing.B) {
	for _, c := range []struct{ name, file string }{
		{"A", "metadata-model-method.yaml"},
		{"B", "metadata-workflow-step.yaml"},
	} {
		data := goldenBytes(b, c.file)
		if _, handled, err := fastDecode(data); !handled || err != nil {
			b.Fatalf("%s: fast path did not handle it (%v)", c.file, err)
		}
		var slowNs float64
		b.Run(c.name+"/slow", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := decodeSlow(data); err != nil {
					b.Fatal(err)
				}
			}
			slowNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		})
		b.Run(c.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Decode(data); err != nil {
					b.Fatal(err)
				}
			}
			if fastNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N); slowNs > 0 && fastNs > 0 {
				b.ReportMetric(slowNs/fastNs, "x-speedup")
			}
		})
		// The share of the fast path spent in Validate (regexps included).
		m, _ := Decode(data)
		b.Run(c.name+"/validate", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := Validate(m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
