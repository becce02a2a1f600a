// Package markdown holds small helpers for the Markdown the project generates (the API
// reference, pull request descriptions).
package markdown

import "strings"

// CodeSpan formats s as a Markdown code span: fenced with one backtick more than the longest
// run of backticks inside it, and padded with a space when it starts or ends with a backtick.
func CodeSpan(s string) string {
	fence := Fence(s, 1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// Fence is a run of backticks longer than any run inside text, and at least least long: the
// fence of a code span (1) or of a fenced code block (3) that text cannot close.
func Fence(text string, least int) string {
	longest, run := 0, 0
	for _, r := range text {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(least, longest+1))
}
