package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/wrapped"
	"github.com/swampj/swampj/recover"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// commandFiles register their commands here (one file per command group).
var commands []*cli.Command

func register(c *cli.Command) { commands = append(commands, c) }

var globalFlags = []cli.Flag{
	&cli.StringFlag{Name: "repo-dir", Aliases: []string{"repo"}, Usage: "the swamp repo's root `DIR`, the directory holding .swamp.yaml; its parents are not searched (default: $SWAMP_REPO_DIR, else the nearest directory at or above the working directory holding .swamp.yaml)"},
	&cli.BoolFlag{Name: "json", Usage: "print the result as one JSON document on stdout (errors as JSON on stderr)"},
	&cli.DurationFlag{Name: "lock-timeout", Value: recover.DefaultJournalLockTimeout, Usage: "how long to wait for another swampj process holding the repo"},
	&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress and no warnings on stderr"},
	&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "debug detail on stderr (which repo, how a model name was resolved, the error's code)"},
	&cli.BoolFlag{Name: "no-color", Usage: "accepted as swamp accepts it; swampj never prints color"},
}

func init() {
	// -v is --verbose, as in swamp; the version is --version only.
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version"}
	// Examples join the descriptions only when help is printed (help.go).
	printHelp := cli.HelpPrinter
	cli.HelpPrinter = func(w io.Writer, templ string, data interface{}) {
		withExamples()
		printHelp(w, templ, data)
	}
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	sorted := append([]*cli.Command(nil), commands...)
	sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].Name < sorted[b].Name })
	setUsageErrors(sorted)
	return &cli.App{
		EnableBashCompletion: true,
		Name:                 "swampj",
		Usage:                "crash-safe changes to a swamp datastore",
		Version:              version,
		Flags:                globalFlags,
		Commands:             sorted,
		Reader:               stdin,
		Writer:               stdout,
		ErrWriter:            stderr,
		// Errors are rendered by run, once, with their exit code.
		ExitErrHandler:  func(*cli.Context, error) {},
		HideHelpCommand: true,
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageErr(err)
		},
		CommandNotFound: func(c *cli.Context, name string) {
			// Recorded and turned into a usage error by run.
			c.App.Metadata["notFound"] = name
		},
		Metadata: map[string]interface{}{},
	}
}

// setUsageErrors makes every command report flag errors through run, with
// exit code 2, instead of printing help to stdout, and makes a command that
// takes no positional arguments (no ArgsUsage) refuse them: `swampj recover
// bogus` and `swampj doctor vaults` are usage errors, not runs that ignore
// a word. Commands with ArgsUsage check their own arguments.
func setUsageErrors(cmds []*cli.Command) {
	noArgsMu.Lock()
	defer noArgsMu.Unlock()
	setUsageErrorsUnder("swampj", cmds)
}

var (
	noArgsMu      sync.Mutex
	noArgsChecked = map[*cli.Command]bool{}
)

func setUsageErrorsUnder(parent string, cmds []*cli.Command) {
	for _, c := range cmds {
		name := parent + " " + c.Name
		c.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return usageErr(err) }
		if action := c.Action; action != nil && c.ArgsUsage == "" && !c.SkipFlagParsing && !noArgsChecked[c] {
			noArgsChecked[c] = true // commands are package state: wrap once per process
			c.Action = func(ctx *cli.Context) error {
				if ctx.NArg() > 0 {
					return usageErr(fmt.Errorf("%s takes no arguments, got %q (run '%s --help')",
						name, strings.Join(ctx.Args().Slice(), " "), name))
				}
				return action(ctx)
			}
		}
		setUsageErrorsUnder(name, c.Subcommands)
	}
}

// diskFS is the disk every command uses until it knows its repo: the real
// one, wrapped by a kill point when SWAMPJ_FAILPOINT names one
// (fsx/killpoint.go; crash tests). Once the repo is found the command's
// disk is held to it (env.confine).
var diskFS = fsx.Real()

// diskKill is the kill-point layer (or the plain real disk) that diskFS
// is; confined disks are put under the same layer, so a kill point keeps
// counting across it.
var diskKill = fsx.Real()

// confinedDisks are the roots this process opened, closed when run ends.
var confinedDisks []*fsx.Confined

// wrapDiskFS, set only by tests, wraps the disk of in-process runs (a
// counter of the operations a command makes).
var wrapDiskFS func(fsx.FS) fsx.FS

