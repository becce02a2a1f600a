package markdown

import "testing"

func TestCodeSpan(t *testing.T) {
	for in, want := range map[string]string{
		"a":       "`a`",
		"a`b":     "``a`b``",
		"`a``":    "``` `a`` ```",
		"x ``` y": "````x ``` y````",
	} {
		if got := CodeSpan(in); got != want {
			t.Errorf("CodeSpan(%q) = %q, want %q", in, got, want)
		}
	}
}
