// Package leakscan checks that no credential of the management cluster leaks out of Secrets:
// into an object the operator generated or reports status on, into an Event, or into the
// operator's log. The end-to-end and fault suites use it (tests only). It has a client: Watch
// collects Secret values from the management cluster as they appear, and ScanCluster reads the
// objects; the matching itself (Needles, Matcher, ScanLog, ScanValue) is pure.
//
// Values are compared as the reader of the text would see them, not as they are encoded: each
// JSON log line is decoded and every string in it (keys too, recursively, including JSON
// documents and Go-quoted strings inside strings) is compared, so a value with a newline or
// `<>&"` is found although JSON escapes it. Lines that are not JSON are compared as they are.
package leakscan

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// MinLen is the shortest value looked for: shorter values ("admin", "true") occur in any text
// by chance and say nothing about a leak.
const MinLen = 12

// Needles maps each value looked for to where it comes from ("ns/name[key]", with " (base64)"
// for a value's base64 form).
type Needles map[string]string

// AddSecret adds what must never appear outside Secret s: every value of at least MinLen bytes
// (and its base64 form); of a kubeconfig only the credentials in it (client key and each line of
// it but the PEM armour, token, password), not the server address and CA it also holds, which
// are public.
func (n Needles) AddSecret(s *corev1.Secret) {
	for k, v := range s.Data {
		where := s.Namespace + "/" + s.Name + "[" + k + "]"
		if kc, err := clientcmd.Load(v); err == nil && len(kc.AuthInfos) > 0 {
			for name, ai := range kc.AuthInfos {
				n.add(where+" user "+name+" key", string(ai.ClientKeyData))
				n.add(where+" user "+name+" token", ai.Token)
				n.add(where+" user "+name+" password", ai.Password)
				for line := range strings.SplitSeq(string(ai.ClientKeyData), "\n") {
					// Not the PEM armour ("-----BEGIN EC PRIVATE KEY-----"): every key has it.
					if line = strings.TrimSpace(line); !strings.HasPrefix(line, "-----") {
						n.add(where+" user "+name+" key line", line)
					}
				}
			}
			continue
		}
		n.add(where, string(v))
	}
}

func (n Needles) add(where, v string) {
	if len(v) < MinLen {
		return
	}
	if _, ok := n[v]; !ok {
		n[v] = where
	}
	if b := base64.StdEncoding.EncodeToString([]byte(v)); n[b] == "" {
		n[b] = where + " (base64)"
	}
}

// Matcher finds Needles in text. Every needle has at least MinLen bytes, so a needle can start
// only where the MinLen bytes of text equal its first MinLen bytes: one map look-up per byte of
// text, whatever the number of needles.
type Matcher struct {
	byPrefix map[string][]string
	needles  Needles
}

// NewMatcher returns a Matcher of needles (ignoring any shorter than MinLen).
func NewMatcher(needles Needles) *Matcher {
	m := &Matcher{byPrefix: map[string][]string{}, needles: needles}
	for v := range needles {
		if len(v) >= MinLen {
			m.byPrefix[v[:MinLen]] = append(m.byPrefix[v[:MinLen]], v)
		}
	}
	return m
}

// Len is the number of needles.
func (m *Matcher) Len() int { return len(m.needles) }

// find calls hit with where each needle found in s comes from and the offset of its first
// occurrence, once per needle.
func (m *Matcher) find(s string, hit func(where string, at int)) {
	if len(m.byPrefix) == 0 {
		return
	}
	var seen []string
	for i := 0; i+MinLen <= len(s); i++ {
		for _, v := range m.byPrefix[s[i:i+MinLen]] {
			if strings.HasPrefix(s[i:], v) && !slices.Contains(seen, v) {
				seen = append(seen, v)
				hit(m.needles[v], i)
			}
		}
	}
}

// Leak is a Secret value found outside Secrets.
type Leak struct {
	// Secret is where the value comes from ("ns/name[key] user u token").
	Secret string
	// In is where it was found: a log file and line, or an object, with the JSON path of the
	// string that holds it.
	In string
}

func (l Leak) String() string { return "Secret " + l.Secret + " appears in " + l.In }

