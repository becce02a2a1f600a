package render

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"
)

// How the wrapper of a template function (budget.wrap) checks a call beyond the deadline.
type policy int

const (
	// deepFunc: the function may walk, print or copy its arguments (toJson, toString, cat,
	// printf, int, ...), so their printed size together may not exceed MaxOutput; its result
	// is new memory and counted in full. The default, for any function not listed below.
	deepFunc policy = iota
	// listFunc: the function builds a list or map of its arguments without looking into them
	// (list, append, concat, pick, ...); the result may hold MaxCount entries and counts by
	// its entries only.
	listFunc
	// passFunc: the function returns one of its arguments, a part of one, or a small value
	// (first, get, default, empty, deepEqual, ...).
	passFunc
	// checkFunc: the arguments are measured as for deepFunc; the function counts what it
	// allocates itself (merge).
	checkFunc
)

var policies = map[string]policy{}

func init() {
	for _, n := range []string{
		"list", "tuple", "dict", "append", "push", "mustAppend", "mustPush", "prepend", "mustPrepend",
		"rest", "mustRest", "initial", "mustInitial", "reverse", "mustReverse", "slice", "mustSlice",
		"chunk", "mustChunk", "concat", "compact", "mustCompact", "uniq", "mustUniq", "without", "mustWithout",
		"pick", "omit", "keys", "values", "until", "untilStep",
		"split", "splitList", "splitn", "regexFindAll", "mustRegexFindAll", "regexSplit", "mustRegexSplit",
	} {
		policies[n] = listFunc
	}
	for _, n := range []string{
		"first", "mustFirst", "last", "mustLast", "get", "pluck", "dig", "default", "coalesce", "ternary",
		"hasKey", "empty", "all", "any", "kindOf", "kindIs", "typeOf", "typeIs", "typeIsLike", "deepEqual",
		"has", "mustHas", "required", "set", "unset",
	} {
		policies[n] = passFunc
	}
	for _, n := range []string{"merge", "mustMerge", "mergeOverwrite", "mustMergeOverwrite"} {
		policies[n] = checkFunc
	}
}

// wrap returns fn checked against b: the deadline before every call, and per fn's policy its
// arguments before and its result after the call. The wrapper returns an error besides fn's
// result, which text/template turns into the template's error.
func (b *budget) wrap(name string, fn any) any {
	fv := reflect.ValueOf(fn)
	ft := fv.Type()
	in := make([]reflect.Type, ft.NumIn())
	for i := range in {
		in[i] = ft.In(i)
	}
	out := []reflect.Type{ft.Out(0), errorType}
	p := policies[name]
	return reflect.MakeFunc(reflect.FuncOf(in, out, ft.IsVariadic()), func(args []reflect.Value) []reflect.Value {
		fail := func(err error) []reflect.Value {
			return []reflect.Value{reflect.Zero(out[0]), reflect.ValueOf(&err).Elem()}
		}
		if err := b.check(); err != nil {
			return fail(err)
		}
		if p == deepFunc || p == checkFunc {
			if err := b.measureArgs(name, args, ft.IsVariadic()); err != nil {
				return fail(err)
			}
		}
		var res []reflect.Value
		if ft.IsVariadic() {
			res = fv.CallSlice(args)
		} else {
			res = fv.Call(args)
		}
		if len(res) == 2 && !res[1].IsNil() {
			return res
		}
		if err := b.checkResult(name, p, res[0], args); err != nil {
			return fail(err)
		}
		return []reflect.Value{res[0], reflect.Zero(errorType)}
	}).Interface()
}

// measureArgs fails when the arguments of fn together would print larger than MaxOutput.
func (b *budget) measureArgs(fn string, args []reflect.Value, variadic bool) error {
	s := sizer{limit: b.lim.MaxOutput}
	for i, a := range args {
		if variadic && i == len(args)-1 {
			for j := 0; j < a.Len(); j++ {
				s.add(a.Index(j).Interface())
			}
			continue
		}
		if a.Kind() == reflect.String {
			s.bytes += a.Len()
			continue
		}
		s.add(a.Interface())
	}
	if s.over() {
		return b.tooLarge(fn, "arguments")
	}
	return nil
}

