package main

// The man page (`swampj man`), written as roff straight from the command
// tree. urfave/cli's own ToMan renders Markdown through go-md2man and
// blackfriday, whose package init (regexps, an entity table) every swampj
// process paid at start-up, --version included (0.6 ms of about 1 ms
// of inits). Production builds set the tag urfave_cli_no_docs
// (`just build`, the tests' and benchmarks' builds), which drops ToMan and
// those packages; a plain `go build` still links them but never calls them,
// so both builds print this same page (TestManSameWithoutDocsTag).

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"
)

// writeMan writes app's man page, section 1: NAME, SYNOPSIS, GLOBAL
// OPTIONS, then every visible command under COMMANDS by its full path,
// each with its arguments, usage, description (with its examples, as
// --help shows them) and flags in the order --help lists them.
func writeMan(w io.Writer, app *cli.App) error {
	var b strings.Builder
	fmt.Fprintf(&b, ".TH %s 1 \"\" \"%s %s\"\n", app.Name, app.Name, roffEscape(app.Version))
	b.WriteString(".nh\n.ad l\n")
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", app.Name, roffEscape(app.Usage))
	fmt.Fprintf(&b, ".SH SYNOPSIS\n.B %s\n[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fICOMMAND OPTIONS\\fR] [\\fIARGUMENTS\\fR...]\n", app.Name)
	if app.Description != "" {
		b.WriteString(".SH DESCRIPTION\n")
		writeManText(&b, app.Description)
	}
	b.WriteString(".SH GLOBAL OPTIONS\n")
	writeManFlags(&b, app.VisibleFlags())
	b.WriteString(".SH COMMANDS\n")
	writeManCommands(&b, app.Name, app.VisibleCommands())
	_, err := io.WriteString(w, b.String())
	return err
}

func writeManCommands(b *strings.Builder, parent string, cmds []*cli.Command) {
	for _, c := range cmds {
		// urfave adds its "help" subcommand (alias h) to a command it has
		// run (tests run several in one process); swampj's own top-level
		// help command (help.go) has no alias and is listed.
		if c.Hidden || (c.Name == "help" && c.HasName("h")) {
			continue
		}
		path := parent + " " + c.Name
		fmt.Fprintf(b, ".SS \"%s\"\n", roffEscape(path))
		if len(c.Flags) > 0 || c.ArgsUsage != "" { // a synopsis only where it says more than the heading
			fmt.Fprintf(b, ".B %s", roffEscape(path))
			if len(c.Flags) > 0 {
				b.WriteString(" [\\fIOPTIONS\\fR]")
			}
			if c.ArgsUsage != "" {
				b.WriteString(" " + roffEscape(c.ArgsUsage))
			}
			b.WriteString("\n")
		}
		if len(c.Aliases) > 0 {
			fmt.Fprintf(b, ".br\n(also: %s)\n", roffEscape(strings.Join(c.Aliases, ", ")))
		}
		if c.Usage != "" {
			b.WriteString(".PP\n" + roffLine(c.Usage) + "\n")
		}
		if c.Description != "" {
			writeManText(b, c.Description)
		}
		var flags []cli.Flag
		for _, f := range c.VisibleFlags() {
			if f != cli.HelpFlag {
				flags = append(flags, f)
			}
		}
		writeManFlags(b, flags)
		writeManCommands(b, path, c.Subcommands)
	}
}

// writeManText keeps a description's own line breaks and indentation (it
// is written for --help: numbered steps, indented examples).
func writeManText(b *strings.Builder, text string) {
	b.WriteString(".PP\n.nf\n")
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		b.WriteString(roffLine(line) + "\n")
	}
	b.WriteString(".fi\n")
}

// writeManFlags lists flags as --help does: each name, the value's
// placeholder (the usage's `QUOTED` word, else "value"), the usage and,
// for a flag with a value, its default.
func writeManFlags(b *strings.Builder, flags []cli.Flag) {
	for _, f := range flags {
		df, ok := f.(cli.DocGenerationFlag)
		if !ok {
			continue
		}
		placeholder, usage := unquoteUsage(df.GetUsage())
		if df.TakesValue() && placeholder == "" {
			placeholder = "value"
		}
		var names []string
		for _, n := range df.Names() {
			dash := "\\-"
			if len(n) > 1 {
				dash = "\\-\\-"
			}
			name := "\\fB" + dash + roffEscape(n) + "\\fR"
			if df.TakesValue() {
				name += " \\fI" + roffEscape(placeholder) + "\\fR"
			}
			names = append(names, name)
		}
		if df.TakesValue() {
			def := df.GetDefaultText()
			if def == "" {
				def = df.GetValue()
			}
			if def != "" {
				usage += " (default: " + def + ")"
			}
		}
		fmt.Fprintf(b, ".TP\n%s\n%s\n", strings.Join(names, ", "), roffLine(usage))
	}
}

// unquoteUsage is urfave/cli's rule for a flag's placeholder: the first
// `backquoted` word of its usage, shown unquoted.
func unquoteUsage(usage string) (placeholder, text string) {
	i := strings.IndexByte(usage, '`')
	if i < 0 {
		return "", usage
	}
	j := strings.IndexByte(usage[i+1:], '`')
	if j < 0 {
		return "", usage
	}
	name := usage[i+1 : i+1+j]
	return name, usage[:i] + name + usage[i+2+j:]
}

// roffEscape makes text literal in roff: backslashes, hyphens (so options
// copy as ASCII '-') and, so that the page is ASCII whatever groff's input
// encoding, every other rune as a \[uXXXX] escape.
func roffEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r == '-':
			b.WriteString(`\-`)
		case r > 0x7e:
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// roffLine is roffEscape for a whole input line, which must not start
// with a control character ('.' or '\”).
func roffLine(s string) string {
	s = roffEscape(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
