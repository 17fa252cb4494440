package ops

import (
	"context"
	"errors"
	"os"

	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/doctor/cache"
	"github.com/swampj/swampj/ops/remote"
	"github.com/swampj/swampj/ops/repo"
)

// Doctor is the doctor of the repo at or above dir, whatever its
// datastore's kind: a filesystem datastore is checked by doctor.Run; the
// S3 or GCS extension's datastore by the doctor of swamp's local cache of
// it (cache.Run), whose repair runs under the datastore's lock in the
// bucket. Both answer with the same doctor.Report. An extension datastore
// of another type is a *remote.UnknownTypeError (remote.ErrUnknownType):
// swampj leaves it to swamp.
func Doctor(ctx context.Context, dir string, opts doctor.Options) (*doctor.Report, error) {
	fsys := opts.Disk()
	env := opts.Env
	if env == nil {
		env = os.Getenv
	}
	c, err := remote.Discover(dir, remote.Options{FS: fsys, Env: env})
	switch {
	case err == nil:
		return cache.Run(ctx, c, opts)
	case errors.Is(err, remote.ErrUnknownType):
		return nil, err
	}
	// A filesystem datastore, or a configuration Load reports.
	r, err := repo.Load(fsys, dir, env)
	if err != nil {
		return nil, err
	}
	return doctor.Run(ctx, r, opts)
}