// run is main without the process: testable end to end.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fsys, err := fsx.WithKillPoint(fsx.Real(), os.Getenv)
	if err != nil {
		return reportError(stderr, false, usageErr(err))
	}
	diskKill = fsys
	if wrapDiskFS != nil {
		fsys = wrapDiskFS(fsys)
	}
	diskFS = fsys
	defer fsx.KillPending()
	defer func() {
		for _, c := range confinedDisks {
			c.Close()
		}
		confinedDisks = nil
	}()
	out := &outputWriter{w: stdout}
	app := newApp(stdin, out, stderr)
	// SIGINT and SIGTERM cancel the command's context, from the moment a
	// command is about to run (the root's Before: flags parsed; --version
	// and --help never get there). Catching signals starts the runtime's
	// signal thread and goroutine, two or three more threads: about 0.8 ms
	// of CPU at every start-up. Until then nothing has been done and
	// a signal's default action, ending the process, is right.
	stopSignals := func() {}
	defer func() { stopSignals() }()
	argv, err := reorderArgs(app, args)
	app.Before = func(c *cli.Context) error {
		var stopCtx func()
		c.Context, stopCtx = signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
		stopWatch := func() {}
		if !wrapsCommand(argv) {
			stopWatch = stopWithin(stopGrace, stderr)
		}
		stopSignals = func() { stopWatch(); stopCtx() }
		return nil
	}
	if err == nil {
		err = app.RunContext(ctx, argv)
	}
	if name, ok := app.Metadata["notFound"].(string); ok && err == nil {
		err = usageErr(fmt.Errorf("no command %q (run 'swampj --help')", name))
	}
	switch {
	case out.err != nil && (err == nil || errors.Is(err, out.err)):
		err = out.failure()
	case out.err != nil:
		// The command's own failure keeps its exit code; that its report
		// was lost too is said beside it.
		err = fmt.Errorf("%w (its result could not be written to stdout either: %v)", err, out.err)
	}
	if err == nil {
		return 0
	}
	var re *runExit
	if errors.As(err, &re) {
		return re.code // swampj run: the command's own status, already reported by it
	}
	if hasFlag(argv, "--verbose", "-v") {
		exit, code := classify(err)
		msg := fmt.Sprintf("error code %s, exit %d (%T)", code, exit, err)
		if wantsJSON(argv) {
			b, _ := json.Marshal(map[string]any{"debug": msg})
			fmt.Fprintln(stderr, string(b))
		} else {
			fmt.Fprintln(stderr, "swampj: debug: "+msg)
		}
	}
	return reportError(stderr, wantsJSON(argv), err)
}

// stopGrace is how long a command has, after SIGINT or SIGTERM cancelled
// its context, to stop by itself.
const stopGrace = 10 * time.Second

// stopWithin makes every signal end the command in bounded time, whatever
// it is blocked on (a read the kernel will not interrupt, a hung network
// file system): the first SIGINT or SIGTERM cancels the context, and the
// command rolls back or leaves its intent to recovery; if it has not
// returned grace later, or a second signal comes, the process exits 130 at
// once. That is a crash, which the journal is made for: what was begun is
// recorded before any step, and the next command recovers it. The
// returned stop ends the watch.
func stopWithin(grace time.Duration, stderr io.Writer) (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		t := time.NewTimer(grace)
		defer t.Stop()
		why := fmt.Sprintf("did not stop within %s of the signal", grace)
		select {
		case <-t.C:
		case <-sigs:
			why = "a second signal"
		case <-done:
			return
		}
		fmt.Fprintf(stderr, "swampj: error: stopping now (%s); anything begun is in the journal: run 'swampj recover'\n", why)
		os.Exit(exitInterrupted)
	}()
	return func() { signal.Stop(sigs); close(done) }
}

// wrapsCommand reports whether argv is `swampj run`: its wrapper passes
// signals on to the command and waits for it, as a service manager
// expects; the command, not swampj, decides how long stopping takes.
func wrapsCommand(argv []string) bool {
	for i := 1; i < len(argv); i++ {
		switch a := argv[i]; {
		case a == "--":
			return false
		case a == "--repo-dir" || a == "--repo" || a == "--lock-timeout":
			i++ // its value
		case !strings.HasPrefix(a, "-"):
			return a == "run"
		}
	}
	return false
}

// hasFlag reports whether one of the boolean flags names is given (before
// any "--").
func hasFlag(args []string, names ...string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		for _, n := range names {
			if a == n || a == n+"=true" {
				return true
			}
		}
	}
	return false
}

// wantsJSON looks for --json in the reordered arguments (the error may come
// before urfave has parsed anything).
func wantsJSON(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--json" || a == "-json" || a == "--json=true" {
			return true
		}
	}
	return false
}

// env is what every command needs: the disk, output, options.
type env struct {
	c      *cli.Context
	fs     fsx.FS
	out    *printer
	json   bool
	quiet  bool
	lockTO time.Duration
}

