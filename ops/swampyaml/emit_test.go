package swampyaml

import (
	"math"
	"strings"
	"testing"
)

// marshalValue writes {k: value} and returns what follows "k: ".
func marshalValue(t *testing.T, value *Node, style Style) string {
	t.Helper()
	out, err := Marshal(Map(Pair{Key: "k", Value: value}), style)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	s := string(out)
	if !strings.HasPrefix(s, "k:") || !strings.HasSuffix(s, "\n") {
		t.Fatalf("unexpected document %q", s)
	}
	return strings.TrimPrefix(strings.TrimSuffix(s, "\n"), "k: ")
}

// TestScalarQuoting covers every example of swamp-format §2.4.1 (rules
// 1–6, the plain list, double quotes) in both styles. want is the text after
// "k: " for StyleMetadata; wantConfig the same for StyleConfig ("" = same).
func TestScalarQuoting(t *testing.T) {
	cases := []struct {
		name, in, want, wantConfig string
	}{
		// Rule 1: empty string, '' in both styles.
		{"rule1 empty", "", "''", "''"},
		// Rule 2: YAML 1.1 booleans, single-quoted in both styles.
		{"rule2 y", "y", "'y'", "'y'"},
		{"rule2 Y", "Y", "'Y'", "'Y'"},
		{"rule2 yes", "yes", "'yes'", "'yes'"},
		{"rule2 Yes", "Yes", "'Yes'", "'Yes'"},
		{"rule2 YES", "YES", "'YES'", "'YES'"},
		{"rule2 n", "n", "'n'", "'n'"},
		{"rule2 N", "N", "'N'", "'N'"},
		{"rule2 no", "no", "'no'", "'no'"},
		{"rule2 No", "No", "'No'", "'No'"},
		{"rule2 NO", "NO", "'NO'", "'NO'"},
		{"rule2 on", "on", "'on'", "'on'"},
		{"rule2 On", "On", "'On'", "'On'"},
		{"rule2 ON", "ON", "'ON'", "'ON'"},
		{"rule2 off", "off", "'off'", "'off'"},
		{"rule2 Off", "Off", "'Off'", "'Off'"},
		{"rule2 OFF", "OFF", "'OFF'", "'OFF'"},
		{"rule2 not a word", "yES", "yES", ""},
		// Rule 3: would resolve to another type.
		{"null ~", "~", "'~'", `"~"`},
		{"null", "null", "'null'", `"null"`},
		{"Null", "Null", "'Null'", `"Null"`},
		{"NULL", "NULL", "'NULL'", `"NULL"`},
		{"nUll is a string", "nUll", "nUll", ""},
		{"bool true", "true", "'true'", `"true"`},
		{"bool True", "True", "'True'", `"True"`},
		{"bool TRUE", "TRUE", "'TRUE'", `"TRUE"`},
		{"bool false", "false", "'false'", `"false"`},
		{"bool False", "False", "'False'", `"False"`},
		{"bool FALSE", "FALSE", "'FALSE'", `"FALSE"`},
		{"int numeric name", "207333", "'207333'", `"207333"`},
		{"int hex", "0x1F", "'0x1F'", `"0x1F"`},
		{"int bin", "0b101", "'0b101'", `"0b101"`},
		{"int octal", "012", "'012'", `"012"`},
		{"int 00", "00", "'00'", `"00"`},
		{"int 0", "0", "'0'", `"0"`},
		{"int 123", "123", "'123'", `"123"`},
		{"int -1", "-1", "'-1'", `"-1"`},
		{"int +1", "+1", "'+1'", `"+1"`},
		{"int underscore", "1_000", "'1_000'", `"1_000"`},
		{"float 1.5", "1.5", "'1.5'", `"1.5"`},
		{"float 1.", "1.", "'1.'", `"1."`},
		{"float 1e5", "1e5", "'1e5'", `"1e5"`},
		{"float 1E5", "1E5", "'1E5'", `"1E5"`},
		{"float .5", ".5", "'.5'", `".5"`},
		{"float .inf", ".inf", "'.inf'", `".inf"`},
		{"float .Inf", ".Inf", "'.Inf'", `".Inf"`},
		{"float -.INF", "-.INF", "'-.INF'", `"-.INF"`},
		{"float .nan", ".nan", "'.nan'", `".nan"`},
		{"float .NaN", ".NaN", "'.NaN'", `".NaN"`},
		{"float .NAN", ".NAN", "'.NAN'", `".NAN"`},
		{"float 1_000.5", "1_000.5", "'1_000.5'", `"1_000.5"`},
		{"timestamp date", "2026-01-01", "'2026-01-01'", `"2026-01-01"`},
		{"timestamp iso", "2026-08-01T12:00:00.000Z", "'2026-08-01T12:00:00.000Z'", `"2026-08-01T12:00:00.000Z"`},
		{"timestamp lower t", "2026-8-1t1:02:03", "'2026-8-1t1:02:03'", `"2026-8-1t1:02:03"`},
		{"timestamp blanks and zone", "2026-08-01 12:00:00 +02:00", "'2026-08-01 12:00:00 +02:00'", `"2026-08-01 12:00:00 +02:00"`},
		{"merge", "<<", "'<<'", `"<<"`},
		// Rule 4: first character.
		{"first -", "-x", "'-x'", `"-x"`},
		{"first - alone", "-", "'-'", `"-"`},
		{"first ?", "?x", "'?x'", `"?x"`},
		{"first :", ":x", "':x'", `":x"`},
		{"first ,", ",x", "',x'", `",x"`},
		{"first [", "[x", "'[x'", `"[x"`},
		{"first ]", "]x", "']x'", `"]x"`},
		{"first {", "{x", "'{x'", `"{x"`},
		{"first }", "}x", "'}x'", `"}x"`},
		{"first #", "#x", "'#x'", `"#x"`},
		{"first &", "&x", "'&x'", `"&x"`},
		{"first *", "*x", "'*x'", `"*x"`},
		{"first !", "!x", "'!x'", `"!x"`},
		{"first |", "|x", "'|x'", `"|x"`},
		{"first >", ">x", "'>x'", `">x"`},
		{"first '", "'x", "'''x'", `"'x"`},
		{"first \"", `"x`, `'"x'`, `"\"x"`},
		{"first %", "%x", "'%x'", `"%x"`},
		{"first @", "@x", "'@x'", `"@x"`},
		{"first backtick", "`x", "'`x'", "\"`x\""},
		{"first space", " x", "' x'", `" x"`},
		// Rule 5: anywhere.
		{"colon a:b", "a:b", "'a:b'", `"a:b"`},
		{"colon ns:model", "ns:model", "'ns:model'", `"ns:model"`},
		{"colon url", "http://x", "'http://x'", `"http://x"`},
		{"hash a #b", "a #b", "'a #b'", `"a #b"`},
		{"hash a#b", "a#b", "'a#b'", `"a#b"`},
		{"comma", "a,b", "'a,b'", `"a,b"`},
		{"bracket [", "a[b", "'a[b'", `"a[b"`},
		{"bracket ]", "a]b", "'a]b'", `"a]b"`},
		{"brace {", "a{b", "'a{b'", `"a{b"`},
		{"brace }", "a}b", "'a}b'", `"a}b"`},
		{"windows path", `C:\dir`, `'C:\dir'`, `"C:\\dir"`},
		// Rule 6: trailing whitespace.
		{"trailing space", "x ", "'x '", `"x "`},
		// Single quotes double inner quotes.
		{"quoted q", "'q'", "'''q'''", `"'q'"`},
		{"quote inside needing quotes", "it's: x", "'it''s: x'", `"it's: x"`},
		{"double quote inside", `a"b:`, `'a"b:'`, `"a\"b:"`},
		// Plain, not quoted.
		{"plain 09", "09", "09", ""},
		{"plain 0o17", "0o17", "0o17", ""},
		{"plain 0X1F", "0X1F", "0X1F", ""},
		{"plain NaN", "NaN", "NaN", ""},
		{"plain Infinity", "Infinity", "Infinity", ""},
		{"plain 1.2.3", "1.2.3", "1.2.3", ""},
		{"plain x?", "x?", "x?", ""},
		{"plain a'b", "a'b", "a'b", ""},
		{"plain a@b", "a@b", "a@b", ""},
		{"plain a\"b", `a"b`, `a"b`, ""},
		{"plain result-prod", "result-prod", "result-prod", ""},
		{"plain mime", "application/json", "application/json", ""},
		{"plain step-output", "step-output", "step-output", ""},
		{"plain 日本語", "日本語", "日本語", ""},
		{"plain inner space", "hello world", "hello world", ""},
		{"plain uuid", "5b0c9e2a-7f4d-4e1b-9a3c-2d8e6f1a0b7c", "5b0c9e2a-7f4d-4e1b-9a3c-2d8e6f1a0b7c", ""},
		{"plain uuid digits and e", "1234e567-0000-4000-8000-000000000000", "1234e567-0000-4000-8000-000000000000", ""},
		{"plain version", "20261022.021804.0-sha.983e2929", "20261022.021804.0-sha.983e2929", ""},
		{"plain durations", "30d", "30d", ""},
		{"plain 1mo", "1mo", "1mo", ""},
		{"plain tilde inside", "a~", "a~", ""},
		{"plain date-like 2026-1-1", "2026-1-1", "2026-1-1", ""},
		{"plain trailing underscore", "1_", "1_", ""},
		{"plain 0x", "0x", "0x", ""},
		{"plain -.5", "a-.5", "a-.5", ""},
		{"plain 01.5", "01.5", "01.5", ""},
		{"plain env path", "$HOME/shared", "$HOME/shared", ""},
		{"plain glob", "telemetry/**", "telemetry/**", ""},
		{"plain emoji-free unicode", "café", "café", ""},
		{"plain U+00A1", "¡hola", "¡hola", ""},
		// Double quotes for unprintable characters (swamp-format §2.4.1).
		{"emoji", "ok 😀", `"ok \U0001F600"`, ""},
		{"emoji alone", "😀", `"\U0001F600"`, ""},
		{"tab", "a\tb", `"a\tb"`, ""},
		{"trailing tab", "a\t", `"a\t"`, ""},
		{"CR", "a\rb", `"a\rb"`, ""},
		{"CRLF", "a\r\nb", `"a\r\nb"`, ""},
		{"NUL", "a\x00b", `"a\0b"`, ""},
		{"bell", "\a", `"\a"`, ""},
		{"backspace", "\b", `"\b"`, ""},
		{"vtab", "\v", `"\v"`, ""},
		{"formfeed", "\f", `"\f"`, ""},
		{"escape", "\x1b[0m", `"\e[0m"`, ""},
		{"control 01", "\x01", `"\x01"`, ""},
		{"DEL", "a\x7f", `"a\x7F"`, ""},
		{"C1 0x80", "\u0080", `"\x80"`, ""},
		{"NEL", "a\u0085b", `"a\Nb"`, ""},
		{"NBSP", "a\u00a0b", `"a\_b"`, ""},
		{"LS", "a\u2028b", `"a\Lb"`, ""},
		{"PS", "a\u2029b", `"a\Pb"`, ""},
		{"BOM", "\ufeffx", `"\uFEFFx"`, ""},
		{"FFFE", "\ufffe", `"\uFFFE"`, ""},
		{"escapes quote and backslash", "a\"b\\c\t", `"a\"b\\c\t"`, ""},
		{"emoji with newline", "a😀\nb", `"a\U0001F600\nb"`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := marshalValue(t, String(c.in), StyleMetadata); got != c.want {
				t.Errorf("StyleMetadata %q: got %s, want %s", c.in, got, c.want)
			}
			want := c.wantConfig
			if want == "" {
				want = c.want
			}
			if got := marshalValue(t, String(c.in), StyleConfig); got != want {
				t.Errorf("StyleConfig %q: got %s, want %s", c.in, got, want)
			}
		})
	}
}