// checkResult checks and counts fn's result r per fn's policy p.
func (b *budget) checkResult(fn string, p policy, r reflect.Value, args []reflect.Value) error {
	if p == passFunc || p == checkFunc {
		return nil
	}
	for r.Kind() == reflect.Interface && !r.IsNil() {
		r = r.Elem()
	}
	switch r.Kind() {
	case reflect.String:
		if err := b.length(fn, r.Len()); err != nil {
			return err
		}
		if sharesMemory(r, args) {
			return nil
		}
		return b.charge(fn, r.Len())
	case reflect.Slice, reflect.Map:
		if err := b.count(fn, "result length", r.Len()); err != nil {
			return err
		}
	}
	if p == listFunc {
		switch r.Kind() {
		case reflect.Slice:
			if !sharesMemory(r, args) {
				return b.charge(fn, r.Len()*int(r.Type().Elem().Size()))
			}
		case reflect.Map:
			if !sharesMemory(r, args) {
				return b.charge(fn, r.Len()*(int(r.Type().Key().Size()+r.Type().Elem().Size())+16))
			}
		}
		return nil
	}
	if !r.IsValid() || sharesMemory(r, args) {
		return nil
	}
	n := sizeOf(r.Interface(), b.lim.MaxOutput)
	if n > b.lim.MaxOutput {
		return b.tooLarge(fn, "result")
	}
	return b.charge(fn, n)
}

// Names of the functions the renderer adds to every template's parse tree (instrument).
const (
	outputFunc = "_output"
	tickFunc   = "_tick"
)

// output is appended to the pipeline of every action that prints: it formats the value as
// text/template would, once it knows the value prints no larger than MaxOutput, which the
// output writer could only find out after fmt had built the whole text (a value holding
// itself, or a value shared on every level of a deep tree, prints without end).
func (b *budget) output(v reflect.Value) (string, error) {
	if err := b.check(); err != nil {
		return "", err
	}
	// As text/template's printableValue.
	if v.Kind() == reflect.Pointer {
		for ; v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface; v = v.Elem() {
			if v.IsNil() {
				break
			}
		}
	}
	if !v.IsValid() {
		return noValue, nil
	}
	if v.Kind() == reflect.String && v.Type() == reflect.TypeFor[string]() {
		return v.String(), nil
	}
	if !v.Type().Implements(errorType) && !v.Type().Implements(stringerType) {
		if v.CanAddr() && (reflect.PointerTo(v.Type()).Implements(errorType) || reflect.PointerTo(v.Type()).Implements(stringerType)) {
			v = v.Addr()
		} else {
			switch v.Kind() {
			case reflect.Chan, reflect.Func:
				return "", fmt.Errorf("can't print value of type %s", v.Type())
			}
		}
	}
	iface := v.Interface()
	if sizeOf(iface, b.lim.MaxOutput) > b.lim.MaxOutput {
		return "", &LimitError{Limit: LimitOutput, Detail: fmt.Sprintf("value to print larger than the output limit of %s", formatBytes(b.lim.MaxOutput))}
	}
	return fmt.Sprint(iface), nil
}

// tick starts every iteration of range and every call of a defined template, so that a loop
// or recursion that calls no function and prints nothing still stops at the deadline.
func (b *budget) tick() (string, error) {
	return "", b.check()
}

