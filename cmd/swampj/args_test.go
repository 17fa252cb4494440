package main

import (
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestReorderArgsMovesFlagsBeforePositionals(t *testing.T) {
	app := newApp(nil, io.Discard, io.Discard)
	cases := []struct{ in, want string }{
		{"swampj journal show 3 --json", "swampj --json journal show 3"},
		{"swampj recover --rollback --repo /r", "swampj --repo /r recover --rollback"},
		{"swampj --json recover --dry-run", "swampj --json recover --dry-run"},
		{"swampj journal show --lock-timeout 2s 7", "swampj --lock-timeout 2s journal show 7"},
		{"swampj journal show 7 --repo=/x", "swampj --repo=/x journal show 7"},
		{"swampj journal show -- --json", "swampj journal show -- --json"},
		{"swampj journal list --all extra", "swampj journal list --all extra"},
	}
	for _, c := range cases {
		argv, err := reorderArgs(app, strings.Fields(c.in))
		got := strings.Join(argv, " ")
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
		}
		if got != c.want {
			t.Errorf("%q:\n got  %q\n want %q", c.in, got, c.want)
		}
	}
	if got, _ := reorderArgs(app, []string{"swampj"}); !reflect.DeepEqual(got, []string{"swampj"}) {
		t.Fatal(got)
	}
}
