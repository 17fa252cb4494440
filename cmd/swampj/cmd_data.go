package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/read"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
	"github.com/swampj/swampj/ops/write"
)

func init() {
	register(&cli.Command{
		Name:  "data",
		Usage: "write and read versioned data items",
		Description: "An item is named as swamp names it, MODEL DATA_NAME (or --model MODEL --name DATA_NAME), MODEL a\n" +
			"model's name or id: the name is resolved through the definitions under models/ (models/{type}/{name}.yaml\n" +
			"holds its id and type), then the catalog's model_name; a name two models share is an error listing them.\n" +
			"Or as one ADDR, TYPE/MODEL_ID/DATA_NAME, e.g. command/shell/3f9c2b7e-5a1d-4e8f-9b6c-0d2e4f6a8b1c/result\n" +
			"(TYPE may itself contain '/').",
		Subcommands: []*cli.Command{
			{
				Name:      "write",
				Usage:     "write a new version of a data item, crash-safe (never a partial version, latest moves only to a complete one)",
				ArgsUsage: "MODEL DATA_NAME [--file PATH | -] | ADDR [--file PATH | -]",
				Description: "Reads the content from --file PATH, or from stdin when no file (or '-') is given. Takes swamp's\n" +
					"per-model lock (SWAMP_LOCK_TIMEOUT_MS, exit 75 on timeout), stages the version in a hidden\n" +
					"directory, publishes it with one rename, then moves latest and the catalog row to it.\n" +
					"If anything fails, the item is left exactly as it was.\n" +
					"The version carries the owner (ownerType, ownerRef) and the modelName/specName tags of the item's\n" +
					"current version, as swamp requires of every writer; an explicit --owner-type/--owner-ref that differs\n" +
					"is refused before anything is written. A new item is owned as swamp's method runs own it\n" +
					"(model-method, the model id) and named after the model's definition file models/TYPE/NAME.yaml.",
				Flags: []cli.Flag{
					modelFlag(), nameFlag(),
					&cli.StringFlag{Name: "file", Usage: "read the content from `PATH` ('-': stdin)"},
					&cli.BoolFlag{Name: "allow-empty", Usage: "write a zero-byte version (refused by default: an empty stdin — cron's /dev/null — is almost never meant)"},
					&cli.StringFlag{Name: "content-type", Value: write.DefaultContentType, Usage: "MIME type of the content"},
					&cli.GenericFlag{Name: "tag", Value: &tagFlag{}, Usage: "tag `KEY=VALUE` (repeatable; type defaults to resource)"},
					&cli.StringFlag{Name: "lifetime", Value: write.DefaultLifetime, Usage: "infinite, ephemeral, job, workflow, or a duration like 30d"},
					&cli.StringFlag{Name: "garbage-collection", Value: strconv.Itoa(write.DefaultGC), Usage: "versions to keep, or a duration like 30d"},
					&cli.StringFlag{Name: "owner-type", Usage: "model-method, workflow-step or manual (default: the current version's owner, which swamp enforces; a new item: model-method)"},
					&cli.StringFlag{Name: "owner-ref", Usage: "owner reference (default: the current version's; a new item: the model id)"},
					&cli.StringFlag{Name: "model-name", Usage: "model name, tag modelName (default: the current version's; a new item: the name in the model's definition file)"},
					&cli.StringFlag{Name: "spec-name", Usage: "output spec name, tag specName (default: the current version's; a new item: the data name)"},
					&cli.StringFlag{Name: "workflow-id", Usage: "workflow id (UUID; tag workflowId)"},
					&cli.StringFlag{Name: "workflow-run-id", Usage: "workflow run id (UUID; tag workflowRunId)"},
					&cli.StringFlag{Name: "workflow-name", Usage: "workflow name (tag workflow)"},
					&cli.StringFlag{Name: "job-name", Usage: "job name (tag job)"},
					&cli.StringFlag{Name: "step-name", Usage: "step name (tag step)"},
					&cli.StringFlag{Name: "source", Usage: "source (tag source; swamp writes step-output)"},
				},
				Action: runDataWrite,
			},
			{
				Name:      "get",
				Usage:     "print a version's content (the one latest designates by default)",
				ArgsUsage: "MODEL DATA_NAME | ADDR",
				Description: "Follows latest as swamp does (a text file, a legacy symlink, else the highest version).\n" +
					"An unreadable version is an error naming each bad file (exit 1, code unreadable_version).\n" +
					"With --json: swamp's document (the metadata, contentPath, and the content unless --no-content).",
				Flags: []cli.Flag{
					modelFlag(), nameFlag(),
					&cli.Int64Flag{Name: "version", Usage: "read version `N` instead of the latest"},
					&cli.BoolFlag{Name: "no-content", Usage: "with --json: the metadata only, without the content"},
				},
				Action: runDataGet,
			},
			{
				Name:      "versions",
				Usage:     "list the versions of a data item on disk, marking the one latest designates and unreadable ones",
				ArgsUsage: "MODEL DATA_NAME | ADDR",
				Flags:     []cli.Flag{modelFlag(), nameFlag()},
				Action:    runDataVersions,
			},
			{
				Name:      "list",
				Usage:     "list a model's data items (all models' without MODEL; or those whose TYPE/MODEL_ID/DATA_NAME starts with PREFIX)",
				ArgsUsage: "[MODEL | PREFIX]",
				Description: "MODEL is a model's name or id, as in swamp (--json: swamp's document, items grouped by type);\n" +
					"a PREFIX holds a '/' (command/shell/). Without either: every model's items (--json: {models, total}).\n" +
					"A MODEL no definition, catalog row or data knows, or a PREFIX no item starts with, is an error (not_found).",
				Flags:  []cli.Flag{modelFlag()},
				Action: runDataList,
			},
		},
	})
}

