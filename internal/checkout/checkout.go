// Package checkout finds the repository's checkout on disk (its bin/, config/ and stacks/), for
// the local plane, the benchmarks and the tests.
package checkout

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ModulePath is the Go module whose checkout Root looks for.
const ModulePath = "github.com/clusterstack-io/clusterstack-operator"

// Root returns the closest directory, from dir upwards, whose go.mod declares ModulePath.
func Root(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), "module "+ModulePath) {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no checkout of %s at or above %s", ModulePath, dir)
		}
		d = parent
	}
}
