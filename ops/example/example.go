package example

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/meta"
)

// Fixed identities of the example repo. The first two are the models of
// swamp-format §2.4.2 (examples A and B), so their files can be compared
// with the byte-exact examples there.
const (
	RepoID             = "5b0c9e2a-7f4d-4e1b-9a3c-2d8e6f1a0b7c"
	HelloShell         = "3f9c2b7e-5a1d-4e8f-9b6c-0d2e4f6a8b1c" // command/shell, model hello-shell
	ScanShell          = "9e8d7c6b-5a49-4837-a625-1403f2e1d0c9" // command/shell, model scan-shell
	WorkflowID         = "b5e1d0c4-2f3a-4b6c-8d7e-9f0a1b2c3d4e" // workflow nightly-scan
	exampleFirstRunID  = "c8a7f6e5-d4c3-4b2a-9180-7f6e5d4c3b2a"
	exampleFirstStepID = "0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d"
	exampleInitialized = "2026-07-29T09:00:00.000Z"
)

// Stats counts what Write wrote.
type Stats struct {
	Items, Versions int
}

// Write writes the bundled example repo into dir (created if missing; no
// file may exist yet where Write writes one). Layout (swamp-format Appendix A, solo,
// default datastore):
//
//	.swamp.yaml
//	.swamp/data/command/shell/{hello-shell}/result/{1,2,3} + latest   model-method resource (swamp-format §2.4.2 A is v3)
//	.swamp/data/command/shell/{scan-shell}/result/{1..4} + latest     workflow-step outputs of two steps
//	                                                                  (swamp-format §2.4.2 B is v1)
//	.swamp/data/@acme/scanner/{scanner}/result/{1,2,3} + latest       scoped extension type
//	.swamp/data/@acme/scanner/{scanner}/execution-log/1 + latest      file output of a workflow step
//	.swamp/data/aws/ec2/vpc/{main-vpc}/vpc/{1,2} + latest             three-segment type
//	.swamp/data/aws/ec2/vpc/{main-vpc}/207333/1 + latest              purely numeric data name
//	.swamp/outputs/…  .swamp/workflow-runs/…  .swamp/secrets/…  .swamp/audit/…
//
// The catalog is not written here (see the package comment).
func Write(fsys fsx.FS, dir string) (Stats, error) {
	e := &exampleWriter{w: newWriter(fsys), ids: newUUIDs(20260801), data: filepath.Join(dir, ".swamp", "data"),
		base: time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)}
	if err := e.w.file(filepath.Join(dir, ".swamp.yaml"), swampYAML(exampleInitialized, RepoID)); err != nil {
		return e.st, err
	}
	for _, part := range []func() error{e.helloShell, e.scanShell, e.scanner, e.vpc, func() error { return e.runtimeDirs(dir) }} {
		if err := part(); err != nil {
			return e.st, err
		}
	}
	return e.st, nil
}

// exampleWriter writes the example's parts, counting what it writes.
type exampleWriter struct {
	w    *writer
	ids  *uuids
	st   Stats
	data string
	base time.Time
	runs []string // scan-shell's workflow runs (scanShell), for the later parts
}

func (e *exampleWriter) at(d time.Duration) string { return iso(e.base.Add(d)) }

func (e *exampleWriter) put(v Version) error {
	e.st.Versions++
	return e.w.writeVersion(e.data, v)
}

func (e *exampleWriter) item(typ, model, name string, latest int64) error {
	e.st.Items++
	return e.w.writeLatest(e.data, typ, model, name, latest)
}