// tagFlag collects repeated --tag KEY=VALUE in order.
type tagFlag struct{ tags meta.Tags }

func (t *tagFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("--tag wants KEY=VALUE, got %q", s)
	}
	t.tags = append(t.tags, meta.Tag{Key: k, Value: v})
	return nil
}

func (t *tagFlag) String() string {
	parts := make([]string, len(t.tags))
	for i, tag := range t.tags {
		parts[i] = tag.Key + "=" + tag.Value
	}
	return strings.Join(parts, ",")
}

func modelFlag() cli.Flag {
	return &cli.StringFlag{Name: "model", Usage: "model name or id (alternative to the positional argument)"}
}

func nameFlag() cli.Flag {
	return &cli.StringFlag{Name: "name", Usage: "data name (alternative to the positional argument)"}
}

// itemArgs maps the command line to an item, as swamp's data commands take
// it: MODEL DATA_NAME, --model/--name for either, or one
// TYPE/MODEL_ID/DATA_NAME. It returns the model and name words and the
// positionals left over (at most maxRest of them).
func itemArgs(c *cli.Context, maxRest int, usage string) (model, name string, rest []string, err error) {
	bad := func(why string) error {
		return usageErr(fmt.Errorf("%s; usage: swampj data %s %s", why, c.Command.Name, usage))
	}
	args := c.Args().Slice()
	model, name = c.String("model"), c.String("name")
	if model == "" && len(args) > 0 {
		model, args = args[0], args[1:]
	}
	if model == "" {
		return "", "", nil, bad("a model (name or id) and a data name, or TYPE/MODEL_ID/DATA_NAME, are required")
	}
	isAddr := strings.Contains(model, "/")
	if isAddr && name != "" {
		return "", "", nil, bad(fmt.Sprintf("--name %q with an address %q: give one or the other", name, model))
	}
	if isAddr && len(args) > 0 && !(maxRest > 0 && len(args) == 1 && args[0] == "-") {
		// MODEL DATA_NAME with a "/" in the model: the model is the
		// argument in error, not the data name after it.
		return "", "", nil, bad(addressNotModel(model, args[0]))
	}
	if !isAddr && name == "" {
		if len(args) == 0 {
			return "", "", nil, bad(fmt.Sprintf("a data name is required after the model %q", model))
		}
		name, args = args[0], args[1:]
	}
	if len(args) > maxRest {
		return "", "", nil, bad(fmt.Sprintf("unexpected argument(s) %q", strings.Join(args, " ")))
	}
	return model, name, args, nil
}

