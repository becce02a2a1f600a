package render

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"text/template"
)

// A values template is parsed and instrumented once and executed many times: every Cluster of a
// release renders the same templates, and every reconcile of a Cluster renders them again.
// Building the checked functions of a budget (funcs) for all of sprig's ~200 functions cost more
// than the render itself, so an execution binds only the functions its template can call.

// maxParsed bounds the parsed templates kept; past it the cache starts over (and parses again
// what is rendered next). A template's identity is its file name and text: ten releases in use
// with ten components each and a shared template take 110.
const maxParsed = 256

var parsed = struct {
	sync.Mutex
	m map[parsedKey]*parsedTemplate
}{m: map[parsedKey]*parsedTemplate{}}

type parsedKey struct{ name, text string }

// parsedTemplate is an instrumented parse of a template: t must not be executed itself (its
// functions are parseFuncs); executions run its trees bound to their budget (bind).
type parsedTemplate struct {
	t *template.Template
	// calls are the functions the template may call: every function whose name occurs in its
	// text (a function the template calls must be named there; more is harmless).
	calls []string
}

// parseFuncs has every function name of value templates, each bound to nothing: parsing needs
// only the names. Calling one is an error, never a call without limits.
var parseFuncs = func() template.FuncMap {
	f := template.FuncMap{}
	for n := range funcs(unboundedBudget(), nil) {
		f[n] = func(...any) (any, error) { return nil, fmt.Errorf("function %q is not bound to a render budget", n) }
	}
	return f
}()

// funcNames are the names in parseFuncs, sorted.
var funcNames = func() []string {
	return slices.Sorted(maps.Keys(parseFuncs))
}()

// parseTemplate returns the instrumented parse of text, named name, from the cache or parsed now.
// A parse error is not kept.
func parseTemplate(name, text string) (*parsedTemplate, error) {
	k := parsedKey{name: name, text: text}
	parsed.Lock()
	p, ok := parsed.m[k]
	parsed.Unlock()
	if ok {
		return p, nil
	}
	t, err := template.New(name).Funcs(parseFuncs).Parse(text)
	if err != nil {
		return nil, err
	}
	instrument(t)
	p = &parsedTemplate{t: t, calls: []string{outputFunc, tickFunc}}
	for _, n := range funcNames {
		if strings.Contains(text, n) {
			p.calls = append(p.calls, n)
		}
	}
	parsed.Lock()
	if len(parsed.m) >= maxParsed {
		clear(parsed.m)
	}
	parsed.m[k] = p
	parsed.Unlock()
	return p, nil
}

// shadowed are the functions of value templates that replace a builtin of text/template of the
// same name (print, printf, ..., by checked versions). A template that does not call one still
// gets a failing stand-in, so that nothing can reach the unchecked builtin.
var shadowed = func() []string {
	var names []string
	for _, n := range funcNames {
		if _, err := template.New("").Parse("{{ " + n + " }}"); err == nil {
			names = append(names, n)
		}
	}
	return names
}()

// bind returns a template to execute p with the functions p calls checked against b: a new
// template holding p's parse trees, which are only read.
func (p *parsedTemplate) bind(b *budget) (*template.Template, error) {
	f := funcs(b, p.calls)
	f[outputFunc] = b.output
	f[tickFunc] = b.tick
	for _, n := range shadowed {
		if _, ok := f[n]; !ok {
			f[n] = parseFuncs[n]
		}
	}
	t := template.New(p.t.Name()).Funcs(f)
	for _, tt := range p.t.Templates() {
		if tt.Tree == nil {
			continue
		}
		if _, err := t.AddParseTree(tt.Name(), tt.Tree); err != nil {
			return nil, err
		}
	}
	return t, nil
}