func TestLineWidthFolding(t *testing.T) {
	name78 := strings.Repeat("n", 78)
	name79 := strings.Repeat("n", 79)
	cases := []struct {
		name string
		doc  *Node
		want string
	}{
		{"78 chars top level stays plain", Map(Pair{"name", String(name78)}),
			"name: " + name78 + "\n"},
		{"79 chars top level becomes >-", Map(Pair{"name", String(name79)}),
			"name: >-\n  " + name79 + "\n"},
		{"79 chars that need quotes still fold", Map(Pair{"name", String("a:" + name78[1:])}),
			"name: >-\n  a:" + name78[1:] + "\n"},
		{"76 chars in tags stays plain", Map(Pair{"tags", Map(Pair{"t", String(strings.Repeat("v", 76))})}),
			"tags:\n  t: " + strings.Repeat("v", 76) + "\n"},
		{"77 chars in tags becomes >-", Map(Pair{"tags", Map(Pair{"t", String(strings.Repeat("v", 77))})}),
			"tags:\n  t: >-\n    " + strings.Repeat("v", 77) + "\n"},
		{"long line starting with space is quoted not folded", Map(Pair{"k", String(" " + name79)}),
			"k: ' " + name79 + "'\n"},
		{"folded at a space", Map(Pair{"k", String(strings.Repeat("a", 50) + " " + strings.Repeat("b", 50))}),
			"k: >-\n  " + strings.Repeat("a", 50) + "\n  " + strings.Repeat("b", 50) + "\n"},
		{"greedy folding of words", Map(Pair{"k", String(strings.Repeat("word ", 30) + "end")}),
			"k: >-\n  " + strings.TrimSpace(strings.Repeat("word ", 15)) + "\n  " +
				strings.TrimSpace(strings.Repeat("word ", 15)) + " end\n"},
		{"double spaces are not break points", Map(Pair{"k", String(strings.Repeat("a", 60) + "  " + strings.Repeat("b", 30))}),
			"k: >-\n  " + strings.Repeat("a", 60) + " \n  " + strings.Repeat("b", 30) + "\n"},
		{"long key never folds", Map(Pair{name79 + "x", String("v")}),
			name79 + "x: v\n"},
		{"non-ASCII counted in code units", Map(Pair{"k", String(strings.Repeat("é", 78))}),
			"k: " + strings.Repeat("é", 78) + "\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := Marshal(c.doc, StyleMetadata)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != c.want {
				t.Errorf("got\n%q\nwant\n%q", out, c.want)
			}
		})
	}
}