// addressNotModel says why a first argument with a "/" followed by another
// argument is wrong: a model name has no "/", so the argument was read as
// a TYPE/MODEL_ID/DATA_NAME address, which is either not one or names the
// data already.
func addressNotModel(model, next string) string {
	var addrErr *repo.AddressError
	if _, err := repo.ParseAddress(model); errors.As(err, &addrErr) {
		return fmt.Sprintf("the model argument %q is not a model name (a model name has no \"/\") "+
			"and not a TYPE/MODEL_ID/DATA_NAME address either (%s)", model, addrErr.Msg)
	}
	return fmt.Sprintf("the model argument %q is a TYPE/MODEL_ID/DATA_NAME address, which names the data already: "+
		"%q is one argument too many (a model name has no \"/\")", model, next)
}

// resolveItem resolves the words itemArgs returned.
func (e *env) resolveItem(r *repo.Repo, model, name string) (repo.Address, read.Model, error) {
	a, m, err := read.ResolveItem(e.c.Context, r, model, name, host.Common{FS: e.fs})
	if err == nil {
		e.out.debug("item %s: model %s, resolved from %s", a, m, m.From)
	}
	return a, m, err
}

func runDataWrite(c *cli.Context) error {
	e := newEnv(c)
	model, name, args, err := itemArgs(c, 1, "MODEL DATA_NAME [--file PATH | -]")
	if err != nil {
		return err
	}
	file := c.String("file")
	if len(args) == 1 {
		if args[0] != "-" || (file != "" && file != "-") {
			return usageErr(fmt.Errorf("usage: swampj data write MODEL DATA_NAME [--file PATH | -] (got %q)", strings.Join(args, " ")))
		}
		file = "-"
	}
	if err := checkWriteFlags(c); err != nil {
		return err
	}
	r, err := e.loadRepo(true)
	if err != nil {
		return err
	}
	a, _, err := e.resolveItem(r, model, name)
	if err != nil {
		return err
	}

	content := c.App.Reader
	source := "stdin"
	if file != "" && file != "-" {
		f, err := openInput(c.Context, file)
		if err != nil {
			return err
		}
		defer f.Close()
		if fi, err := f.Stat(); err != nil {
			return &fsx.SourceError{Err: err}
		} else if fi.IsDir() {
			return &fsx.SourceError{Err: fmt.Errorf("%s is a directory", file)}
		}
		content, source = f, file
	}
	if content, err = checkedInput(c.Context, content, source, c.Bool("allow-empty")); err != nil {
		return err
	}

	w := write.VersionWrite{
		Address:     a,
		Content:     content,
		ContentType: c.String("content-type"),
		Lifetime:    c.String("lifetime"),
		OwnerType:   c.String("owner-type"),
		OwnerRef:    c.String("owner-ref"),
		ModelName:   c.String("model-name"),
		SpecName:    c.String("spec-name"),
		Workflow: write.Workflow{
			ID: c.String("workflow-id"), RunID: c.String("workflow-run-id"), Name: c.String("workflow-name"),
			Job: c.String("job-name"), Step: c.String("step-name"), Source: c.String("source"),
		},
	}
	if tf, ok := c.Generic("tag").(*tagFlag); ok && tf != nil {
		// The flag value lives as long as the command definition; empty it
		// so a second run in the same process starts without these tags.
		w.Tags, tf.tags = tf.tags, nil
	}
	gc := c.String("garbage-collection")
	if n, err := strconv.ParseInt(gc, 10, 64); err == nil {
		if n <= 0 {
			return usageErr(fmt.Errorf("--garbage-collection must be a positive number of versions or a duration like 30d, got %q", gc))
		}
		w.GarbageCollection.N = n
	} else {
		w.GarbageCollection.Duration = gc
	}

	res, err := write.WriteVersions(c.Context, r, []write.VersionWrite{w}, write.WriteOptions{Common: host.Common{JournalLockTimeout: e.lockTO, Command: e.command(), Logger: e.out.logger(), FS: e.fs}})
	if err != nil {
		return err
	}
	v := res[0]
	if v.CatalogStale != "" {
		e.out.warn(fmt.Sprintf("version %d is written and latest names it, but the catalog could not follow (%s); "+
			"swamp's data query will not see it until 'swampj catalog rebuild --confirm' is run by a user who can write the catalog",
			v.Version, v.CatalogStale))
	}
	return e.out.result(writeJSON{
		Address: v.Address.String(), Version: v.Version, Path: v.Dir, IntentID: v.IntentID,
		PreviousLatest: nullable(v.PreviousLatest), Metadata: v.Metadata.JSON(), CatalogStale: v.CatalogStale,
	}, func(w io.Writer) {
		fmt.Fprintf(w, "Wrote %s version %d (%d bytes, sha256 %s)\n", printable(v.Address.String()), v.Version, *v.Metadata.Size, v.Metadata.Checksum)
	})
}

