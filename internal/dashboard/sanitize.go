package dashboard

import (
	"regexp"
	"strings"
	"unicode"
)

// escapeSequence matches terminal escape sequences: CSI ("ESC [ ... final byte", colours and
// cursor moves), OSC ("ESC ] ... BEL or ESC \", titles and hyperlinks) and two-byte ones.
var escapeSequence = regexp.MustCompile(`\x1b(\[[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]|\][^\x07\x1b]*(\x07|\x1b\\)?|[\x40-\x5a\x5c-\x5f])`)

// StripControl removes terminal escape sequences and control characters (but tab and newline)
// from s. Flux's messages quote what charts, Git servers and workload API servers said, and
// the pages show them: html/template escapes markup, this removes what a browser would show as
// garbage or what a copy into a terminal would run.
func StripControl(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	s = escapeSequence.ReplaceAllString(s, "")
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return -1
		}
		return r
	}, s)
}

// isControl is a C0 or C1 control character other than tab and newline, DEL, or a Unicode
// bidirectional override (which can make a message read differently from what it says).
func isControl(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case unicode.IsControl(r):
		return true
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
