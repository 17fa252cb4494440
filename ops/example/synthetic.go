package example

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/swampj/swampj/fsx"
)

// SyntheticOptions size a synthetic repo.
type SyntheticOptions struct {
	Items    int    // data items (default 100)
	Versions int    // versions per item (default 10)
	Seed     uint64 // the same seed writes the same bytes (default 1)
	// ItemsPerModel groups items under model ids (default 10).
	ItemsPerModel int
}

// syntheticTypes are the model types items are spread over.
var syntheticTypes = []string{"command/shell", "@acme/scanner", "aws/ec2/vpc", "aws/s3/bucket"}

// Synthetic writes a solo repo with opts.Items items of opts.Versions
// versions each into dir: every item has `latest` = its highest version,
// every fifth item is a workflow-step output (two steps alternating), the
// rest are model-method resources. Creation times grow with the version, so
// the versions of one item are in write order.
func Synthetic(fsys fsx.FS, dir string, opts SyntheticOptions) (Stats, error) {
	if opts.Items <= 0 {
		opts.Items = 100
	}
	if opts.Versions <= 0 {
		opts.Versions = 10
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	if opts.ItemsPerModel <= 0 {
		opts.ItemsPerModel = 10
	}
	w := newWriter(fsys)
	ids := newUUIDs(opts.Seed)
	rng := rand.New(rand.NewPCG(opts.Seed, 7))
	var st Stats
	data := filepath.Join(dir, ".swamp", "data")
	base := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	if err := w.file(filepath.Join(dir, ".swamp.yaml"), swampYAML(iso(base), ids.next())); err != nil {
		return st, err
	}
	workflowID, runIDs := ids.next(), make([]string, opts.Versions)
	for i := range runIDs {
		runIDs[i] = ids.next()
	}

	var typ, model, modelName string
	for it := range opts.Items {
		if it%opts.ItemsPerModel == 0 {
			typ = syntheticTypes[rng.IntN(len(syntheticTypes))]
			model = ids.next()
			modelName = fmt.Sprintf("model-%05d", it/opts.ItemsPerModel)
		}
		name := fmt.Sprintf("item-%05d", it)
		for v := 1; v <= opts.Versions; v++ {
			created := iso(base.Add(time.Duration(v)*time.Hour + time.Duration(it)*time.Millisecond))
			m := resourceMeta(ids.next(), name, int64(v), modelName, model, created)
			if it%5 == 0 {
				step := []string{"collect", "publish"}[v%2]
				stepOutput(m, StepRun{Workflow: "sync", WorkflowID: workflowID, RunID: runIDs[v-1], Job: "main", Step: step})
			}
			raw := fmt.Appendf(nil, `{"item":%d,"version":%d,"value":%d,"note":"synthetic"}`, it, v, rng.Int64N(1_000_000))
			if err := w.writeVersion(data, Version{typ, model, m, raw}); err != nil {
				return st, err
			}
			st.Versions++
		}
		if err := w.writeLatest(data, typ, model, name, int64(opts.Versions)); err != nil {
			return st, err
		}
		st.Items++
	}
	return st, nil
}