// writeFlagFields maps the metadata fields that come straight from a
// `data write` flag to that flag.
var writeFlagFields = map[string]string{
	"contentType":                   "content-type",
	"lifetime":                      "lifetime",
	"garbageCollection":             "garbage-collection",
	"ownerDefinition.ownerType":     "owner-type",
	"ownerDefinition.ownerRef":      "owner-ref",
	"ownerDefinition.workflowId":    "workflow-id",
	"ownerDefinition.workflowRunId": "workflow-run-id",
}

// checkWriteFlags refuses, as a usage error and before any input is read,
// a flag value swamp's metadata schema rejects (meta.Validate on the flags
// given, every other field a valid placeholder).
func checkWriteFlags(c *cli.Context) error {
	set := func(name, placeholder string) string {
		if c.IsSet(name) {
			return c.String(name)
		}
		return placeholder
	}
	md := &meta.Metadata{
		ID: "00000000-0000-0000-0000-000000000000", Name: "x", Version: 1,
		ContentType: set("content-type", write.DefaultContentType), Lifetime: set("lifetime", write.DefaultLifetime),
		GarbageCollection: meta.GarbageCollection{N: 1},
		Tags:              meta.Tags{{Key: "type", Value: "resource"}},
		Owner: meta.Owner{OwnerType: set("owner-type", "manual"), OwnerRef: set("owner-ref", "x"),
			WorkflowID: c.String("workflow-id"), WorkflowRunID: c.String("workflow-run-id")},
		CreatedAt: "2026-01-01T00:00:00.000Z",
	}
	if gc := c.String("garbage-collection"); c.IsSet("garbage-collection") {
		if n, err := strconv.ParseInt(gc, 10, 64); err == nil {
			md.GarbageCollection.N = n
		} else {
			md.GarbageCollection = meta.GarbageCollection{Duration: gc}
		}
	}
	var invalid *meta.InvalidError
	if err := meta.Validate(md); errors.As(err, &invalid) {
		if flag, ok := writeFlagFields[invalid.Field]; ok {
			return usageErr(fmt.Errorf("--%s %q: %s; nothing was written", flag, c.String(flag), invalid.Reason))
		}
	}
	return nil
}