func newEnv(c *cli.Context) *env {
	e := &env{
		c:      c,
		fs:     diskFS,
		json:   c.Bool("json"),
		quiet:  c.Bool("quiet"),
		lockTO: c.Duration("lock-timeout"),
	}
	e.out = newPrinter(c.App.Writer, c.App.ErrWriter, e.json, e.quiet)
	e.out.verbose = c.Bool("verbose")
	return e
}

// repoDir resolves the repo as swamp does: --repo-dir (or --repo), else
// SWAMP_REPO_DIR, names the repo's root itself, never a directory inside
// it (a mistyped path is refused, not resolved to the repo around it);
// only without either is the nearest directory at or above the working
// directory holding .swamp.yaml searched for.
func (e *env) repoDir() (string, error) {
	named, from := e.c.String("repo-dir"), "--repo-dir"
	if !e.c.IsSet("repo-dir") {
		named, from = os.Getenv("SWAMP_REPO_DIR"), "SWAMP_REPO_DIR"
	}
	if e.c.IsSet("repo-dir") || named != "" {
		dir, err := repo.At(diskFS, named)
		if err != nil {
			return "", &namedRepoError{from: from, err: err}
		}
		return dir, e.confine(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	dir, err := repo.Find(diskFS, wd)
	if err != nil {
		return "", err
	}
	return dir, e.confine(dir)
}

// confine holds every later disk operation of the command to the repo at
// dir and the places its configuration names as its own: the datastore
// directory .swamp.yaml (or SWAMP_DATASTORE) names, and a remote
// datastore's cache (the trust boundary, fsx/confine.go). Nothing else is
// touched through e.fs from here on: a symlink in the repo that leads
// elsewhere is refused, naming the link.
func (e *env) confine(dir string) error {
	roots := []string{dir}
	if r, err := repo.Load(diskFS, dir, os.Getenv); err == nil {
		roots = append(roots, r.Base)
	}
	if rc, err := wrapped.FindRemote(dir, diskFS, os.Getenv); err == nil && rc != nil && rc.CacheDir() != "" {
		// swamp's cache area ($SWAMP_HOME/repos, else ~/.swamp/repos): the
		// cache, which a first pull creates, and the quarantine beside it
		// ({cache}.swampj-quarantine) are both in it.
		roots = append(roots, filepath.Dir(rc.CacheDir()))
	}
	c, err := fsx.NewConfined(roots...)
	if err != nil {
		return err
	}
	confinedDisks = append(confinedDisks, c)
	fsys := fsx.Reroot(diskKill, c)
	if wrapDiskFS != nil {
		fsys = wrapDiskFS(fsys)
	}
	e.fs = fsys
	return nil
}

// namedRepoError is a repo named by --repo-dir or SWAMP_REPO_DIR that is
// not one; cliHint says what the name must be.
type namedRepoError struct {
	from string // "--repo-dir" or "SWAMP_REPO_DIR"
	err  error
}

func (e *namedRepoError) Error() string { return e.err.Error() }
func (e *namedRepoError) Unwrap() error { return e.err }

// loadRepo resolves and parses the repo's configuration, then checks the
// datastore's format marker (swamp-format §13.1) before the command locks, opens or
// writes anything: a command that changes the repo (changes) refuses every
// marker it cannot use; one that only reads goes on past an unreadable
// marker with a warning.
func (e *env) loadRepo(changes bool) (*repo.Repo, error) {
	dir, err := e.repoDir()
	if err != nil {
		return nil, err
	}
	r, err := repo.Load(e.fs, dir, os.Getenv)
	if err != nil {
		return r, err
	}
	ns := r.Namespace
	if ns == "" {
		ns = "(none)"
	}
	e.out.debug("repo %s (data root %s, namespace %s, catalog %s)", r.Dir, r.DataRoot, ns, r.CatalogPath)
	if err := repo.RefuseUnknownFormat(e.fs, r.Base, changes, e.out.warn); err != nil {
		return nil, err
	}
	return r, nil
}

// checkRepoFormat is loadRepo's format check for the commands that work on
// a repo whose configuration may be lost (the journal commands).
func (e *env) checkRepoFormat(dir string, changes bool) error {
	_, err := repo.CheckRepoFormat(e.fs, dir, os.Getenv)
	var unreadable *repo.FormatMarkerUnreadableError
	if !changes && errors.As(err, &unreadable) {
		e.out.warn(unreadable.Warning())
		return nil
	}
	return err
}

// command line recorded as the journal lock holder and in intents.
func (e *env) command() []string { return append([]string(nil), os.Args...) }
