package redact

import (
	"errors"
	"net/url"
	"slices"
	"strings"
)

// minSecretLen is the shortest value hidden wherever it appears in a text: shorter ones would
// turn ordinary words and numbers into Mask without protecting anything.
const minSecretLen = 4

// Scrubber hides known secret values (a Git remote's credentials, a forge token, the values a
// rendered Secret holds or a sensitive key has) wherever they appear in a text, and drops the
// user information of URLs (URLs). A nil Scrubber only drops URL user information.
type Scrubber struct {
	patterns []pattern // longest find first
}

// pattern is one form of a secret looked for in texts: in an occurrence of find, the n bytes
// from lead are hidden.
type pattern struct {
	find    string
	lead, n int
}

// Add registers values to hide. A value is hidden without the white space around it, and also
// in the forms a URL or an HTTP client may have escaped it into (url.QueryEscape,
// url.PathEscape, with and without that white space). Values shorter than four bytes are not
// hidden in texts (they are still masked where they are the value of a Secret or of a sensitive
// key); a value that is four bytes or more only with its white space is hidden where it appears
// with that white space, the white space left as it is.
func (s *Scrubber) Add(values ...string) {
	for _, v := range values {
		t := strings.TrimSpace(v)
		if t == "" {
			continue
		}
		if len(t) >= minSecretLen {
			s.add(pattern{find: t, n: len(t)})
		} else if len(v) >= minSecretLen {
			s.add(pattern{find: v, lead: strings.Index(v, t), n: len(t)})
		}
		for _, form := range []string{t, v} {
			if len(form) < minSecretLen {
				continue
			}
			for _, escaped := range []string{url.QueryEscape(form), url.PathEscape(form)} {
				if escaped != form {
					s.add(pattern{find: escaped, n: len(escaped)})
				}
			}
		}
	}
	// Longest first, so that a secret containing another is hidden whole.
	slices.SortStableFunc(s.patterns, func(a, b pattern) int { return len(b.find) - len(a.find) })
}

func (s *Scrubber) add(p pattern) {
	if !slices.Contains(s.patterns, p) {
		s.patterns = append(s.patterns, p)
	}
}

// Text returns text with every occurrence of a registered value replaced by Mask and the user
// information of every URL dropped. A byte is hidden when either order of the two would hide it:
// the user information of a URL is found both in text and in text with the values masked (a
// password holding a '/' hides its URL's user information from URLs until it is masked), and a
// value is found in text before any user information is dropped.
func (s *Scrubber) Text(text string) string {
	if s == nil || len(s.patterns) == 0 {
		return URLs(text)
	}
	// owner[i] is the occurrence (counted from 1) whose Mask hides byte i, 0 when none does.
	owner := make([]int32, len(text))
	var occurrences int32
	for _, p := range s.patterns {
		for from := 0; from < len(text); {
			i := strings.Index(text[from:], p.find)
			if i < 0 {
				break
			}
			i += from
			if slices.ContainsFunc(owner[i:i+len(p.find)], func(o int32) bool { return o != 0 }) {
				from = i + 1 // a longer value took part of it
				continue
			}
			occurrences++
			for k := i + p.lead; k < i+p.lead+p.n; k++ {
				owner[k] = occurrences
			}
			from = i + len(p.find)
		}
	}
	if occurrences == 0 {
		return URLs(text)
	}

	drop := make([]bool, len(text))
	for _, m := range userinfoRE.FindAllStringSubmatchIndex(text, -1) {
		for k := m[3]; k < m[1]; k++ {
			drop[k] = true
		}
	}
	// The text with the values masked; first[j] and end[j] are the bytes of text that its byte j
	// stands for.
	var masked []byte
	var first, end []int
	for i := 0; i < len(text); {
		if owner[i] == 0 {
			masked = append(masked, text[i])
			first, end = append(first, i), append(end, i+1)
			i++
			continue
		}
		j := i + 1
		for j < len(text) && owner[j] == owner[i] {
			j++
		}
		for range len(Mask) {
			first, end = append(first, i), append(end, j)
		}
		masked = append(masked, Mask...)
		i = j
	}
	for _, m := range userinfoRE.FindAllSubmatchIndex(masked, -1) {
		if m[3] < m[1] {
			for k := first[m[3]]; k < end[m[1]-1]; k++ {
				drop[k] = true
			}
		}
	}

	var b strings.Builder
	b.Grow(len(text))
	var last int32
	for i := 0; i < len(text); i++ {
		switch {
		case drop[i]:
		case owner[i] != 0:
			if owner[i] != last {
				b.WriteString(Mask)
			}
			last = owner[i]
		default:
			b.WriteByte(text[i])
			last = 0
		}
	}
	return b.String()
}

// Error returns err with its text redacted as Text does; nil stays nil. errors.Is still sees the
// original error's chain; the original text is not reachable through errors.Unwrap.
func (s *Scrubber) Error(err error) error {
	if err == nil {
		return nil
	}
	return &redactedError{msg: s.Text(err.Error()), err: err}
}

// Secrets returns text with the user information of every URL it contains dropped and every
// occurrence of the given values replaced by Mask, as Scrubber.Text does.
func Secrets(text string, secrets ...string) string {
	var s Scrubber
	s.Add(secrets...)
	return s.Text(text)
}

// Error returns err with its text redacted as Secrets does; nil stays nil. errors.Is still sees
// the original error's chain; the original text is not reachable through errors.Unwrap.
func Error(err error, secrets ...string) error {
	var s Scrubber
	s.Add(secrets...)
	return s.Error(err)
}

// redactedError is an error whose text was redacted. It matches the original error's chain with
// errors.Is, but does not unwrap to it, so the original text cannot be printed by accident.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

// Is reports whether the original error matches target.
func (e *redactedError) Is(target error) bool { return errors.Is(e.err, target) }
