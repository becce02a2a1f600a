package redact

import "testing"

// Values that must never reach a redacted text (as in internal/gitauth's tests).
const (
	testPassword = "hunter22-pw"
	testToken    = "tok-3456-bearer"
)

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

// The cases of internal/gitauth's RedactURL, which URL now is.
func TestURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://github.com/org/stack.git", "https://github.com/org/stack.git"},
		{"https://user:" + testPassword + "@github.com/org/stack.git", "https://github.com/org/stack.git"},
		{"https://" + testToken + "@github.com/org/stack.git", "https://github.com/org/stack.git"},
		{"ssh://git@github.com/org/stack.git", "ssh://github.com/org/stack.git"},
		{"https://github.com/org/stack.git?token=" + testToken, "https://github.com/org/stack.git?***"},
		{"https://u:" + testPassword + "#x@github.com/org", "https://github.com/org"},  // does not parse
		{"https://u:pa/" + testPassword + "@github.com/org", "https://github.com/org"}, // does not parse
		{"git@github.com:org/stack.git", "github.com:org/stack.git"},
		{"https:u:" + testPassword + "@github.com/org", "github.com/org"}, // opaque
		{"", ""},
	}
	for _, tt := range tests {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestURLs(t *testing.T) {
	for in, want := range map[string]string{
		// internal/gitauth's RedactText case.
		`clone "https://a:b@h/x" and ssh://git@h2/y`: `clone "https://h/x" and ssh://h2/y`,
		// A password with a '?', '#' or quote is dropped whole (internal/redact's rule).
		"fetch https://u:p?a#s's@h/x failed": "fetch https://h/x failed",
		// Empty user information is dropped too (internal/gitauth's rule).
		"fetch https://@h/x": "fetch https://h/x",
		// Not user information: a '/' or white space comes first.
		"https://h/x?a=b@c and https://h y@z": "https://h/x?a=b@c and https://h y@z",
	} {
		if got := URLs(in); got != want {
			t.Errorf("URLs(%q) = %q, want %q", in, got, want)
		}
	}
}