// capped returns the replacements of sprig's and text/template's functions that check their
// arguments before they allocate; sprig are sprig's functions, which it may call: read only
// (baseFuncs), never changed by the caller.
func (b *budget) capped(sprig template.FuncMap) template.FuncMap {
	orig := sprig
	f := template.FuncMap{
		"repeat": func(count int, s string) (string, error) {
			if err := b.count("repeat", "count", count); err != nil {
				return "", err
			}
			if count > 0 {
				if err := b.length("repeat", count*len(s)); err != nil {
					return "", err
				}
			}
			return strings.Repeat(s, count), nil
		},
		"until": func(count int) ([]int, error) {
			step := 1
			if count < 0 {
				step = -1
			}
			return b.untilStep("until", 0, count, step)
		},
		"untilStep": func(start, stop, step int) ([]int, error) {
			return b.untilStep("untilStep", start, stop, step)
		},
		"seq":     b.seq,
		"indent":  func(n int, s string) (string, error) { return b.indent("indent", n, s, "") },
		"nindent": func(n int, s string) (string, error) { return b.indent("nindent", n, s, "\n") },
		"replace": func(old, new, src string) (string, error) {
			n := strings.Count(src, old)
			if err := b.length("replace", len(src)+n*(len(new)-len(old))); err != nil {
				return "", err
			}
			return strings.ReplaceAll(src, old, new), nil
		},
		"wrapWith": func(l int, sep, s string) (string, error) {
			if sep == "" {
				sep = "\n"
			}
			// Every two line breaks consume at least l bytes, every one at least one.
			breaks := len(s)
			if l >= 2 {
				breaks = min(breaks, 2*len(s)/l+2)
			}
			if err := b.length("wrapWith", len(s)+breaks*len(sep)); err != nil {
				return "", err
			}
			return orig["wrapWith"].(func(int, string, string) string)(l, sep, s), nil
		},
		"join": func(sep string, v any) (string, error) {
			n := 1
			if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
				n = rv.Len()
			}
			if err := b.length("join", max(n-1, 0)*len(sep)); err != nil {
				return "", err
			}
			return orig["join"].(func(string, any) string)(sep, v), nil
		},
		"split": func(sep, s string) (map[string]string, error) {
			if err := b.count("split", "number of parts", parts(s, sep, -1)); err != nil {
				return nil, err
			}
			return orig["split"].(func(string, string) map[string]string)(sep, s), nil
		},
		"splitList": func(sep, s string) ([]string, error) {
			if err := b.count("splitList", "number of parts", parts(s, sep, -1)); err != nil {
				return nil, err
			}
			return strings.Split(s, sep), nil
		},
		"splitn": func(sep string, n int, s string) (map[string]string, error) {
			if err := b.count("splitn", "number of parts", parts(s, sep, n)); err != nil {
				return nil, err
			}
			return orig["splitn"].(func(string, int, string) map[string]string)(sep, n, s), nil
		},
		"regexReplaceAll": func(regex, s, repl string) (string, error) {
			if err := b.regexReplace("regexReplaceAll", regex, s, repl, false); err != nil {
				return "", err
			}
			return orig["regexReplaceAll"].(func(string, string, string) string)(regex, s, repl), nil
		},
		"mustRegexReplaceAll": func(regex, s, repl string) (string, error) {
			if err := b.regexReplace("mustRegexReplaceAll", regex, s, repl, false); err != nil {
				return "", err
			}
			return orig["mustRegexReplaceAll"].(func(string, string, string) (string, error))(regex, s, repl)
		},
		"regexReplaceAllLiteral": func(regex, s, repl string) (string, error) {
			if err := b.regexReplace("regexReplaceAllLiteral", regex, s, repl, true); err != nil {
				return "", err
			}
			return orig["regexReplaceAllLiteral"].(func(string, string, string) string)(regex, s, repl), nil
		},
		"mustRegexReplaceAllLiteral": func(regex, s, repl string) (string, error) {
			if err := b.regexReplace("mustRegexReplaceAllLiteral", regex, s, repl, true); err != nil {
				return "", err
			}
			return orig["mustRegexReplaceAllLiteral"].(func(string, string, string) (string, error))(regex, s, repl)
		},
		"regexFindAll": func(regex, s string, n int) []string {
			return orig["regexFindAll"].(func(string, string, int) []string)(regex, s, b.atMostCount(n))
		},
		"mustRegexFindAll": func(regex, s string, n int) ([]string, error) {
			return orig["mustRegexFindAll"].(func(string, string, int) ([]string, error))(regex, s, b.atMostCount(n))
		},
		"regexSplit": func(regex, s string, n int) []string {
			return orig["regexSplit"].(func(string, string, int) []string)(regex, s, b.atMostCount(n))
		},
		"mustRegexSplit": func(regex, s string, n int) ([]string, error) {
			return orig["mustRegexSplit"].(func(string, string, int) ([]string, error))(regex, s, b.atMostCount(n))
		},
		"uniq":     b.uniq,
		"mustUniq": b.uniq,
		"dict": func(kv ...any) (map[string]any, error) {
			for i := 0; i < len(kv); i += 2 {
				if _, ok := kv[i].(string); ok {
					continue
				}
				n := sizeOf(kv[i], b.lim.MaxOutput)
				if n > b.lim.MaxOutput {
					return nil, b.tooLarge("dict", "key")
				}
				if err := b.charge("dict", n); err != nil {
					return nil, err
				}
			}
			return orig["dict"].(func(...any) map[string]any)(kv...), nil
		},
		"set": func(d map[string]any, key string, value any) (map[string]any, error) {
			if err := b.charge("set", len(key)+64); err != nil {
				return nil, err
			}
			return orig["set"].(func(map[string]any, string, any) map[string]any)(d, key, value), nil
		},
		// text/template's builtins that print their arguments; the wrapper measures those.
		"print":    fmt.Sprint,
		"println":  fmt.Sprintln,
		"printf":   b.printf,
		"html":     template.HTMLEscaper,
		"js":       template.JSEscaper,
		"urlquery": template.URLQueryEscaper,
	}
	for _, n := range []string{"merge", "mustMerge", "mergeOverwrite", "mustMergeOverwrite"} {
		switch fn := orig[n].(type) {
		case func(map[string]any, ...map[string]any) any:
			f[n] = func(dst map[string]any, srcs ...map[string]any) (any, error) {
				if err := b.chargeSizes(n, srcs); err != nil {
					return nil, err
				}
				return fn(dst, srcs...), nil
			}
		case func(map[string]any, ...map[string]any) (any, error):
			f[n] = func(dst map[string]any, srcs ...map[string]any) (any, error) {
				if err := b.chargeSizes(n, srcs); err != nil {
					return nil, err
				}
				return fn(dst, srcs...)
			}
		}
	}
	return f
}

