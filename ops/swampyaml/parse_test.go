package swampyaml

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseScalarTyping(t *testing.T) {
	type want struct {
		kind Kind
		str  string
		num  float64
		b    bool
		time string
	}
	cases := []struct {
		src  string
		want want
	}{
		{"012", want{kind: NumberKind, num: 10}}, // leading-zero octal (swamp-format §2.4)
		{"09", want{kind: StringKind, str: "09"}},
		{"0o17", want{kind: StringKind, str: "0o17"}},
		{"0x1F", want{kind: NumberKind, num: 31}},
		{"-0x1F", want{kind: NumberKind, num: -31}},
		{"0b101", want{kind: NumberKind, num: 5}},
		{"1_000", want{kind: NumberKind, num: 1000}},
		{"1:30", want{kind: NumberKind, num: 90}},
		{"207333", want{kind: NumberKind, num: 207333}},
		{"+12", want{kind: NumberKind, num: 12}},
		{"1e3", want{kind: NumberKind, num: 1000}},
		{"1.5", want{kind: NumberKind, num: 1.5}},
		{".5", want{kind: NumberKind, num: 0.5}},
		{"1.", want{kind: NumberKind, num: 1}},
		{"-.inf", want{kind: NumberKind, num: math.Inf(-1)}},
		{"12345678901234567890", want{kind: NumberKind, num: 12345678901234567890}},
		{"NaN", want{kind: StringKind, str: "NaN"}},
		{"yes", want{kind: StringKind, str: "yes"}}, // YAML 1.2 core: a string
		{"on", want{kind: StringKind, str: "on"}},
		{"True", want{kind: BoolKind, b: true}},
		{"FALSE", want{kind: BoolKind, b: false}},
		{"~", want{kind: NullKind}},
		{"", want{kind: NullKind}},
		{"Null", want{kind: NullKind}},
		{"<<", want{kind: StringKind, str: "<<"}},
		{"'012'", want{kind: StringKind, str: "012"}},
		{`"true"`, want{kind: StringKind, str: "true"}},
		{"!!str 12", want{kind: StringKind, str: "12"}},
		{"!!int 0x10", want{kind: NumberKind, num: 16}},
		{"2026-01-01", want{kind: TimestampKind, time: "2026-01-01T00:00:00.000Z"}},
		{"2026-08-01T12:00:00.123456Z", want{kind: TimestampKind, time: "2026-08-01T12:00:00.123Z"}},
		{"2026-08-01 12:00:00 +02:00", want{kind: TimestampKind, time: "2026-08-01T10:00:00.000Z"}},
		{"2026-8-1t1:02:03.5-01", want{kind: TimestampKind, time: "2026-08-01T02:02:03.500Z"}},
		{"0050-01-01", want{kind: TimestampKind, time: "1950-01-01T00:00:00.000Z"}}, // Date.UTC's 0–99 quirk
		{"2026-13-01", want{kind: TimestampKind, time: "2027-01-01T00:00:00.000Z"}},
		{"'2026-01-01'", want{kind: StringKind, str: "2026-01-01"}},
		{"|-\n  a\n  b", want{kind: StringKind, str: "a\nb"}},
		{">-\n  a\n  b", want{kind: StringKind, str: "a b"}},
		{`"ok \U0001F600"`, want{kind: StringKind, str: "ok 😀"}},
	}
	for _, c := range cases {
		n, err := Parse([]byte("v: " + c.src + "\n"))
		if err != nil {
			t.Errorf("%q: %v", c.src, err)
			continue
		}
		v, _ := n.Get("v")
		ok := v.Kind == c.want.kind
		switch c.want.kind {
		case StringKind:
			ok = ok && v.Str == c.want.str
		case NumberKind:
			ok = ok && v.Num == c.want.num
		case BoolKind:
			ok = ok && v.Bool == c.want.b
		case TimestampKind:
			ok = ok && ISOString(v.Time) == c.want.time
		}
		if !ok {
			t.Errorf("%q: got %+v (iso %s), want %+v", c.src, *v, ISOString(v.Time), c.want)
		}
		if c.src == "012" && v.Raw != "012" {
			t.Errorf("%q: Raw = %q, want the text as written", c.src, v.Raw)
		}
	}
}