// openInput opens the content file. It is the user's own input, wherever
// they keep it, and may be a FIFO: it is opened as the user named it, not
// through the repo's confined disk, whose reads refuse FIFOs. Opening a
// FIFO waits for its writer, so the open runs aside and Ctrl-C ends the
// wait (exit 130).
func openInput(ctx context.Context, path string) (fsx.File, error) {
	type opened struct {
		f   fsx.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			ch <- opened{nil, err}
			return
		}
		ch <- opened{f, nil}
	}()
	select {
	case o := <-ch:
		if o.err != nil {
			return nil, &fsx.SourceError{Err: o.err}
		}
		return o.f, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a writer to open %s: %w; nothing was written", path, ctx.Err())
	}
}

// checkedInput refuses empty content unless allowed — swampj must not make
// the #3955 symptom itself from a cron job's /dev/null stdin — and makes a
// source that can block (pipe, FIFO, terminal) interruptible. A regular
// file is returned as it is: it is hashed ahead of the write.
func checkedInput(ctx context.Context, r io.Reader, source string, allowEmpty bool) (io.Reader, error) {
	if f, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if rs, ok := r.(io.Seeker); ok && !allowEmpty {
				if off, err := rs.Seek(0, io.SeekCurrent); err == nil && fi.Size()-off <= 0 {
					return nil, emptyInput(source)
				}
			}
			return r, nil
		}
	}
	br := bufio.NewReaderSize(fsx.InterruptibleReader(ctx, r), 256<<10)
	if _, err := br.Peek(1); err == io.EOF && !allowEmpty {
		return nil, emptyInput(source)
	} else if err != nil && err != io.EOF {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("waiting for input on %s: %w; nothing was written", source, ctx.Err())
		}
		return nil, &fsx.SourceError{Err: err}
	}
	return br, nil
}

func emptyInput(source string) error {
	return withCode("empty_input", exitFailure, fmt.Errorf("the input (%s) is empty; nothing was written. "+
		"A zero-byte latest version is what an unclean shutdown leaves (#3955), so swampj does not write one unless asked: "+
		"pass --allow-empty if an empty version is what you mean", source))
}

type writeJSON struct {
	Address        string          `json:"address"`
	Version        int64           `json:"version"`
	Path           string          `json:"path"`
	IntentID       uint64          `json:"intentId"`
	PreviousLatest *int64          `json:"previousLatest"`
	Metadata       json.RawMessage `json:"metadata"`
	// CatalogStale: why the catalog could not follow (absent: it did).
	CatalogStale string `json:"catalogStale,omitempty"`
}

func nullable(v int64) *int64 {
	if v <= 0 {
		return nil
	}
	return &v
}

func runDataGet(c *cli.Context) error {
	e := newEnv(c)
	model, name, _, err := itemArgs(c, 0, "MODEL DATA_NAME [--version N]")
	if err != nil {
		return err
	}
	version := c.Int64("version")
	if c.IsSet("version") && version <= 0 {
		return usageErr(fmt.Errorf("--version must be a positive version number, got %d", version))
	}
	if c.Bool("no-content") && !e.json {
		return usageErr(errors.New("--no-content needs --json (without --json the content is all data get prints)"))
	}
	r, err := e.loadRepo(false)
	if err != nil {
		return err
	}
	a, m, err := e.resolveItem(r, model, name)
	if err != nil {
		return err
	}
	dc, err := read.OpenData(c.Context, r, a, version, host.Common{FS: e.fs})
	if err != nil {
		return err
	}
	defer dc.Reader.Close()
	if !e.json {
		_, err := io.Copy(c.App.Writer, dc.Reader)
		return err
	}
	// OpenData has already checked the content against its checksum.
	doc := map[string]any{}
	if err := json.Unmarshal(dc.Metadata.JSON(), &doc); err != nil {
		return err
	}
	// swamp's keys (data/get.ts DataGetData), then swampj's.
	delete(doc, "lifecycle")
	delete(doc, "renamedTo")
	rel, err := filepath.Rel(r.Dir, dc.RawPath)
	if err != nil {
		rel = dc.RawPath
	}
	doc["modelId"], doc["modelName"], doc["modelType"] = dc.Address.ModelID, m.Name, dc.Address.Type
	doc["contentPath"] = rel
	doc["address"], doc["rule"], doc["path"], doc["metadataPath"] = dc.Address.String(), dc.Rule, dc.Dir, dc.MetadataPath
	doc["renamedFrom"] = append([]string{}, dc.RenamedFrom...)
	if !c.Bool("no-content") {
		raw, err := io.ReadAll(dc.Reader)
		if err != nil {
			return err
		}
		switch {
		case dc.Metadata.ContentType == "application/json" && json.Valid(raw):
			doc["content"] = json.RawMessage(raw) // as swamp: JSON content inline
		case utf8.Valid(raw):
			doc["content"] = string(raw)
		default:
			doc["content"], doc["contentEncoding"] = base64.StdEncoding.EncodeToString(raw), "base64"
		}
	}
	return e.out.result(doc, func(io.Writer) {})
}