// chargeSizes counts the printed size of the maps merge copies into its destination.
func (b *budget) chargeSizes(fn string, srcs []map[string]any) error {
	for _, s := range srcs {
		if err := b.charge(fn, sizeOf(s, b.lim.MaxOutput)); err != nil {
			return err
		}
	}
	return nil
}

// untilStep is sprig's untilStep, with the length of the list checked before it is built (and
// without sprig's endless loop when the counter overflows).
func (b *budget) untilStep(fn string, start, stop, step int) ([]int, error) {
	var n uint64
	switch {
	case stop < start && step < 0:
		d, s := uint64(start)-uint64(stop), -uint64(step)
		n = d / s
		if d%s != 0 {
			n++
		}
	case stop > start && step > 0:
		d, s := uint64(stop)-uint64(start), uint64(step)
		n = d / s
		if d%s != 0 {
			n++
		}
	}
	if n > uint64(b.lim.MaxCount) {
		what := "list length"
		if fn == "until" {
			what = "count"
		}
		return nil, &LimitError{Func: fn, Limit: LimitCount, Detail: fmt.Sprintf("%s %d exceeds the limit of %d", what, n, b.lim.MaxCount)}
	}
	v := make([]int, n)
	for i := range v {
		v[i] = start + i*step
	}
	return v, nil
}