func TestBlockScalars(t *testing.T) {
	long := strings.Repeat("x", 50) + " " + strings.Repeat("y", 50)
	cases := []struct {
		name, in, want string
	}{
		{"strip", "a\nb", "k: |-\n  a\n  b\n"},
		{"clip", "a\nb\n", "k: |\n  a\n  b\n"},
		{"keep", "a\nb\n\n", "k: |+\n  a\n  b\n\n"},
		{"only newline", "\n", "k: |+\n\n"},
		{"empty line inside", "a\n\nb", "k: |-\n  a\n\n  b\n"},
		{"leading space needs indicator", " a\nb", "k: |2-\n   a\n  b\n"},
		{"leading newline then space", "\n a", "k: |2-\n\n   a\n"},
		{"quotes and colons are fine in blocks", "a: 'b'\n# c", "k: |-\n  a: 'b'\n  # c\n"},
		{"trailing spaces kept", "a \nb ", "k: |-\n  a \n  b \n"},
		{"long line folds", long + "\nshort", "k: >-\n  " + strings.Repeat("x", 50) + "\n  " + strings.Repeat("y", 50) + "\n\n  short\n"},
		{"long more-indented line does not fold", " " + long + "\nb", "k: |2-\n   " + long + "\n  b\n"},
		{"folded clip", long + "\n", "k: >\n  " + strings.Repeat("x", 50) + "\n  " + strings.Repeat("y", 50) + "\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, st := range []Style{StyleMetadata, StyleConfig} {
				out, err := Marshal(Map(Pair{"k", String(c.in)}), st)
				if err != nil {
					t.Fatal(err)
				}
				if string(out) != c.want {
					t.Errorf("style %d: got\n%q\nwant\n%q", st, out, c.want)
				}
			}
		})
	}
}

