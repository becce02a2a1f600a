package render

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"
	"unsafe"
)

// Defaults of Limits: what Render and RenderComponent apply, and what RenderWithLimits applies
// for a zero field.
const (
	// DefaultTimeout is how long one component's template may render.
	DefaultTimeout = 2 * time.Second
	// DefaultMaxOutput is the most bytes one component's template may print. It is also the
	// largest string, and the largest value by printed size, that a template function may take
	// or return: a larger one could not be printed anyway.
	DefaultMaxOutput = 512 << 10
	// DefaultMaxTotalOutput is the most bytes the ConfigMap data of all components may hold
	// together (keys and values), below the 1 MiB a ConfigMap can hold.
	DefaultMaxTotalOutput = 900 << 10
	// DefaultMaxCount is the longest list or map a template function may return, and the
	// largest count (repeat, until, seq, splitn) it accepts.
	DefaultMaxCount = 100_000
	// DefaultMaxAlloc is the most bytes the template functions of one component may allocate
	// in total (strings, lists and maps they return, values added with set and merge).
	DefaultMaxAlloc = 64 << 20
)

// Limits bound the time and memory rendering one component's template may take, and the size
// of what it produces. A zero field takes its Default value.
//
// text/template cannot be interrupted from outside, so the limits are enforced from inside:
// every template function, every output write and every iteration of range or call of a
// defined template checks the deadline; functions that could allocate without bound (repeat,
// until, seq, indent, replace, join, printf widths, toJson of a huge value, ...) check their
// arguments before they allocate. A template can hence overrun its Timeout only by the time
// one bounded function call takes.
type Limits struct {
	// Timeout is how long one component's template may render (DefaultTimeout).
	Timeout time.Duration
	// MaxOutput is the most bytes one component's template may print, and the largest string
	// or printed value a template function may take or return (DefaultMaxOutput).
	MaxOutput int
	// MaxTotalOutput is the most bytes of ConfigMap data, keys and values, all components of
	// one Render may produce together (DefaultMaxTotalOutput).
	MaxTotalOutput int
	// MaxCount is the longest list or map a template function may return, and the largest
	// count a function such as repeat, until or splitn accepts (DefaultMaxCount).
	MaxCount int
	// MaxAlloc is the most bytes the template functions of one component may allocate in
	// total (DefaultMaxAlloc).
	MaxAlloc int
}

// withDefaults returns l with every zero or negative field set to its default.
func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.MaxOutput <= 0 {
		l.MaxOutput = DefaultMaxOutput
	}
	if l.MaxTotalOutput <= 0 {
		l.MaxTotalOutput = DefaultMaxTotalOutput
	}
	if l.MaxCount <= 0 {
		l.MaxCount = DefaultMaxCount
	}
	if l.MaxAlloc <= 0 {
		l.MaxAlloc = DefaultMaxAlloc
	}
	return l
}

// ErrLimitExceeded is matched (errors.Is) by every error of a template that hit one of its
// Limits; the error itself is a *LimitError wrapped in the *Error naming component and file.
// Callers can report such a failure with a reason of its own (say "RenderLimitExceeded"): the
// template, not the cluster, has to change.
var ErrLimitExceeded = errors.New("render limit exceeded")

// Names of the limits in LimitError.Limit.
const (
	// LimitTime: the template rendered longer than Limits.Timeout.
	LimitTime = "time"
	// LimitOutput: the template printed more than Limits.MaxOutput.
	LimitOutput = "output"
	// LimitTotalOutput: the ConfigMap data of all components exceeds Limits.MaxTotalOutput.
	LimitTotalOutput = "total output"
	// LimitSize: a function's argument or result, a string or a printed value, is larger than
	// Limits.MaxOutput.
	LimitSize = "size"
	// LimitCount: a function's count or resulting list is longer than Limits.MaxCount.
	LimitCount = "count"
	// LimitAlloc: the template's functions allocated more than Limits.MaxAlloc.
	LimitAlloc = "memory"
)

// LimitError is a limit a template hit. It matches ErrLimitExceeded with errors.Is, and it is
// found inside the *Error (and text/template's error) with errors.As.
type LimitError struct {
	// Func is the template function that hit the limit, or "" for the template as a whole.
	Func string
	// Limit names the limit: LimitTime, LimitOutput, LimitTotalOutput, LimitSize, LimitCount
	// or LimitAlloc.
	Limit string
	// Detail says what exceeded the limit, and the limit.
	Detail string
}

