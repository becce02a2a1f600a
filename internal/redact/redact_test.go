package redact

import "testing"

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:secret@git.example.com/stacks.git": "https://git.example.com/stacks.git",
		"https://token@git.example.com/x":                "https://git.example.com/x",
		"http://git.example.com/x":                       "http://git.example.com/x",
		"ssh://git@host:22/x":                            "ssh://host:22/x",
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
		if got := URLs("list tags of " + in + ": 401"); got != "list tags of "+want+": 401" {
			t.Errorf("URLs = %q", got)
		}
	}
}
