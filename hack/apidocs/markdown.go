package main

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/clusterstack-io/clusterstack-operator/internal/markdown"
)

// text escapes godoc prose for a Markdown paragraph: code spans (`...`) are kept, and outside
// them the characters Markdown or HTML would interpret (<, >, *, \) are escaped, so that
// "<provider>-<name>" is not taken for HTML tags.
func text(s string) string { return escape(s, false) }

// cell escapes godoc prose for a cell of a Markdown table: as text, and '|' also inside code
// spans (GitHub splits the row on it before it reads code spans), paragraphs joined by <br><br>.
func cell(s string) string {
	paras := strings.Split(s, "\n\n")
	for i, p := range paras {
		paras[i] = escape(strings.ReplaceAll(p, "\n", " "), true)
	}
	return strings.Join(paras, "<br><br>")
}

func escape(s string, inTable bool) string {
	var b strings.Builder
	inCode := false
	// An odd backtick out is text: find where the last complete code span ends.
	lastPair := len(s)
	if strings.Count(s, "`")%2 == 1 {
		lastPair = strings.LastIndexByte(s, '`')
	}
	for i, r := range s {
		switch {
		case r == '`' && i < lastPair:
			inCode = !inCode
			b.WriteRune(r)
		case r == '|' && inTable:
			b.WriteString(`\|`)
		case inCode:
			b.WriteRune(r)
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '*' || r == '\\' || r == '`' || r == '[' || r == ']':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// code formats s as a code span: fenced with more backticks than any run inside it, padded
// when it starts or ends with a backtick; '|' is escaped when the span is in a table.
func code(s string, inTable bool) string {
	if inTable {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	return markdown.CodeSpan(s)
}

// anchor is the fragment GitHub gives a heading: lower case, spaces to '-', punctuation other
// than '-' and '_' dropped.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// firstSentence is the godoc's first sentence: up to the first period followed by a space and
// an upper-case letter (so "e.g. aws" does not end it), or the first paragraph.
func firstSentence(s string) string {
	s, _, _ = strings.Cut(s, "\n\n")
	for i := 0; i+2 < len(s); i++ {
		if s[i] == '.' && s[i+1] == ' ' {
			r, _ := utf8.DecodeRuneInString(s[i+2:])
			if unicode.IsUpper(r) {
				return s[:i+1]
			}
		}
	}
	return s
}

// upperFirst makes the first letter of a sentence upper case, unless the first word is a name
// that must stay as written ("spec.version", "`kubectl ...`").
func upperFirst(s string) string {
	word, _, _ := strings.Cut(s, " ")
	if strings.ContainsAny(strings.TrimRight(word, ".,;:"), ".`-/") {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}