// seq is sprig's seq, with the length of the list checked before it is built.
func (b *budget) seq(params ...int) (string, error) {
	var list []int
	var err error
	switch len(params) {
	case 1:
		start, end, inc := 1, params[0], 1
		if end < start {
			inc = -1
		}
		list, err = b.untilStep("seq", start, end+inc, inc)
	case 2:
		start, end, step := params[0], params[1], 1
		if end < start {
			step = -1
		}
		list, err = b.untilStep("seq", start, end+step, step)
	case 3:
		start, step, end, inc := params[0], params[1], params[2], 1
		if end < start {
			inc = -1
			if step > 0 {
				return "", nil
			}
		}
		list, err = b.untilStep("seq", start, end+inc, step)
	default:
		return "", nil
	}
	if err != nil {
		return "", err
	}
	out := make([]byte, 0, 8*len(list))
	for i, n := range list {
		if i > 0 {
			out = append(out, ' ')
		}
		out = strconv.AppendInt(out, int64(n), 10)
		if err := b.length("seq", len(out)); err != nil {
			return "", err
		}
	}
	return string(out), nil
}

// indent is sprig's indent (nl "") and nindent (nl "\n"), with the length checked first.
func (b *budget) indent(fn string, n int, s, nl string) (string, error) {
	if n > b.lim.MaxOutput {
		return "", b.length(fn, n)
	}
	if n < 0 {
		return "", errors.New("strings: negative Repeat count") // as sprig's
	}
	if err := b.length(fn, len(nl)+len(s)+n*(strings.Count(s, "\n")+1)); err != nil {
		return "", err
	}
	pad := strings.Repeat(" ", n)
	return nl + pad + strings.ReplaceAll(s, "\n", "\n"+pad), nil
}

// atMostCount is n, or MaxCount+1 if n is negative (all) or larger: a function returning
// that many results fails (checkResult) without building a longer list first.
func (b *budget) atMostCount(n int) int {
	if n < 0 || n > b.lim.MaxCount {
		return b.lim.MaxCount + 1
	}
	return n
}

// parts is the number of strings strings.SplitN(s, sep, n) returns.
func parts(s, sep string, n int) int {
	if n == 0 {
		return 0
	}
	c := strings.Count(s, sep) + 1
	if sep == "" {
		c = utf8.RuneCountInString(s)
	}
	if n > 0 && n < c {
		return n
	}
	return c
}

// regexReplace checks sprig's regexReplaceAll(Literal) before it runs: every match becomes
// repl, and every $ of repl (unless literal) at most the match.
func (b *budget) regexReplace(fn, regex, s, repl string, literal bool) error {
	re, err := regexp.Compile(regex)
	if err != nil {
		return nil //nolint:nilerr // sprig reports it when it compiles the expression itself
	}
	matches := re.FindAllStringIndex(s, b.lim.MaxCount+1)
	if err := b.count(fn, "number of matches", len(matches)); err != nil {
		return err
	}
	matched := 0
	for _, m := range matches {
		matched += m[1] - m[0]
	}
	dollars := 0
	if !literal {
		dollars = strings.Count(repl, "$")
	}
	return b.length(fn, len(s)+len(matches)*len(repl)+dollars*matched)
}

// uniq is sprig's uniq and mustUniq, checking the deadline while it compares every element
// with every other.
func (b *budget) uniq(list any) ([]any, error) {
	v := reflect.ValueOf(list)
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
		return nil, fmt.Errorf("Cannot find uniq on type %s", v.Kind()) //nolint:staticcheck // sprig's message, word for word
	}
	dest := []any{}
	for i := 0; i < v.Len(); i++ {
		if err := b.check(); err != nil {
			return nil, err
		}
		item := v.Index(i).Interface()
		found := false
		for _, d := range dest {
			if reflect.DeepEqual(d, item) {
				found = true
				break
			}
		}
		if !found {
			dest = append(dest, item)
		}
	}
	return dest, nil
}

// printf is text/template's printf, once the length of its result is known to stay within
// MaxOutput: a width or precision pads every value a list or map argument holds.
func (b *budget) printf(format string, args ...any) (string, error) {
	if err := b.length("printf", printfSize(format, args, b.lim.MaxOutput)); err != nil {
		return "", err
	}
	return fmt.Sprintf(format, args...), nil
}

