package ocistack

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// maxDependencyDepth bounds the chain of file:// dependencies PackageChart follows (a chart
// whose dependencies lead back to it would otherwise never end).
const maxDependencyDepth = 8

// PackageChart packages the Helm chart directory dir as `helm package` does (Helm's loader,
// .helmignore, and chartutil.Save's layout) and returns the .tgz. The directory is only read.
//
// Dependencies that Chart.yaml (or requirements.yaml) declares and charts/ does not hold are
// built as `helm package --dependency-update` builds file:// ones: the chart directory the
// repository names (relative to dir), at a version the dependency's constraint allows, with
// its own file:// dependencies built the same way. A dependency from a chart repository or an
// OCI registry that charts/ does not hold is an error naming the chart and the dependency:
// nothing is downloaded while a release is published, so that a release is built from its
// directory alone and the same directory packages the same chart (vendor such dependencies
// with `helm dependency build` and commit charts/). No Chart.lock is written; one the
// directory holds is packaged as it is.
//
// The same directory packages to the same bytes: entries carry a fixed time, where
// chartutil.Save stamps each with the time of packaging. The result is at most
// MaxContentBytes.
func PackageChart(dir string) ([]byte, error) {
	ch, err := loadChart(dir, nil)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "clusterstack-chart-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	path, err := chartutil.Save(ch, tmp)
	if err != nil {
		return nil, fmt.Errorf("package the chart %s: %w", dir, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > MaxContentBytes {
		return nil, fmt.Errorf("the chart %s packages to %d bytes, more than the %d a chart may hold", dir, fi.Size(), MaxContentBytes)
	}
	tgz, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out, err := withFixedTimes(tgz)
	if err != nil {
		return nil, fmt.Errorf("package the chart %s: %w", dir, err)
	}
	return out, nil
}

// loadChart loads the chart directory dir with the dependencies it declares and charts/ lacks
// built from file:// directories; chain are the absolute directories of the charts that depend
// on it, through file:// dependencies.
func loadChart(dir string, chain []string) (*chart.Chart, error) {
	ch, err := loader.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("load the chart %s: %w", dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	chain = append(slices.Clip(chain), abs)
	have := map[string]bool{}
	for _, d := range ch.Dependencies() {
		have[d.Name()] = true
	}
	var errs []error
	for _, req := range ch.Metadata.Dependencies {
		if req == nil || have[req.Name] {
			continue
		}
		sub, err := localDependency(ch, dir, req, chain)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ch.AddDependency(sub)
		have[req.Name] = true
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return ch, nil
}

// localDependency builds the dependency req of the chart ch (directory dir) that charts/ does
// not hold, from the file:// directory its repository names.
func localDependency(ch *chart.Chart, dir string, req *chart.Dependency, chain []string) (*chart.Chart, error) {
	what := fmt.Sprintf("chart %s (%s): dependency %s", ch.Name(), dir, req.Name)
	local, ok := strings.CutPrefix(req.Repository, "file://")
	switch {
	case req.Repository == "":
		return nil, fmt.Errorf("%s names no repository and is not under charts/: vendor it under charts/ or give its file:// directory", what)
	case !ok:
		return nil, fmt.Errorf("%s %s from %s is not under charts/, and charts are not downloaded while a release is published: run `helm dependency build %s` and commit its charts/, or name a file:// directory", what, req.Version, req.Repository, dir)
	case len(chain) > maxDependencyDepth:
		return nil, fmt.Errorf("%s (%s): file:// dependencies nest more than %d deep", what, req.Repository, maxDependencyDepth)
	}
	if !filepath.IsAbs(local) {
		local = filepath.Join(dir, local)
	}
	if abs, err := filepath.Abs(local); err == nil && slices.Contains(chain, abs) {
		return nil, fmt.Errorf("%s (%s): the file:// dependencies form a cycle: %s -> %s", what, req.Repository, strings.Join(chain, " -> "), abs)
	}
	constraint, err := semver.NewConstraint(req.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: version %q is not a version constraint: %w", what, req.Version, err)
	}
	sub, err := loadChart(local, chain)
	if err != nil {
		return nil, fmt.Errorf("%s (%s): %w", what, req.Repository, err)
	}
	if sub.Name() != req.Name {
		return nil, fmt.Errorf("%s: %s holds the chart %s, not %s", what, req.Repository, sub.Name(), req.Name)
	}
	v, err := semver.NewVersion(sub.Metadata.Version)
	if err != nil || !constraint.Check(v) {
		return nil, fmt.Errorf("%s: %s holds version %s, which the constraint %q does not allow", what, req.Repository, sub.Metadata.Version, req.Version)
	}
	return sub, nil
}

// packagedEntryTime is the time of every entry of a packaged chart.
var packagedEntryTime = time.Unix(0, 0).UTC()

// withFixedTimes rewrites the packaged chart tgz with every entry's time set to
// packagedEntryTime, keeping the entries, their order, modes and contents, and the gzip header
// Helm writes. chartutil.Save stamps entries with the time of packaging, so without this the
// same chart would package to other bytes, and its artifact to another digest, every time.
func withFixedTimes(tgz []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Header = zr.Header
	tw := tar.NewWriter(zw)
	tr := tar.NewReader(zr)
	// What chartutil.Save just wrote from the loaded chart: bounded as Helm's loader bounds a
	// chart archive.
	remaining := loader.MaxDecompressedChartSize
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if remaining -= h.Size; remaining < 0 {
			return nil, fmt.Errorf("the chart holds more than %d bytes", loader.MaxDecompressedChartSize)
		}
		h.ModTime, h.AccessTime, h.ChangeTime = packagedEntryTime, time.Time{}, time.Time{}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.CopyN(tw, tr, h.Size); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
