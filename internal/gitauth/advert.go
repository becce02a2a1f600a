package gitauth

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// maxPktLine is the largest pkt-line Git sends (LARGE_PACKET_MAX), its 4-byte length included.
const maxPktLine = 65520

// RefQuery says which references of an advertisement a listing keeps. Everything else is read,
// counted against the limits, and dropped at once: only the kept references are ever held in
// memory, not the advertisement.
type RefQuery struct {
	// Prefix is what every kept reference name starts with, e.g. "refs/tags/aws-base-1-36-".
	Prefix string
	// MaxNameBytes bounds a kept reference's name (Prefix included); a longer one with Prefix is
	// ignored (counted in Ignored). 0 means MaxRefNameBytes.
	MaxNameBytes int
	// Keep, when set, decides whether a reference name with Prefix (and within MaxNameBytes) is
	// kept; one it refuses is counted in Ignored.
	Keep func(name string) bool
	// MaxKept bounds how many references are kept; more fail the listing (ErrTooManyRefs). 0
	// means MaxKeptRefs.
	MaxKept int
}

// Advertisement is what a listing kept of a remote's reference advertisement.
type Advertisement struct {
	// Refs maps each kept reference name to the full hex object name it finally points to
	// (the peeled value of an annotated tag).
	Refs map[string]string
	// Ignored counts the references with the query's Prefix that were not kept: too long, or
	// refused by Keep.
	Ignored int
	// Head is the target of the remote's HEAD symbolic reference ("refs/heads/main"), when the
	// remote advertises it.
	Head string
}

// LimitError is a listing stopped by one of its limits. It matches ErrTooManyRefs.
type LimitError struct {
	// URL is the repository (without credentials).
	URL string
	// What the limit counts: "bytes of reference advertisement", "references" or "kept
	// references"; Limit its value.
	What  string
	Limit int64
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s advertises more than %d %s, the limit of one listing; the listing was stopped there", e.URL, e.Limit, e.What)
}

// Is makes a LimitError match ErrTooManyRefs.
func (e *LimitError) Is(target error) bool { return target == ErrTooManyRefs }

// limits are the bounds of one listing.
type limits struct {
	bytes int64 // of advertisement read
	refs  int   // references advertised (peeled entries not counted)
	kept  int   // references kept
}

// currentLimits are the package limits (variables, so that tests can lower them) with the
// query's bound on kept references.
func currentLimits(q RefQuery) limits {
	l := limits{bytes: maxAdvertisementBytes, refs: maxRefs, kept: q.MaxKept}
	if l.kept <= 0 {
		l.kept = MaxKeptRefs
	}
	return l
}

// pktReader reads pkt-lines, counting the bytes read against a limit.
type pktReader struct {
	r    *bufio.Reader
	left int64
	buf  []byte
	lim  limits
	url  string
}

func newPktReader(r io.Reader, url string, lim limits) *pktReader {
	return &pktReader{r: bufio.NewReaderSize(r, 64<<10), left: lim.bytes, buf: make([]byte, maxPktLine), lim: lim, url: url}
}

// errFlush is returned by next for a flush-pkt ("0000").
var errFlush = errors.New("flush-pkt")

// next returns the payload of the next pkt-line (valid until the next call) without its
// trailing newline, errFlush for a flush-pkt, or an error.
func (p *pktReader) next() ([]byte, error) {
	var head [4]byte
	if err := p.read(head[:]); err != nil {
		return nil, err
	}
	n, err := strconv.ParseUint(string(head[:]), 16, 16)
	if err != nil {
		return nil, fmt.Errorf("malformed reference advertisement from %s: pkt-line length %q", p.url, head[:])
	}
	switch {
	case n == 0:
		return nil, errFlush
	case n == 1 || n == 2:
		return nil, fmt.Errorf("%s answered with Git protocol version 2, which was not asked for", p.url)
	case n < 4 || n > maxPktLine:
		return nil, fmt.Errorf("malformed reference advertisement from %s: pkt-line length %d", p.url, n)
	}
	line := p.buf[:n-4]
	if err := p.read(line); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(line, []byte("\n")), nil
}

