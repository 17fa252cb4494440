// Package buckettest builds swampj-bucket for tests, so that the code
// under test reaches the bucket as production does: through the program.
package buckettest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/swampj/swampj/ops/remote"
)

// Install builds swampj-bucket into dir and points remote.BucketProgramEnv
// at it for this process and the processes it starts. It returns the
// program's path.
func Install(dir string) (string, error) {
	p := filepath.Join(dir, remote.BucketProgram)
	out, err := exec.Command("go", "build", "-o", p, "github.com/swampj/swampj/cmd/swampj-bucket").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", remote.BucketProgram, err, out)
	}
	return p, os.Setenv(remote.BucketProgramEnv, p)
}