func runDataVersions(c *cli.Context) error {
	e := newEnv(c)
	model, name, _, err := itemArgs(c, 0, "MODEL DATA_NAME")
	if err != nil {
		return err
	}
	r, err := e.loadRepo(false)
	if err != nil {
		return err
	}
	a, m, err := e.resolveItem(r, model, name)
	if err != nil {
		return err
	}
	item, vs, err := read.DataVersions(c.Context, r, a, host.Common{FS: e.fs})
	if err != nil {
		return err
	}
	if m.Name != "" {
		item.ModelName = m.Name
	}
	// swamp's document (data/versions.ts), newest first, then swampj's keys.
	desc := make([]read.DataVersion, len(vs))
	for i, v := range vs {
		desc[len(vs)-1-i] = v
	}
	doc := versionsJSON{
		DataName: item.DataName, ModelID: item.ModelID, ModelName: item.ModelName, ModelType: item.Type,
		Versions: desc, Total: len(vs),
		Address: item.Address, Path: item.Path, LatestOutOfRange: item.LatestOutOfRange,
		LatestRule: item.LatestRule, LatestReadable: item.LatestReadable, LastReadable: item.LastReadable,
		Unreadable: item.Unreadable, Problems: item.Problems,
	}
	return e.out.result(doc, func(w io.Writer) {
		fmt.Fprintf(w, "%s%s (latest: %s)\n", printable(item.Address), modelNameText(printable(item.ModelName)), latestText(item))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "VERSION\tSTATE\tSIZE\tCREATED\t")
		for _, v := range vs {
			mark := ""
			if v.Latest {
				mark = " *"
			}
			size, created := "-", "-"
			if v.Size != nil {
				size = strconv.FormatInt(*v.Size, 10)
			}
			if v.CreatedAt != "" {
				created = v.CreatedAt
			}
			state := v.State
			switch {
			case !v.Readable:
				state = "UNREADABLE (" + v.State + ")"
			case v.RenamedTo != "":
				state = "renamed to " + v.RenamedTo // a rename marker (swamp data rename)
			}
			fmt.Fprintf(tw, "%d%s\t%s\t%s\t%s\t%s\n", v.Version, mark, state, size, created, problemText(v.Problems))
		}
		tw.Flush()
	})
}

