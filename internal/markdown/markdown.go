// Package markdown holds small helpers for the Markdown the project generates (the API
// reference, pull request descriptions).
package markdown

import "strings"

// CodeSpan formats s as a Markdown code span: fenced with one backtick more than the longest
// run of backticks inside it, and padded with a space when it starts or ends with a backtick.
func CodeSpan(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}
