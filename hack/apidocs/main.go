// Command apidocs generates the API reference (docs/api-reference.md) and the table of
// condition types and reasons (docs/conditions.md) from the Go types, constants, godoc and
// kubebuilder markers of api/v1alpha1, so that the docs cannot drift from the API.
//
//	go run ./hack/apidocs [-root .]
//
// It reads <root>/api/v1alpha1 and writes <root>/docs (`make docs`). The package's test fails
// when the committed docs differ from what it generates.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
)

// Paths relative to the repository root: the API package, the docs directory and the generated
// files in it.
const (
	apiDir         = "api/v1alpha1"
	docsDir        = "docs"
	referenceFile  = "api-reference.md"
	conditionsFile = "conditions.md"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	if err := run(*root); err != nil {
		fmt.Fprintln(os.Stderr, "apidocs:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	docs, err := generate(root)
	if err != nil {
		return err
	}
	outDir := filepath.Join(root, docsDir)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", outDir, err)
	}
	for name, content := range docs {
		path := filepath.Join(outDir, name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, content) {
			continue
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		fmt.Println("wrote", path)
	}
	return nil
}

// generate returns the generated files by name, for the repository at root.
func generate(root string) (map[string][]byte, error) {
	p, err := loadPackage(filepath.Join(root, apiDir))
	if err != nil {
		return nil, err
	}
	source := apiDir
	ref, err := renderReference(p, path.Base(source), source)
	if err != nil {
		return nil, fmt.Errorf("API reference: %w", err)
	}
	conds, err := renderConditions(p, source)
	if err != nil {
		return nil, fmt.Errorf("conditions: %w", err)
	}
	return map[string][]byte{referenceFile: []byte(ref), conditionsFile: []byte(conds)}, nil
}