func (e *exampleWriter) helloShell() error {
	// 1. hello-shell: `swamp model method run hello-shell execute`, three
	// times. Version 3 is swamp-format §2.4.2 A byte for byte (id, raw, createdAt).
	helloIDs := []string{e.ids.next(), e.ids.next(), "7d3f2c1e-9a4b-4c2d-8e1f-0a1b2c3d4e5f"}
	for i, id := range helloIDs {
		n := int64(i + 1)
		created := e.at(time.Duration(i-2) * 24 * time.Hour) // v3 at 12:00:00.000 on Aug 1
		m := resourceMeta(id, "result", n, "hello-shell", HelloShell, created)
		if err := e.put(Version{"command/shell", HelloShell, m, shellRaw(created, "echo hello", "hello\n", 12)}); err != nil {
			return err
		}
	}
	if err := e.item("command/shell", HelloShell, "result", 3); err != nil {
		return err
	}

	return nil
}

func (e *exampleWriter) scanShell() error {
	// 2. scan-shell in workflow nightly-scan: two runs, each with step
	// run-shell (job scan) and step summarize (job report) writing the same
	// item, so two (workflow, job, step) groups share one data name (swamp-format §3.5,
	// §11). Version 1 is swamp-format §2.4.2 B byte for byte.
	e.runs = []string{exampleFirstRunID, e.ids.next()}
	steps := []struct{ job, step, cmd, out string }{
		{"scan", "run-shell", "echo hello", "hello\n"},
		{"report", "summarize", "echo summary", "0 findings\n"},
	}
	n := int64(0)
	for r, run := range e.runs {
		for s, sp := range steps {
			n++
			id := e.ids.next()
			if n == 1 {
				id = exampleFirstStepID
			}
			created := e.at(5*time.Minute + 9007*time.Millisecond + time.Duration(r)*24*time.Hour + time.Duration(s)*time.Minute)
			executed := e.at(time.Duration(r)*24*time.Hour + time.Duration(s)*time.Minute)
			m := resourceMeta(id, "result", n, "scan-shell", ScanShell, created)
			m.GarbageCollection = meta.GarbageCollection{Duration: "30d"}
			stepOutput(m, StepRun{Workflow: "nightly-scan", WorkflowID: WorkflowID, RunID: run, Job: sp.job, Step: sp.step})
			if err := e.put(Version{"command/shell", ScanShell, m, shellRaw(executed, sp.cmd, sp.out, 12+s)}); err != nil {
				return err
			}
		}
	}
	if err := e.item("command/shell", ScanShell, "result", n); err != nil {
		return err
	}

	return nil
}

func (e *exampleWriter) scanner() error {
	// 3. @acme/scanner (swamp-format Appendix A): result ×3 by model-method runs, and an
	// execution log written as a file by the workflow step `scan`.
	scanner := e.ids.next()
	for i := range 3 {
		v := int64(i + 1)
		created := e.at(time.Duration(i)*time.Hour + 30*time.Minute)
		raw := fmt.Appendf(nil, `{"target":"10.0.0.0/24","hosts":%d,"openPorts":[22,443],"scannedAt":%q}`, 250+i, created)
		if err := e.put(Version{"@acme/scanner", scanner, resourceMeta(e.ids.next(), "result", v, "scanner", scanner, created), raw}); err != nil {
			return err
		}
	}
	if err := e.item("@acme/scanner", scanner, "result", 3); err != nil {
		return err
	}
	logCreated := e.at(3 * time.Hour)
	logMeta := &meta.Metadata{
		ID: e.ids.next(), Name: "execution-log", Version: 1,
		ContentType: "text/plain", Lifetime: "infinite",
		GarbageCollection: meta.GarbageCollection{N: 5},
		Tags: meta.Tags{
			{Key: "type", Value: "file"},
			{Key: "specName", Value: "execution-log"},
			{Key: "modelName", Value: "scanner"},
		},
		Owner:     meta.Owner{OwnerType: "model-method", OwnerRef: scanner},
		CreatedAt: logCreated,
	}
	stepOutput(logMeta, StepRun{Workflow: "nightly-scan", WorkflowID: WorkflowID, RunID: e.runs[1], Job: "scan", Step: "scan"})
	logRaw := []byte("scan started\n250 hosts up\n2 open ports\nscan finished\n")
	if err := e.put(Version{"@acme/scanner", scanner, logMeta, logRaw}); err != nil {
		return err
	}
	if err := e.item("@acme/scanner", scanner, "execution-log", 1); err != nil {
		return err
	}

	return nil
}

