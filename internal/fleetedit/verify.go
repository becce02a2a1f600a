package fleetedit

import (
	"bytes"
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// verify parses out, the edited text, and checks that its documents say what the original
// documents (docs) said, except for the changes made in the documents they are keyed by (by
// index), which must now read as the wanted values. Documents that change must decode; the
// others must decode as before, or fail to as before.
func verify(docs []*yaml.Node, out []byte, changes map[int]docChanges) error {
	after, err := parse(out)
	if err != nil {
		return fmt.Errorf("the edited file does not parse (%w): refusing to write it; please report this", err)
	}
	if len(after) != len(docs) {
		return fmt.Errorf("the edited file has %d documents instead of %d: refusing to write it; please report this", len(after), len(docs))
	}
	for i, doc := range docs {
		var want, got any
		errWant, errGot := doc.Decode(&want), after[i].Decode(&got)
		dc, edited := changes[i]
		if errWant != nil {
			if edited {
				return fmt.Errorf("%s: the manifest does not decode (%w): fix it first", dc.key, errWant)
			}
			if errGot == nil {
				return fmt.Errorf("document %d decodes after the edit but not before: refusing to write it; please report this", i+1)
			}
			continue
		}
		what := fmt.Sprintf("document %d", i+1)
		if edited {
			what = dc.key.String()
		}
		for _, c := range dc.changes {
			if err := setPath(want, c.path, c.value); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
		}
		if errGot != nil {
			return fmt.Errorf("%s does not decode after the edit (%w): refusing to write it; please report this", what, errGot)
		}
		same, err := equal(want, got)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if !same {
			return fmt.Errorf("%s would change in more than the edited values: refusing to write it; please report this", what)
		}
	}
	return nil
}

// setPath sets the field at path in v, a decoded document, to value.
func setPath(v any, path []string, value any) error {
	for i, key := range path {
		last := i == len(path)-1
		switch m := v.(type) {
		case map[string]any:
			if last {
				m[key] = value
				return nil
			}
			v = m[key]
		case map[any]any:
			if last {
				m[key] = value
				return nil
			}
			v = m[key]
		default:
			return fmt.Errorf("%v is not a mapping once decoded", path[:i])
		}
	}
	return errors.New("empty path")
}

// equal compares decoded documents by their canonical YAML (sorted keys), where NaN equals
// NaN.
func equal(a, b any) (bool, error) {
	ya, err := yaml.Marshal(a)
	if err != nil {
		return false, err
	}
	yb, err := yaml.Marshal(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(ya, yb), nil
}
