package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"
)

// reorderArgs lets flags follow positional arguments, as swamp's own CLI
// does (`swampj data get ADDR --version 2`). urfave/cli v2 stops parsing
// flags at the first positional argument, so this rewrites the command line
// once, for every command: global flags go before the command name, a
// command's own flags before its positionals, and everything after "--"
// stays positional. A flag that takes a value but ends the command line is
// a usage error here: moved in front of the command name it would take the
// name as its value.
func reorderArgs(app *cli.App, args []string) ([]string, error) {
	if len(args) == 0 {
		return args, nil
	}
	// Shell completion asks with a last --generate-bash-completion: it stays last.
	if n := len(args); n > 1 && args[n-1] == "--generate-bash-completion" {
		out, err := reorderArgs(app, args[:n-1])
		return append(out, args[n-1]), err
	}
	out := []string{args[0]}
	var globals, path, positionals []string
	var flags [][]string // the current command level's flags, each with its value
	cmds := app.Commands
	var cur *cli.Command
	rest := args[1:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			positionals = append(positionals, rest[i:]...)
			break
		}
		if isFlagToken(a) {
			name := flagName(a)
			var f cli.Flag
			local := false
			if cur != nil {
				f = findFlag(cur.Flags, name)
				local = f != nil
			}
			if f == nil {
				f = findFlag(app.Flags, name)
			}
			tok := []string{a}
			if f != nil && takesValue(f) && !strings.Contains(a, "=") {
				if i+1 >= len(rest) {
					return args, usageErr(fmt.Errorf("flag needs an argument: %s", a))
				}
				i++
				tok = append(tok, rest[i])
			}
			if local || (cur != nil && f == nil) {
				flags = append(flags, tok)
			} else {
				globals = append(globals, tok...)
			}
			continue
		}
		if len(positionals) == 0 {
			if sub := findCommand(cmds, a); sub != nil {
				// Flags seen so far belong to the parent command level,
				// unless the subcommand has them too: then they are its
				// (`doctor --repair datastores` repairs; a parent's copy
				// would be set while the subcommand reads its own, unset).
				var keep [][]string
				for _, tok := range flags {
					if findFlag(sub.Flags, flagName(tok[0])) != nil {
						keep = append(keep, tok)
					} else {
						path = append(path, tok...)
					}
				}
				flags = keep
				path = append(path, a)
				cur = sub
				cmds = sub.Subcommands
				continue
			}
		}
		positionals = append(positionals, a)
	}
	out = append(out, globals...)
	out = append(out, path...)
	for _, tok := range flags {
		out = append(out, tok...)
	}
	return append(out, positionals...), nil
}

func isFlagToken(a string) bool { return len(a) > 1 && a[0] == '-' && a != "-" }

func flagName(a string) string {
	n := strings.TrimLeft(a, "-")
	if i := strings.IndexByte(n, '='); i >= 0 {
		n = n[:i]
	}
	return n
}

func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	if name == "help" || name == "h" {
		return cli.HelpFlag
	}
	return nil
}

func takesValue(f cli.Flag) bool {
	if dg, ok := f.(cli.DocGenerationFlag); ok {
		return dg.TakesValue()
	}
	return false
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}