func TestKeys(t *testing.T) {
	cases := []struct {
		key, want, wantConfig string
	}{
		{"123", "'123': v", `"123": v`},
		{"a:b", "'a:b': v", `"a:b": v`},
		{"yes", "'yes': v", "'yes': v"},
		{"", "'': v", "'': v"},
		{"type", "type: v", "type: v"},
		{"a\nb", `"a\nb": v`, `"a\nb": v`},
		{"k 😀", `"k \U0001F600": v`, `"k \U0001F600": v`},
	}
	for _, c := range cases {
		out, err := Marshal(Map(Pair{c.key, String("v")}), StyleMetadata)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != c.want+"\n" {
			t.Errorf("key %q: got %q, want %q", c.key, out, c.want)
		}
		out, err = Marshal(Map(Pair{c.key, String("v")}), StyleConfig)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != c.wantConfig+"\n" {
			t.Errorf("config key %q: got %q, want %q", c.key, out, c.wantConfig)
		}
	}
	// A key longer than 1024 code units becomes an explicit pair.
	long := strings.Repeat("k", 1025)
	out, err := Marshal(Map(Pair{"a", Map(Pair{long, String("v")})}), StyleMetadata)
	if err != nil {
		t.Fatal(err)
	}
	if want := "a:\n  ? " + long + "\n  : v\n"; string(out) != want {
		t.Errorf("explicit pair: got %q", out)
	}
}

