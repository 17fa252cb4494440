package main

// Help examples (swamp shows one on every command), shell completion and
// the man page, all from the command tree (urfave/cli's own completion
// generators; the man page is man.go's).

import (
	"fmt"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"
)

func init() {
	// urfave/cli adds its --help flag only to an app with no command of
	// its own named help: this one's is added here.
	globalFlags = append(globalFlags, cli.HelpFlag)
	register(&cli.Command{
		Name:            "help",
		Usage:           "show the help of a command: 'swampj help data write' is 'swampj data write --help'",
		ArgsUsage:       "[COMMAND...]",
		SkipFlagParsing: true,
		// No help subcommand or flag of its own: urfave/cli's would take
		// 'swampj help help' and recurse.
		HideHelp: true,
		Action:   runHelp,
	})
}

// runHelp shows the help of the command path it is given (the app's with
// none) by running that path with --help, so it is the same text, and an
// unknown command is the same usage error, as the flag gives.
func runHelp(c *cli.Context) error {
	var path []string
	for _, a := range c.Args().Slice() {
		if !strings.HasPrefix(a, "-") {
			path = append(path, a)
		}
	}
	return c.App.RunContext(c.Context, append(append([]string{c.App.Name}, path...), "--help"))
}

// examples holds each command's examples, by command path. A test walks
// the tree and fails for a command without one.
var examples = map[string][]string{
	"catalog":                     {"swampj catalog verify", "swampj catalog rebuild --confirm"},
	"catalog verify":              {"swampj catalog verify", "swampj catalog verify --verify-checksums --json"},
	"catalog rebuild":             {"swampj catalog rebuild", "swampj catalog rebuild -y"},
	"completion":                  {"source <(swampj completion bash)", "swampj completion zsh > \"${fpath[1]}/_swampj\"", "swampj completion fish > ~/.config/fish/completions/swampj.fish"},
	"data":                        {"swampj data list", "swampj data get m1 result"},
	"data write":                  {"echo '{\"ok\":true}' | swampj data write m1 result", "swampj data write --model m1 --name result --file out.json", "swampj data write command/shell/MODEL_ID/result --file out.json"},
	"data get":                    {"swampj data get m1 result", "swampj data get --model m1 --name result --version 2", "swampj data get m1 result --json --no-content"},
	"data versions":               {"swampj data versions m1 result", "swampj data versions command/shell/MODEL_ID/result --json"},
	"data list":                   {"swampj data list", "swampj data list m1 --json", "swampj data list command/shell/"},
	"datastore":                   {"swampj datastore namespace list"},
	"datastore namespace":         {"swampj datastore namespace set team-a", "swampj datastore namespace migrate --confirm"},
	"datastore namespace set":     {"swampj datastore namespace set team-a"},
	"datastore namespace unset":   {"swampj datastore namespace unset --migrate --confirm"},
	"datastore namespace migrate": {"swampj datastore namespace migrate", "swampj datastore namespace migrate -y", "swampj datastore namespace migrate --reverse --confirm"},
	"datastore namespace list":    {"swampj datastore namespace list --json"},
	"demo":                        {"swampj demo", "swampj demo /tmp/swampj-demo --json"},
	"doctor":                      {"swampj doctor", "swampj doctor --repair", "swampj doctor --repair -y"},
	"doctor datastores":           {"swampj doctor datastores", "swampj doctor datastores --repair --confirm"},
	"journal":                     {"swampj journal list", "swampj journal show 3"},
	"journal list":                {"swampj journal list", "swampj journal list --all --json"},
	"journal hold":                {"swampj journal hold"},
	"journal show":                {"swampj journal show 3", "swampj journal show 3 --json", "swampj journal show run2"},
	"man":                         {"swampj man > swampj.1 && man ./swampj.1"},
	"recover":                     {"swampj recover", "swampj recover --dry-run", "swampj recover --rollback"},
	"help":                        {"swampj help data write"},
	"run":                         {"swampj run -- swamp model method run m1 execute --input run='echo hi'", "swampj run --repair -- swamp serve", "swampj run --json -- swamp workflow run wf1 | tail -n 1"},
}

// withExamples appends each command's examples to its description, once
// per process (the commands are package state). Only what prints
// descriptions calls it, help (app.go's HelpPrinter) and the man page: a
// command that prints neither does not build them.
var withExamples = sync.OnceFunc(func() { addExamples("", commands) })

func addExamples(parent string, cmds []*cli.Command) {
	for _, c := range cmds {
		key := strings.TrimSpace(parent + " " + c.Name)
		if ex := examples[key]; len(ex) > 0 {
			var b strings.Builder
			if c.Description != "" {
				b.WriteString(c.Description + "\n\n")
			}
			b.WriteString("EXAMPLES:\n")
			for _, e := range ex {
				fmt.Fprintf(&b, "   %s\n", e)
			}
			c.Description = strings.TrimRight(b.String(), "\n")
		}
		addExamples(key, c.Subcommands)
	}
}

// completionScripts are urfave/cli's own bash and zsh scripts
// (autocomplete/bash_autocomplete, zsh_autocomplete), which ask the binary
// itself through --generate-bash-completion.
var completionScripts = map[string]string{
	"bash": `_swampj_complete() {
  local cur opts
  COMPREPLY=()
  cur="${COMP_WORDS[COMP_CWORD]}"
  if [[ "$cur" == "-"* ]]; then
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" "${cur}" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
  return 0
}
complete -o bashdefault -o default -F _swampj_complete swampj
`,
	"zsh": `#compdef swampj
_swampj() {
  local -a opts
  local cur
  cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _swampj swampj
`,
}

func init() {
	register(&cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script (bash, zsh or fish)",
		ArgsUsage: "bash|zsh|fish",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErr(fmt.Errorf("usage: swampj completion bash|zsh|fish"))
			}
			shell := c.Args().First()
			if s, ok := completionScripts[shell]; ok {
				_, err := fmt.Fprint(c.App.Writer, s)
				return err
			}
			if shell == "fish" {
				s, err := c.App.ToFishCompletion()
				if err != nil {
					return err
				}
				_, err = fmt.Fprint(c.App.Writer, s)
				return err
			}
			return usageErr(fmt.Errorf("no completion for shell %q: bash, zsh or fish", shell))
		},
	})
	register(&cli.Command{
		Name:   "man",
		Usage:  "print the man page, generated from the command tree (troff)",
		Hidden: true,
		Action: func(c *cli.Context) error {
			withExamples()
			return writeMan(c.App.Writer, c.App) // man.go: not urfave's ToMan
		},
	})
}