// Error is "function repeat: count 2000000000 exceeds the limit of 100000", or just the detail
// when no function hit the limit.
func (e *LimitError) Error() string {
	if e.Func != "" {
		return "function " + e.Func + ": " + e.Detail
	}
	return e.Detail
}

// Is reports whether target is ErrLimitExceeded.
func (e *LimitError) Is(target error) bool { return target == ErrLimitExceeded }

// formatBytes formats a limit in bytes the way a person writes it: 512KiB, 64MiB, 1000 bytes.
func formatBytes(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n) + " bytes"
}

// budget is one component render's share of the limits: its deadline and what its functions
// have allocated so far. A budget without deadline (FuncMap) checks only the per-call caps.
type budget struct {
	lim      Limits
	deadline time.Time // zero: none
	alloc    bool      // count allocations against lim.MaxAlloc
	used     int
}

func newBudget(lim Limits, start time.Time) *budget {
	lim = lim.withDefaults()
	return &budget{lim: lim, deadline: start.Add(lim.Timeout), alloc: true}
}

// check fails once the deadline has passed.
func (b *budget) check() error {
	if !b.deadline.IsZero() && time.Now().After(b.deadline) {
		return &LimitError{Limit: LimitTime, Detail: fmt.Sprintf("rendering took longer than the limit of %v", b.lim.Timeout)}
	}
	return nil
}

// charge counts n bytes that fn allocated against the allocation limit.
func (b *budget) charge(fn string, n int) error {
	if !b.alloc || n <= 0 {
		return nil
	}
	b.used += n
	if b.used > b.lim.MaxAlloc {
		return &LimitError{Func: fn, Limit: LimitAlloc, Detail: fmt.Sprintf("the template functions allocated more than the limit of %s", formatBytes(b.lim.MaxAlloc))}
	}
	return nil
}

// count fails when fn's count n (of list elements, repetitions, parts) exceeds MaxCount.
func (b *budget) count(fn, what string, n int) error {
	if n > b.lim.MaxCount {
		return &LimitError{Func: fn, Limit: LimitCount, Detail: fmt.Sprintf("%s %d exceeds the limit of %d", what, n, b.lim.MaxCount)}
	}
	return nil
}

// length fails when fn's result would be n > MaxOutput bytes long.
func (b *budget) length(fn string, n int) error {
	if n > b.lim.MaxOutput || n < 0 {
		if n < 0 { // overflowed
			n = math.MaxInt
		}
		return &LimitError{Func: fn, Limit: LimitSize, Detail: fmt.Sprintf("result of %d bytes exceeds the limit of %s", n, formatBytes(b.lim.MaxOutput))}
	}
	return nil
}

// tooLarge is the error of fn given or producing a value whose printed form would exceed
// MaxOutput. It gives no size: a walk stops counting past the limit, in map order.
func (b *budget) tooLarge(fn, what string) error {
	return &LimitError{Func: fn, Limit: LimitSize, Detail: fmt.Sprintf("%s larger than the limit of %s", what, formatBytes(b.lim.MaxOutput))}
}

