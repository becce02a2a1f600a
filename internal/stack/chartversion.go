package stack

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
)

var topVersionLine = regexp.MustCompile(`^version:[ \t]*([^#\n]*?)[ \t]*(#.*)?$`)

// SetChartVersion sets the version of the stack's cluster-class/Chart.yaml, which is what a
// release step does before tagging (like SCS csctl): the ClusterClass is named
// "{{ .Release.Name }}-{{ .Chart.Version }}", so the chart version must be the release
// version. Only the top-level version line is rewritten (comments and layout stay); a
// Chart.yaml without one gets it appended. version must be a stack version (releasename.ParseVersion).
func SetChartVersion(dir, version string) error {
	if _, err := releasename.ParseVersion(version); err != nil {
		return err
	}
	rel := ClusterClassDir + "/" + ChartFile
	file := filepath.Join(dir, ClusterClassDir, ChartFile)
	info, err := os.Stat(file)
	if err != nil {
		if os.IsNotExist(err) {
			return Problem{File: rel, Message: "missing: the cluster-class is not a Helm chart"}
		}
		return err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var chart chartFile
	if err := decodeYAML(data, &chart, false); err != nil {
		return Problem{File: rel, Message: "not valid YAML: " + yamlErr(err)}
	}
	text := string(data)
	lines := strings.SplitAfter(text, "\n")
	replaced := false
	for i, line := range lines {
		body := strings.TrimRight(line, "\r\n")
		m := topVersionLine.FindStringSubmatchIndex(body)
		if m == nil {
			continue
		}
		// m[2]:m[3] is the value; keep whatever follows it (spaces and a comment).
		lines[i] = body[:m[2]] + version + body[m[3]:] + line[len(body):]
		replaced = true
		break
	}
	text = strings.Join(lines, "")
	if !replaced {
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		text += "version: " + version + "\n"
	}
	var check chartFile
	if err := decodeYAML([]byte(text), &check, false); err != nil || check.Version != version {
		return fmt.Errorf("%s: could not set version %q (the version line is not a plain top-level scalar)", rel, version)
	}
	return os.WriteFile(file, []byte(text), info.Mode().Perm())
}