func (e *exampleWriter) vpc() error {
	// 4. aws/ec2/vpc (AWS::EC2::VPC normalised, swamp-format §2.2): a resource with two
	// versions, and a purely numeric data name (legal, swamp-format §2.2).
	vpc := e.ids.next()
	for i := range 2 {
		v := int64(i + 1)
		created := e.at(time.Duration(i)*2*time.Hour + 45*time.Minute)
		raw := fmt.Appendf(nil, `{"VpcId":"vpc-0a1b2c3d4e5f6a7b8","CidrBlock":"10.%d.0.0/16","State":"available"}`, i)
		if err := e.put(Version{"aws/ec2/vpc", vpc, resourceMeta(e.ids.next(), "vpc", v, "main-vpc", vpc, created), raw}); err != nil {
			return err
		}
	}
	if err := e.item("aws/ec2/vpc", vpc, "vpc", 2); err != nil {
		return err
	}
	numCreated := e.at(5 * time.Hour)
	if err := e.put(Version{"aws/ec2/vpc", vpc, resourceMeta(e.ids.next(), "207333", 1, "main-vpc", vpc, numCreated),
		[]byte(`{"ticket":207333,"status":"closed"}`)}); err != nil {
		return err
	}
	if err := e.item("aws/ec2/vpc", vpc, "207333", 1); err != nil {
		return err
	}

	return nil
}

func (e *exampleWriter) runtimeDirs(dir string) error {
	// 5. The other runtime directories of the datastore tier and the local
	// tier (swamp-format §2.8). Their formats are not swampj's concern; they
	// are here so that migrations have them to move (and secrets to leave).
	swamp := filepath.Join(dir, ".swamp")
	for _, r := range e.runs {
		path := filepath.Join(swamp, "workflow-runs", WorkflowID, "workflow-run-"+r+".yaml")
		body := fmt.Sprintf("id: %s\nworkflowId: %s\nworkflowName: nightly-scan\nstatus: succeeded\n"+
			"jobs:\n  - name: scan\n    status: succeeded\n  - name: report\n    status: succeeded\n", r, WorkflowID)
		if err := e.w.file(path, []byte(body)); err != nil {
			return err
		}
	}
	index := fmt.Sprintf("[\n  {\n    \"runId\": %q,\n    \"status\": \"succeeded\"\n  },\n  {\n    \"runId\": %q,\n    \"status\": \"succeeded\"\n  }\n]", e.runs[0], e.runs[1])
	if err := e.w.file(filepath.Join(swamp, "workflow-runs", WorkflowID, ".runs-index.json"), []byte(index)); err != nil {
		return err
	}
	out := fmt.Sprintf("modelType: command/shell\nmethod: execute\ndefinitionId: %s\nstatus: succeeded\nstartedAt: '%s'\n",
		HelloShell, e.at(0))
	if err := e.w.file(filepath.Join(swamp, "outputs", "command", "shell", "execute", HelloShell+"-20260801T120000000Z.yaml"), []byte(out)); err != nil {
		return err
	}
	// A placeholder, not key material: the example ships no secret.
	if err := e.w.file(filepath.Join(swamp, "secrets", "local-vault", "README"),
		[]byte("Example placeholder for the local vault. Not a secret.\n")); err != nil {
		return err
	}
	audit := fmt.Sprintf("{\"at\":%q,\"command\":\"model method run hello-shell execute\"}\n"+
		"{\"at\":%q,\"command\":\"workflow run nightly-scan\"}\n", e.at(0), e.at(5*time.Minute))
	if err := e.w.file(filepath.Join(swamp, "audit", "2026-08-01.jsonl"), []byte(audit)); err != nil {
		return err
	}
	return nil
}
