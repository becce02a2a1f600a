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
	"reflect"
	"strconv"
	"strings"
	"unicode"

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

// ForTerminal returns a copy of v (a Tree, Updates, ClusterValues or Verdict) in which every
// string, whatever field, list or map it is in, has its control characters and Unicode
// direction overrides escaped (TerminalSafe). The text writers print messages Flux, Helm and
// stack authors wrote into the objects' status; a message with escape sequences could otherwise
// rewrite the user's terminal (move the cursor, hide lines, set the clipboard), and a direction
// override could make text read other than it is. The JSON and YAML output encode such
// characters themselves and print the data as it is.
func ForTerminal[T any](v T) T {
	out := cleanValue(reflect.ValueOf(&v).Elem())
	return out.Interface().(T)
}

// cleanValue returns a copy of v with TerminalSafe applied to every string in it.
func cleanValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		c := reflect.New(v.Type()).Elem()
		c.SetString(TerminalSafe(v.String()))
		return c
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(cleanValue(v.Elem()))
		return c
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Type()).Elem()
		c.Set(cleanValue(v.Elem()))
		return c
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			c.Index(i).Set(cleanValue(v.Index(i)))
		}
		return c
	case reflect.Array:
		c := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			c.Index(i).Set(cleanValue(v.Index(i)))
		}
		return c
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			c.SetMapIndex(cleanValue(it.Key()), cleanValue(it.Value()))
		}
		return c
	case reflect.Struct:
		c := reflect.New(v.Type()).Elem()
		c.Set(v) // unexported fields as they are
		for i := range v.NumField() {
			if c.Field(i).CanSet() {
				c.Field(i).Set(cleanValue(v.Field(i)))
			}
		}
		return c
	}
	return v
}

// TerminalSafe escapes what a terminal would act on rather than print: control characters
// (C0 but newline and tab, DEL, C1: escape sequences, carriage returns, backspaces, bells) and
// the Unicode direction overrides and isolates, each written as a Go escape (\x1b, \u202e).
func TerminalSafe(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !unsafeRune(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRuneToASCII(r) // '\x1b', '\u202e'
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case unicode.IsControl(r), r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e || r == 0x200f || r == 0x061c:
		return true
	}
	return false
}
