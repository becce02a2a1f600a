package redact

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestScrubber(t *testing.T) {
	var s Scrubber
	s.Add("s3cr3t-value")
	s.Add("s3cr3t-value-longer")
	s.Add("abc") // too short to hide in texts
	got := s.Text("a: s3cr3t-value-longer\nb: s3cr3t-value\nc: abc\nurl: https://user:pw@git.example.com/x\n")
	want := "a: ***\nb: ***\nc: abc\nurl: https://git.example.com/x\n"
	if got != want {
		t.Errorf("Text = %q, want %q", got, want)
	}
	var nilScrubber *Scrubber
	if got := nilScrubber.Text("https://u:p@h/x"); got != "https://h/x" {
		t.Errorf("nil Scrubber: %q", got)
	}
}

func TestScrubberForms(t *testing.T) {
	for _, tt := range []struct {
		name    string
		secrets []string
		in      string
		want    string
	}{
		{"escaped as a URL or an HTTP client does (internal/gitauth's rule)", []string{"p@ss w/rd?"},
			"a: p@ss w/rd?, b: p%40ss+w%2Frd%3F, c: p@ss%20w%2Frd%3F", "a: ***, b: ***, c: ***"},
		{"a token in a query", []string{testToken},
			`Get "https://git.example.com/stack.git/info/refs?private_token=` + testToken + `&service=git-upload-pack": EOF`,
			`Get "https://git.example.com/stack.git/info/refs?private_token=***&service=git-upload-pack": EOF`},
		{"without its white space (internal/redact's rule)", []string{" tok3n-val\n"}, "x tok3n-val y", "x *** y"},
		{"long enough only with its white space (internal/gitauth's rule)", []string{"abc\n"}, "x: abc\ny: abc", "x: ***\ny: abc"},
		{"too short", []string{"abc", "  ", ""}, "abc", "abc"},
		{"each occurrence", []string{"AAAA"}, "AAAAAAAA", "******"},
		{"longest first", []string{"ab12", "ab12cd34"}, "ab12cd34 ab12", "*** ***"},
		// A byte either order (values first, URLs first) hides stays hidden.
		{"a password with a '/' (values first)", []string{"pa/ss99"}, "https://u:pa/ss99@host/x", "https://host/x"},
		{"a password with a '@' (values first)", []string{"p@ss99"}, "https://user:p@ss99@host/x", "https://host/x"},
		{"a value holding a URL's host (values first)", []string{"abc@host.com/xyz"}, "see https://user:abc@host.com/xyz", "see https://***"},
		{"a value across a URL's '@' (URLs first)", []string{"B@ho"}, "https://AB@host/x", "https://***st/x"},
		{"a URL's password and elsewhere", []string{testPassword}, "https://u:" + testPassword + "@h/x: password " + testPassword + " rejected",
			"https://h/x: password *** rejected"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Secrets(tt.in, tt.secrets...); got != tt.want {
				t.Errorf("Secrets(%q, %q) = %q, want %q", tt.in, tt.secrets, got, tt.want)
			}
			var s Scrubber
			for _, v := range tt.secrets {
				s.Add(v)
			}
			if got := s.Text(tt.in); got != tt.want {
				t.Errorf("Scrubber.Text(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestError(t *testing.T) {
	orig := fmt.Errorf(`Get "https://x:%s@git.example.com/stack.git/info/refs": token %s rejected: %w`, testPassword, testToken, io.ErrUnexpectedEOF)
	red := Error(orig, testPassword, testToken)
	if got := red.Error(); strings.Contains(got, testPassword) || strings.Contains(got, testToken) || strings.Contains(got, "x:") {
		t.Errorf("redacted error keeps a credential: %s", got)
	}
	if want := `Get "https://git.example.com/stack.git/info/refs": token *** rejected: unexpected EOF`; red.Error() != want {
		t.Errorf("Error = %q, want %q", red.Error(), want)
	}
	if !errors.Is(red, io.ErrUnexpectedEOF) {
		t.Errorf("errors.Is lost the original chain: %v", red)
	}
	if errors.Unwrap(red) != nil {
		t.Errorf("the redacted error unwraps to the original text")
	}
	if Error(nil, testToken) != nil {
		t.Errorf("Error(nil) is not nil")
	}
	var nilScrubber *Scrubber
	if got := nilScrubber.Error(errors.New("https://u:p@h/x")); got.Error() != "https://h/x" {
		t.Errorf("nil Scrubber: %q", got)
	}
}