func TestStructure(t *testing.T) {
	doc := Map(
		Pair{"version", Int(3)},
		Pair{"neg", Int(-5)},
		Pair{"ratio", Number(1.5)},
		Pair{"big", Number(1e21)},
		Pair{"tiny", Number(5e-7)},
		Pair{"tiny2", Number(1.5e-7)},
		Pair{"nan", Number(math.NaN())},
		Pair{"inf", Number(math.Inf(-1))},
		Pair{"negzero", Number(math.Copysign(0, -1))},
		Pair{"on", Bool(true)},
		Pair{"off", Bool(false)},
		Pair{"nothing", Null()},
		Pair{"emptyMap", Map()},
		Pair{"emptySeq", Seq()},
		Pair{"tools", Seq(String("claude"), String("yes"))},
		Pair{"items", Seq(
			Map(Pair{"a", Int(1)}, Pair{"b", Map(Pair{"c", String("d")})}),
			Seq(String("x"), String("y")),
			String("multi\nline"),
		)},
		Pair{"nested", Map(Pair{"deeper", Map(Pair{"deepest", String("v")})})},
	)
	want := `version: 3
neg: -5
ratio: 1.5
big: 1e+21
tiny: 5.e-7
tiny2: 1.5e-7
nan: .nan
inf: -.inf
negzero: -0.0
'on': true
'off': false
nothing: null
emptyMap: {}
emptySeq: []
tools:
  - claude
  - 'yes'
items:
  - a: 1
    b:
      c: d
  - - x
    - 'y'
  - |-
    multi
    line
nested:
  deeper:
    deepest: v
`
	out, err := Marshal(doc, StyleMetadata)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	if out, _ := Marshal(Map(), StyleMetadata); string(out) != "{}\n" {
		t.Errorf("empty document: %q", out)
	}
	if _, err := Marshal(Map(Pair{"k", String("\xff")}), StyleMetadata); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
	if _, err := Marshal(Map(Pair{"k", &Node{Kind: TimestampKind}}), StyleMetadata); err == nil {
		t.Error("timestamp node accepted")
	}
}

func TestJSNumberString(t *testing.T) {
	cases := []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1, "1"},
		{-1, "-1"},
		{0.1, "0.1"},
		{1.5, "1.5"},
		{123.456, "123.456"},
		{1e20, "100000000000000000000"},
		{1e21, "1e+21"},
		{1.5e21, "1.5e+21"},
		{123456789012345680000, "123456789012345680000"},
		{0.000001, "0.000001"},
		{1e-7, "1e-7"},
		{1.23e-18, "1.23e-18"},
		{9007199254740993, "9007199254740992"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{5e-324, "5e-324"},
		{math.NaN(), "NaN"},
		{math.Inf(1), "Infinity"},
		{math.Inf(-1), "-Infinity"},
	}
	for _, c := range cases {
		if got := JSNumberString(c.in); got != c.want {
			t.Errorf("JSNumberString(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestJSOrder(t *testing.T) {
	pairs := []Pair{{"type", nil}, {"42", nil}, {"b", nil}, {"7", nil}, {"007", nil}, {"4294967294", nil}, {"4294967295", nil}, {"-1", nil}}
	var got []string
	for _, p := range JSOrder(pairs) {
		got = append(got, p.Key)
	}
	want := "7,42,4294967294,type,b,007,4294967295,-1"
	if strings.Join(got, ",") != want {
		t.Errorf("JSOrder = %v, want %s", got, want)
	}
	n := Map(Pair{"type", String("x")})
	n.Set("5", String("y"))
	n.Set("type", String("z"))
	if n.Pairs[0].Key != "5" || n.Pairs[1].Value.Str != "z" {
		t.Errorf("Set: %+v", n.Pairs)
	}
	if !n.Delete("5") || n.Delete("5") || len(n.Pairs) != 1 {
		t.Errorf("Delete: %+v", n.Pairs)
	}
}