// printfSize bounds the length of fmt.Sprintf(format, args...), or returns more than limit. It
// follows fmt's doPrintf: which argument each verb prints, with which width and precision.
func printfSize(format string, args []any, limit int) int {
	type measure struct{ bytes, values int }
	measured := make([]*measure, len(args))
	arg := func(i int) measure {
		if measured[i] == nil {
			s := sizer{limit: limit}
			s.add(args[i])
			// 32: a type name, for %!verb(type=value)
			measured[i] = &measure{bytes: s.bytes + 32, values: max(s.values, 1)}
		}
		return *measured[i]
	}
	end := len(format)
	intFromArg := func(argNum int) (int, int) { // fmt's intFromArg: |width| and the next argNum
		if argNum >= len(args) {
			return 0, argNum
		}
		var n int64
		switch v := reflect.ValueOf(args[argNum]); v.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			n = v.Int()
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			n = int64(min(v.Uint(), 1<<62))
		}
		if n < 0 {
			n = -n
		}
		if n > 1e6 || n < 0 { // fmt's tooLarge
			n = 0
		}
		return int(n), argNum + 1
	}
	parsenum := func(i int) (int, bool, int) { // fmt's parsenum(format, i, end)
		n, isnum := 0, false
		for ; i < end && '0' <= format[i] && format[i] <= '9'; i++ {
			if n > 1e6 { // fmt's tooLarge, checked before each digit: a width or precision
				return 0, false, end // written out reaches 10,000,009
			}
			n = n*10 + int(format[i]-'0')
			isnum = true
		}
		return n, isnum, i
	}
	reordered, goodArgNum := false, true
	argNumber := func(argNum, i int) (int, int, bool) { // fmt's argNumber
		if i >= end || format[i] != '[' {
			return argNum, i, false
		}
		reordered = true
		// fmt's parseArgNumber
		index, wid, ok := 0, 1, false
		if end-i >= 3 {
			if j := strings.IndexByte(format[i+1:], ']'); j >= 0 {
				j++ // index of ']' in format[i:]
				n, isnum, newi := parsenum(i + 1)
				if isnum && newi == i+j {
					index, wid, ok = n-1, j+1, true
				} else {
					wid = j + 1
				}
			}
		}
		if ok && 0 <= index && index < len(args) {
			return index, i + wid, true
		}
		goodArgNum = false
		return argNum, i + wid, ok
	}
	size := len(format)
	argNum := 0
	for i := 0; i < end && size <= limit; {
		if format[i] != '%' {
			i++
			continue
		}
		i++
		goodArgNum = true
		for i < end && strings.IndexByte("#0+- ", format[i]) >= 0 {
			i++
		}
		var afterIndex bool
		argNum, i, afterIndex = argNumber(argNum, i)
		pad := 0
		if i < end && format[i] == '*' {
			i++
			var w int
			w, argNum = intFromArg(argNum)
			pad += w
			afterIndex = false
		} else {
			w, isnum, newi := parsenum(i)
			i = newi
			if afterIndex && isnum {
				goodArgNum = false
			}
			pad += w
		}
		if i+1 < end && format[i] == '.' {
			i++
			if afterIndex {
				goodArgNum = false
			}
			argNum, i, afterIndex = argNumber(argNum, i)
			if i < end && format[i] == '*' {
				i++
				var p int
				p, argNum = intFromArg(argNum)
				pad += p
				afterIndex = false
			} else {
				p, _, newi := parsenum(i)
				i = newi
				pad += p
			}
		}
		if !afterIndex {
			argNum, i, _ = argNumber(argNum, i)
		}
		size += 32 // %!v(MISSING), %!(BADWIDTH) and the like
		if i >= end {
			break
		}
		verb, w := utf8.DecodeRuneInString(format[i:])
		i += w
		if verb == '%' || !goodArgNum || argNum >= len(args) {
			continue
		}
		m := arg(argNum)
		size += m.bytes + pad*m.values
		argNum++
	}
	if !reordered {
		for ; argNum < len(args) && size <= limit; argNum++ { // %!(EXTRA type=value, ...)
			size += arg(argNum).bytes + 2
		}
	}
	return size
}