// maxDepth bounds how deep JSON documents inside strings are decoded.
const maxDepth = 4

// ScanValue reports the needles found in v, a decoded JSON value (an object's content, a log
// line), named where: every string and map key, recursively, and the JSON documents and
// Go-quoted strings inside them decoded too.
func (m *Matcher) ScanValue(where string, v any) []Leak {
	var leaks []Leak
	m.walk(v, "", 0, func(path, s string) {
		m.find(s, func(secret string, _ int) {
			leaks = append(leaks, Leak{Secret: secret, In: where + " at " + pathOrRoot(path)})
		})
	})
	return dedupe(leaks)
}

func pathOrRoot(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// walk calls f with every string in v and its path.
func (m *Matcher) walk(v any, path string, depth int, f func(path, s string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			f(path+"."+k+" (key)", k)
			m.walk(e, path+"."+k, depth, f)
		}
	case []any:
		for i, e := range v {
			m.walk(e, path+"["+strconv.Itoa(i)+"]", depth, f)
		}
	case string:
		m.walkString(v, path, depth, f)
	case json.Number:
		f(path, v.String())
	}
}

// walkString calls f with s, then looks inside it: a JSON document is decoded, and every
// Go-quoted string in it (%q of an error message) is unquoted.
func (m *Matcher) walkString(s, path string, depth int, f func(path, s string)) {
	f(path, s)
	if depth >= maxDepth {
		return
	}
	if t := strings.TrimSpace(s); len(t) > 1 && (t[0] == '{' || t[0] == '[') {
		if v, err := decode([]byte(t)); err == nil {
			m.walk(v, path+" (JSON)", depth+1, f)
			return
		}
	}
	if !strings.Contains(s, `\`) {
		return // a quoted string without escapes is itself part of s
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			continue
		}
		q, err := strconv.QuotedPrefix(s[i:])
		if err != nil {
			continue
		}
		if u, err := strconv.Unquote(q); err == nil && u != q[1:len(q)-1] {
			m.walkString(u, path+" (quoted)", depth+1, f)
		}
		i += len(q) - 1
	}
}

// decode decodes one JSON value, keeping numbers as written.
func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// ScanLog reports the needles found in a log read from r, named name, line by line: a line
// that is a JSON object (zap's encoding) is decoded and its strings compared (ScanValue); other
// lines are compared as they are, each run of them as one text, so that a value with a newline
// written out raw (a panic, klog) is found too. It returns the number of lines read.
func (m *Matcher) ScanLog(name string, r io.Reader) (lines int, leaks []Leak, err error) {
	var raw strings.Builder
	rawStart := 0
	flush := func() {
		text := raw.String()
		m.find(text, func(secret string, at int) {
			line := rawStart + strings.Count(text[:at], "\n")
			leaks = append(leaks, Leak{Secret: secret, In: name + ":" + strconv.Itoa(line)})
		})
		raw.Reset()
	}
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			lines++
			if v, ok := jsonObject(line); ok {
				flush()
				leaks = append(leaks, m.ScanValue(name+":"+strconv.Itoa(lines), v)...)
			} else {
				if raw.Len() == 0 {
					rawStart = lines
				}
				raw.WriteString(line)
			}
		}
		if errors.Is(err, io.EOF) {
			flush()
			return lines, leaks, nil
		}
		if err != nil {
			return lines, leaks, fmt.Errorf("read %s: %w", name, err)
		}
	}
}

// jsonObject decodes line if it is one JSON object.
func jsonObject(line string) (any, bool) {
	t := strings.TrimSpace(line)
	if !strings.HasPrefix(t, "{") {
		return nil, false
	}
	v, err := decode([]byte(t))
	return v, err == nil
}

// ScanLogFile is ScanLog of a file.
func (m *Matcher) ScanLogFile(path string) (lines int, leaks []Leak, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = f.Close() }()
	return m.ScanLog(path, f)
}

// dedupe drops repeats of a leak (one string holding a value and its base64 form twice).
func dedupe(leaks []Leak) []Leak {
	slices.SortFunc(leaks, func(a, b Leak) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(leaks)
}
