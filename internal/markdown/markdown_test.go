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

func TestFence(t *testing.T) {
	for _, tc := range []struct {
		text  string
		least int
		want  string
	}{
		{"no backticks", 3, "```"},
		{"a ``` b", 3, "````"},
		{"`````", 3, "``````"},
		{"a`b", 1, "``"},
	} {
		if got := Fence(tc.text, tc.least); got != tc.want {
			t.Errorf("Fence(%q, %d) = %q, want %q", tc.text, tc.least, got, tc.want)
		}
	}
}