func runDataList(c *cli.Context) error {
	e := newEnv(c)
	args := c.Args().Slice()
	arg := c.String("model")
	if len(args) > 1 || (arg != "" && len(args) > 0) {
		return usageErr(errors.New("usage: swampj data list [MODEL | PREFIX] (one of them)"))
	}
	if len(args) == 1 {
		arg = args[0]
	}
	r, err := e.loadRepo(false)
	if err != nil {
		return err
	}
	prefix := arg
	var model *read.Model
	if arg != "" && !strings.Contains(arg, "/") {
		m, err := read.ResolveModel(c.Context, r, arg, host.Common{FS: e.fs})
		if err != nil {
			return err
		}
		e.out.debug("model %s, resolved from %s", m, m.From)
		model, prefix = &m, m.Type+"/"+m.ID+"/"
	}
	items, err := read.ListData(c.Context, r, prefix, host.Common{FS: e.fs})
	if err != nil {
		if len(items) == 0 {
			return err
		}
		e.out.warn(err.Error())
	}
	if model == nil && prefix != "" && len(items) == 0 {
		return &read.DataNotFoundError{Address: prefix + "*", Reason: "no data item's TYPE/MODEL_ID/DATA_NAME starts with " + strconv.Quote(prefix)}
	}
	groups := read.GroupByModel(items, r.Namespace)
	var doc any = listJSON{Models: groups, Total: len(items)}
	if model != nil {
		md := read.ModelData{ModelID: model.ID, ModelName: model.Name, ModelType: model.Type, Namespace: r.Namespace, Groups: []read.DataGroup{}}
		if len(groups) > 0 {
			md = groups[0]
			if model.Name != "" {
				md.ModelName = model.Name
			}
		}
		doc = md
	}
	return e.out.result(doc, func(w io.Writer) {
		if len(items) == 0 {
			fmt.Fprintln(w, "No data items.")
			return
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "MODEL\tADDRESS\tLATEST\tVERSIONS\tSTATE\t")
		for _, it := range items {
			state := "ok"
			switch {
			case !it.LatestReadable:
				state = "UNREADABLE latest"
				if it.LastReadable != nil {
					state += fmt.Sprintf(" (last readable: %d)", *it.LastReadable)
				}
			case len(it.Unreadable) > 0:
				state = fmt.Sprintf("ok; unreadable versions %s", joinInts(it.Unreadable))
			}
			mn := it.ModelName
			if mn == "" {
				mn = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t\n", printable(mn), printable(it.Address), latestText(&it), it.Versions, state)
		}
		tw.Flush()
	})
}

func latestText(it *read.DataItem) string {
	if it.LatestOutOfRange != "" {
		return strconv.Quote(it.LatestOutOfRange) + " (out of range)"
	}
	if it.Latest == nil {
		return "none"
	}
	s := strconv.FormatInt(*it.Latest, 10)
	if it.LatestRule != "file" {
		s += " (" + it.LatestRule + ")"
	}
	return s
}

func problemText(ps []report.Problem) string {
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.Message
	}
	return strings.Join(msgs, "; ")
}

func joinInts(ns []int64) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(parts, ", ")
}

// versionsJSON is swamp's `data versions --json` document (dataName,
// modelId, modelName, modelType, versions newest first, total), then
// swampj's facts about the item, named as in `data list`.
type versionsJSON struct {
	DataName         string             `json:"dataName"`
	ModelID          string             `json:"modelId"`
	ModelName        string             `json:"modelName"`
	ModelType        string             `json:"modelType"`
	Versions         []read.DataVersion `json:"versions"`
	Total            int                `json:"total"`
	Address          string             `json:"address"`
	Path             string             `json:"path"`
	LatestOutOfRange string             `json:"latestOutOfRange,omitempty"`
	LatestRule       string             `json:"latestRule"`
	LatestReadable   bool               `json:"latestReadable"`
	LastReadable     *int64             `json:"lastReadable"`
	Unreadable       []int64            `json:"unreadableVersions"`
	Problems         []report.Problem   `json:"problems"`
}

// listJSON is `data list --json` without a model: each model's document
// as swamp prints it for `data list MODEL --json`.
type listJSON struct {
	Models []read.ModelData `json:"models"`
	Total  int              `json:"total"`
}

func modelNameText(name string) string {
	if name == "" {
		return ""
	}
	return " [model " + name + "]"
}
