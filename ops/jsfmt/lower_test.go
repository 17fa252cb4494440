package jsfmt

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

// toLowerTable holds tricky strings and what
// deno eval 'console.log(JSON.stringify(s.toLowerCase()))' printed for each
// (Deno 2.9.6, V8 15.0, /opt/realswamp/bin/deno).
var toLowerTable = []struct{ in, want string }{
	{"AWS::EC2::VPC", "aws::ec2::vpc"},
	{"\u0130", "i\u0307"},
	{"\u0130stanbul", "i\u0307stanbul"},
	{"I\u0130\u0131", "ii\u0307\u0131"},
	{"\u03a3\u0391\u03a3", "\u03c3\u03b1\u03c2"},
	{"\u039f\u0394\u039f\u03a3", "\u03bf\u03b4\u03bf\u03c2"},
	{"\u039f\u0394\u039f\u03a3 \u039f\u0394\u039f\u03a3", "\u03bf\u03b4\u03bf\u03c2 \u03bf\u03b4\u03bf\u03c2"},
	{"\u03a3", "\u03c3"},
	{"\u0391\u03a3.", "\u03b1\u03c2."},
	{"\u0391\u03a3'", "\u03b1\u03c2'"},
	{"\u0391'\u03a3", "\u03b1'\u03c2"},
	{"\u0391\u03a3.\u0392", "\u03b1\u03c3.\u03b2"},
	{"\u0391\u03a3\u0301", "\u03b1\u03c2\u0301"},
	{"\u0391\u0301\u03a3", "\u03b1\u0301\u03c2"},
	{"\u02b0\u03a3", "\u02b0\u03c3"},
	{"A\u02b0\u03a3", "a\u02b0\u03c2"},
	{"A\u03a3\u02b0", "a\u03c2\u02b0"},
	{"\u0391\u03a31", "\u03b1\u03c21"},
	{"1\u03a3", "1\u03c3"},
	{"\u0391\u03a3\u0391", "\u03b1\u03c3\u03b1"},
	{"\u0391\u03a3/\u0392", "\u03b1\u03c2/\u03b2"},
	{"\u03a3\u03a3", "\u03c3\u03c2"},
	{"\u0391\u03a3\u03a3", "\u03b1\u03c3\u03c2"},
	{"\u0391\u03a3\u00ad", "\u03b1\u03c2\u00ad"},
	{"\u0391\u03a3\u00ad\u0392", "\u03b1\u03c3\u00ad\u03b2"},
	{"\u1e9e", "\u00df"},
	{"\u01c5", "\u01c6"},
	{"\u216b", "\u217b"},
	{"\u24b6", "\u24d0"},
	{"Kelvin\u212a", "kelvink"},
	{"\u1c89", "\u1c8a"},
	{"\ua7cb\ua7cc\ua7da\ua7dc", "\u0264\ua7cd\ua7db\u019b"},
	{"\U00010d50\U00010d65", "\U00010d70\U00010d85"},
	{"\U00010d50\u03a3", "\U00010d70\u03c2"},
	{"\u0391\u03a3\U0001171e", "\u03b1\u03c2\U0001171e"},
	{"\u0391\u03a3\u0897\u0392", "\u03b1\u03c3\u0897\u03b2"},
	{"@Acme/Scanner-\u03a9", "@acme/scanner-\u03c9"},
	{"\ufb00", "\ufb00"},
	{"\u0149", "\u0149"},
	{"\u01f0", "\u01f0"},
	{"late\u017ft", "late\u017ft"},
	{"\U0001e900", "\U0001e922"},
	{"\u13a0", "\uab70"},
}

func TestToLowerMatchesDeno(t *testing.T) {
	for _, tc := range toLowerTable {
		if got := ToLower(tc.in); got != tc.want {
			t.Errorf("ToLower(%+q) = %+q, JavaScript gives %+q", tc.in, got, tc.want)
		}
	}
	if got := ToLower("a\xffB"); got != "a\xffb" {
		t.Errorf("invalid UTF-8: %q", got)
	}
}

// denoBinary is the JavaScript engine swamp runs on, when this machine has
// it ($DENO, else the one swamp's installer leaves beside $SWAMP_BIN, else
// /opt/realswamp/bin/deno).
func denoBinary() string {
	if d := os.Getenv("DENO"); d != "" {
		return d
	}
	cands := []string{"/opt/realswamp/bin/deno"}
	if s := os.Getenv("SWAMP_BIN"); s != "" {
		cands = append([]string{filepath.Join(filepath.Dir(s), "deno")}, cands...)
	}
	for _, c := range cands {
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() {
			return c
		}
	}
	return ""
}

// TestToLowerMatchesDenoOnEveryCodePoint asks deno for the lowercase of
// every code point alone and after "A" then before "." (which exercises
// Final_Sigma's context with it), and compares. Skipped without deno.
func TestToLowerMatchesDenoOnEveryCodePoint(t *testing.T) {
	deno := denoBinary()
	if deno == "" || testing.Short() {
		t.Skip("no deno on this machine (set DENO): only the table is checked")
	}
	script := `const out = [];
for (let cp = 0; cp <= 0x10FFFF; cp++) {
  if (cp >= 0xD800 && cp <= 0xDFFF) continue;
  const s = String.fromCodePoint(cp);
  for (const w of [s, "\u0391\u03a3" + s, s + "\u03a3", "\u0391" + s + "\u03a3"]) {
    const l = w.toLowerCase();
    if (l !== w) out.push([w, l]);
  }
}
console.log(JSON.stringify(out));`
	out, err := exec.Command(deno, "eval", script).Output()
	if err != nil {
		t.Fatalf("deno: %v", err)
	}
	var pairs [][2]string
	if err := json.Unmarshal(out, &pairs); err != nil {
		t.Fatal(err)
	}
	changed := make(map[string]string, len(pairs))
	for _, p := range pairs {
		changed[p[0]] = p[1]
	}
	bad := 0
	for cp := rune(0); cp <= utf8.MaxRune; cp++ {
		if !utf8.ValidRune(cp) {
			continue
		}
		s := string(cp)
		for _, w := range []string{s, "\u0391\u03a3" + s, s + "\u03a3", "\u0391" + s + "\u03a3"} {
			want, ok := changed[w]
			if !ok {
				want = w
			}
			if got := ToLower(w); got != want && bad < 20 {
				bad++
				t.Errorf("ToLower(%+q) = %+q, JavaScript gives %+q", w, got, want)
			}
		}
	}
}