// limitWriter is the template's output: it fails the write that would take it past max bytes,
// and every write once the deadline has passed.
type limitWriter struct {
	b   *budget
	buf []byte
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if err := w.b.check(); err != nil {
		return 0, err
	}
	if len(w.buf)+len(p) > w.b.lim.MaxOutput {
		return 0, &LimitError{Limit: LimitOutput, Detail: fmt.Sprintf("template exceeded the output limit of %s", formatBytes(w.b.lim.MaxOutput))}
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// sizer estimates how many bytes fmt's %v prints for values, and how many values (map keys,
// elements, scalars) they hold, walking maps, lists, pointers and structs. A value reachable
// on several paths counts on each, as fmt, encoding/json and copystructure visit it on each,
// and a cycle counts until the limit. It stops counting once past limit, so that measuring a
// huge value costs no more than measuring one of the limit's size.
type sizer struct {
	limit  int
	bytes  int
	values int
}

var (
	errorType    = reflect.TypeFor[error]()
	stringerType = reflect.TypeFor[fmt.Stringer]()
)

// over reports whether the walk has passed its limit.
func (s *sizer) over() bool { return s.bytes > s.limit }

// add counts v.
func (s *sizer) add(v any) {
	if s.over() {
		return
	}
	s.values++
	switch t := v.(type) {
	case nil:
		s.bytes += 5 // <nil>
	case string:
		s.bytes += len(t)
	case bool:
		s.bytes += 5
	case int:
		s.bytes += intLen(int64(t))
	case int64:
		s.bytes += intLen(t)
	case float64:
		var buf [32]byte
		s.bytes += len(strconv.AppendFloat(buf[:0], t, 'g', -1, 64))
	case []any:
		s.bytes += 2
		for _, e := range t {
			s.bytes++
			s.add(e)
			if s.over() {
				return
			}
		}
	case map[string]any:
		s.bytes += 5 // map[]
		for k, e := range t {
			s.values++
			s.bytes += len(k) + 2
			s.add(e)
			if s.over() {
				return
			}
		}
	case []string:
		s.bytes += 2
		for _, e := range t {
			s.values++
			s.bytes += len(e) + 1
			if s.over() {
				return
			}
		}
	case []int:
		s.bytes += 2
		for _, e := range t {
			s.values++
			s.bytes += intLen(int64(e)) + 1
			if s.over() {
				return
			}
		}
	default:
		s.addValue(reflect.ValueOf(v), 0)
	}
}

// addValue counts a value of a type add has no fast path for.
func (s *sizer) addValue(v reflect.Value, depth int) {
	if s.over() {
		return
	}
	if !v.IsValid() {
		s.bytes += 5
		return
	}
	if depth > 0 {
		s.values++
	}
	t := v.Type()
	isNil := isNilable(v.Kind()) && v.IsNil()
	if (t.Implements(errorType) || t.Implements(stringerType)) && !isNil && v.CanInterface() {
		// fmt prints what the method returns; these are small values such as times and
		// versions from sprig's functions.
		switch m := v.Interface().(type) {
		case error:
			s.bytes += len(m.Error())
		case fmt.Stringer:
			s.bytes += len(m.String())
		}
		return
	}
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			s.bytes += 5
			return
		}
		s.bytes++ // &
		s.addValue(v.Elem(), depth)
	case reflect.String:
		s.bytes += v.Len()
	case reflect.Slice, reflect.Array:
		s.bytes += 2
		for i := 0; i < v.Len() && !s.over(); i++ {
			s.bytes++
			s.addValue(v.Index(i), depth+1)
		}
	case reflect.Map:
		s.bytes += 5
		for it := v.MapRange(); it.Next() && !s.over(); {
			s.bytes += 2
			s.addValue(it.Key(), depth+1)
			s.addValue(it.Value(), depth+1)
		}
	case reflect.Struct:
		s.bytes += 2
		for i := 0; i < v.NumField() && !s.over(); i++ {
			s.bytes++
			s.addValue(v.Field(i), depth+1)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s.bytes += intLen(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		s.bytes += 20
	case reflect.Bool:
		s.bytes += 5
	default: // floats, complex numbers, funcs, channels, unsafe pointers
		s.bytes += 48
	}
}

func isNilable(k reflect.Kind) bool {
	switch k {
	case reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Pointer, reflect.Slice:
		return true
	}
	return false
}

// intLen is the length of i in decimal.
func intLen(i int64) int {
	n := 1
	if i < 0 {
		n++
		if i == math.MinInt64 {
			return 20
		}
		i = -i
	}
	for ; i >= 10; i /= 10 {
		n++
	}
	return n
}

// sizeOf is the estimated printed size of v, or more than limit.
func sizeOf(v any, limit int) int {
	s := sizer{limit: limit}
	s.add(v)
	return s.bytes
}

// sharesMemory reports whether the string, slice or map r is (part of) the memory of one of
// args, so that returning it allocated nothing.
func sharesMemory(r reflect.Value, args []reflect.Value) bool {
	var p, n uintptr
	switch r.Kind() {
	case reflect.String:
		p, n = uintptr(unsafe.Pointer(unsafe.StringData(r.String()))), uintptr(r.Len())
	case reflect.Slice:
		p, n = r.Pointer(), uintptr(r.Len())*r.Type().Elem().Size()
	case reflect.Map:
		p = r.Pointer()
	default:
		return false
	}
	if p == 0 {
		return true // empty
	}
	for _, a := range args {
		for a.Kind() == reflect.Interface && !a.IsNil() {
			a = a.Elem()
		}
		if a.Kind() != r.Kind() {
			continue
		}
		var q, m uintptr
		switch a.Kind() {
		case reflect.String:
			q, m = uintptr(unsafe.Pointer(unsafe.StringData(a.String()))), uintptr(a.Len())
		case reflect.Slice:
			q, m = a.Pointer(), uintptr(a.Cap())*a.Type().Elem().Size()
		case reflect.Map:
			if a.Pointer() == p {
				return true
			}
			continue
		}
		if q != 0 && p >= q && p+n <= q+m {
			return true
		}
	}
	return false
}
