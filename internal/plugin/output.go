// Package plugin is the logic of the kubectl plugin kubectl-clusterstack: the tree of a stack's
// releases, clusters and components, the analysis of what blocks a cluster, the provenance of a
// cluster's values, the available updates, and their text, JSON and YAML output. It has no
// client: the command (internal/plugin/cli) reads the objects and passes them in, so every
// function here is table-tested with literal API objects.
package plugin

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// Output formats of the -o flag.
const (
	// FormatText is the default, human-readable output.
	FormatText = ""
	// FormatJSON prints the command's result as indented JSON.
	FormatJSON = "json"
	// FormatYAML prints the command's result as YAML.
	FormatYAML = "yaml"
)

// ValidFormat reports whether f is a value the -o flag accepts.
func ValidFormat(f string) error {
	switch f {
	case FormatText, FormatJSON, FormatYAML:
		return nil
	}
	return fmt.Errorf("unknown output format %q: use -o json or -o yaml, or leave -o out for text", f)
}

// WriteData prints v as JSON (indented, with a final newline) or YAML.
func WriteData(w io.Writer, format string, v any) error {
	switch format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("encode JSON: %w", err)
		}
		return nil
	case FormatYAML:
		out, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode YAML: %w", err)
		}
		_, err = w.Write(out)
		return err
	}
	return fmt.Errorf("WriteData: format %q is not a data format", format)
}

// ColorEnabled decides whether text output is coloured: only when it goes to a terminal and
// the NO_COLOR environment variable (https://no-color.org) is unset or empty.
func ColorEnabled(isTerminal bool, getenv func(string) string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	return isTerminal && getenv("NO_COLOR") == ""
}

// Style paints text output. The zero Style prints plain text.
type Style struct {
	// Color enables ANSI colours.
	Color bool
}

const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiFaint  = "\x1b[2m"
)

func (s Style) paint(code, text string) string {
	if !s.Color || text == "" {
		return text
	}
	return code + text + ansiReset
}

// Bold emphasises names of objects.
func (s Style) Bold(text string) string { return s.paint(ansiBold, text) }

// Faint de-emphasises details (messages, revisions).
func (s Style) Faint(text string) string { return s.paint(ansiFaint, text) }

// Good paints a healthy state green.
func (s Style) Good(text string) string { return s.paint(ansiGreen, text) }

// Bad paints a failed state red.
func (s Style) Bad(text string) string { return s.paint(ansiRed, text) }

// Warn paints a state in progress or unknown yellow.
func (s Style) Warn(text string) string { return s.paint(ansiYellow, text) }

// State paints a state word by what it means: Ready, Available, True and Done green; Degraded,
// Failed, False, Stalled, Halted, Blocked and NotFound red; anything else yellow.
func (s Style) State(state string) string {
	switch state {
	case StateReady, StateAvailable, "True", "Done", "Healthy":
		return s.Good(state)
	case StateDegraded, StateFailed, "False", "Stalled", "Halted", "Blocked", StateNotFound:
		return s.Bad(state)
	}
	return s.Warn(state)
}

// oneLine makes a message fit on one line of a tree: newlines become spaces and a message
// longer than limit runes is cut with "...". limit <= 0 keeps the whole message.
func oneLine(msg string, limit int) string {
	msg = strings.Join(strings.Fields(msg), " ")
	if limit > 0 {
		if r := []rune(msg); len(r) > limit {
			return string(r[:limit]) + "..."
		}
	}
	return msg
}