func TestParseStructure(t *testing.T) {
	src := `b: 1
2: two
a: 3
1: one
0x10: hex
true: t
~: n
list: [x, 'y', 3]
base: &b {x: 1, y: 2}
merged:
  <<: *b
  y: 3
  z: 4
multi:
  <<: [{p: 1}, {p: 2, q: 2}]
alias: *b
`
	n, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range n.Pairs {
		keys = append(keys, p.Key)
	}
	if got, want := strings.Join(keys, ","), "1,2,16,b,a,true,null,list,base,merged,multi,alias"; got != want {
		t.Errorf("keys %s, want %s", got, want)
	}
	merged, _ := n.Get("merged")
	out, err := Marshal(merged, StyleMetadata)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "x: 1\n'y': 3\nz: 4\n" { // y is a YAML 1.1 boolean word
		t.Errorf("merge: %q", out)
	}
	multi, _ := n.Get("multi")
	if out, _ := Marshal(multi, StyleMetadata); string(out) != "p: 1\nq: 2\n" {
		t.Errorf("merge list: %q", out)
	}
	alias, _ := n.Get("alias")
	if x, _ := alias.Get("x"); x == nil || x.Num != 1 {
		t.Errorf("alias: %+v", alias)
	}
	list, _ := n.Get("list")
	if len(list.Items) != 3 || list.Items[1].Str != "y" || list.Items[2].Num != 3 {
		t.Errorf("list: %+v", list)
	}
}

func TestParseErrors(t *testing.T) {
	cases := map[string]string{
		"duplicate key":        "a: 1\na: 2\n",
		"duplicate after cast": "1: a\n'1': b\n",
		"two documents":        "a: 1\n---\nb: 2\n",
		"syntax":               "a: [1, 2\n",
		"unknown tag":          "a: !custom x\n",
		"bad explicit int":     "a: !!int abc\n",
		"complex key":          "? [a, b]\n: c\n",
		"timestamp key":        "2026-01-01: x\n",
		"proto key":            "__proto__: x\n",
		"merge of scalar":      "a:\n  <<: 1\n",
		"binary":               "a: !!binary aGk=\n",
	}
	for name, src := range cases {
		if _, err := Parse([]byte(src)); err == nil {
			t.Errorf("%s: no error for %q", name, src)
		}
	}
	if _, err := Parse([]byte(cases["two documents"])); !errors.Is(err, ErrMultipleDocuments) {
		t.Errorf("two documents: %v, want ErrMultipleDocuments", err)
	}
	if _, err := Parse([]byte("a: 1\nb: 2\na: 3\n")); err == nil || !strings.Contains(err.Error(), `line 3: mapping key "a" already defined at line 1`) {
		t.Errorf("duplicate key: %v", err)
	}
	for _, src := range []string{"", "   \n", "# only a comment\n"} {
		n, err := Parse([]byte(src))
		if err != nil || n.Kind != NullKind {
			t.Errorf("%q: got %+v, %v; want null", src, n, err)
		}
	}
}

func TestISOString(t *testing.T) {
	cases := map[string]time.Time{
		"2026-08-01T12:05:09.007Z":    time.Date(2026, 8, 1, 12, 5, 9, 7_999_999, time.UTC),
		"0000-01-01T00:00:00.000Z":    time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		"-000001-12-31T23:00:00.000Z": time.Date(-1, 12, 31, 23, 0, 0, 0, time.UTC),
		"+010000-01-01T00:00:00.000Z": time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	for want, in := range cases {
		if got := ISOString(in); got != want {
			t.Errorf("ISOString(%v) = %s, want %s", in, got, want)
		}
	}
}