// read fills b, failing at the byte limit.
func (p *pktReader) read(b []byte) error {
	if int64(len(b)) > p.left {
		return &LimitError{URL: p.url, What: "bytes of reference advertisement", Limit: p.lim.bytes}
	}
	n, err := io.ReadFull(p.r, b)
	p.left -= int64(n)
	if errors.Is(err, io.ErrUnexpectedEOF) || (errors.Is(err, io.EOF) && n == 0) {
		return fmt.Errorf("%s closed the connection in the middle of its reference advertisement", p.url)
	}
	return err
}

// readAdvertisement reads a reference advertisement (Git protocol v0/v1, as sent over ssh by
// git-upload-pack and over smart HTTP after the service line) up to its flush-pkt, and keeps
// the references q selects. It stops at the first limit exceeded.
func readAdvertisement(p *pktReader, q RefQuery) (Advertisement, error) {
	maxName := q.MaxNameBytes
	if maxName <= 0 {
		maxName = MaxRefNameBytes
	}
	prefix := []byte(q.Prefix)
	out := Advertisement{Refs: map[string]string{}}
	count, seenRef := 0, false
	for {
		line, err := p.next()
		if errors.Is(err, errFlush) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if bytes.HasPrefix(line, []byte("ERR ")) {
			return out, fmt.Errorf("%s: remote error: %s", p.url, printable(line[4:]))
		}
		if !seenRef && bytes.HasPrefix(line, []byte("version ")) {
			continue // protocol v1 announces itself; the advertisement is v0's
		}
		if !seenRef {
			// The first reference carries the capabilities after a NUL.
			var caps []byte
			line, caps, _ = bytes.Cut(line, []byte{0})
			out.Head, seenRef = headSymref(caps), true
		}
		id, name, ok := bytes.Cut(line, []byte(" "))
		if !ok || !isHex(id) {
			return out, fmt.Errorf("malformed reference advertisement from %s: %q", p.url, printable(line))
		}
		if bytes.Equal(name, []byte("capabilities^{}")) {
			continue // an empty repository
		}
		peeled := bytes.HasSuffix(name, []byte("^{}"))
		if peeled {
			name = name[:len(name)-3]
		} else if count++; count > p.lim.refs {
			return out, &LimitError{URL: p.url, What: "references", Limit: int64(p.lim.refs)}
		}
		if !bytes.HasPrefix(name, prefix) {
			continue
		}
		if peeled {
			// The object an annotated tag points to follows the tag's own entry.
			if _, kept := out.Refs[string(name)]; kept {
				out.Refs[string(name)] = string(id)
			}
			continue
		}
		if len(name) > maxName {
			out.Ignored++
			continue
		}
		s := string(name)
		if q.Keep != nil && !q.Keep(s) {
			out.Ignored++
			continue
		}
		if _, dup := out.Refs[s]; !dup && len(out.Refs) >= p.lim.kept {
			return out, &LimitError{URL: p.url, What: "references of the form asked for (" + q.Prefix + "...)", Limit: int64(p.lim.kept)}
		}
		out.Refs[s] = string(id)
	}
}

// headSymref returns the target of HEAD in a capability list ("symref=HEAD:refs/heads/main").
func headSymref(caps []byte) string {
	for _, c := range bytes.Fields(caps) {
		if t, ok := bytes.CutPrefix(c, []byte("symref=HEAD:")); ok {
			return string(t)
		}
	}
	return ""
}

// isHex reports whether b is a SHA-1 or SHA-256 object name in lower-case hex.
func isHex(b []byte) bool {
	if len(b) != 40 && len(b) != 64 {
		return false
	}
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// printable returns at most 200 bytes of b with control characters replaced, for messages.
func printable(b []byte) string {
	if len(b) > 200 {
		b = append(b[:200:200], "..."...)
	}
	return string(bytes.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, b))
}
