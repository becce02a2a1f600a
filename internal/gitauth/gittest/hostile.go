package gittest

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// Advertisement is a hostile reference advertisement: Tags tags, each name NameLength bytes
// long ("refs/tags/" not counted), all pointing at one commit, as git-upload-pack sends it
// (protocol v0). 50,000 tags of 600 characters are about 32 MiB.
type Advertisement struct {
	Tags, NameLength int
}

// Size is the number of bytes WriteTo writes.
func (a Advertisement) Size() int64 {
	first := 4 + 40 + 1 + len("refs/tags/") + a.NameLength + 1 + len(advertisedCaps) + 1
	other := 4 + 40 + 1 + len("refs/tags/") + a.NameLength + 1
	return int64(first + (a.Tags-1)*other + 4)
}

// advertisedCaps are the capabilities of the first line.
const advertisedCaps = "multi_ack thin-pack side-band side-band-64k ofs-delta shallow no-progress include-tag symref=HEAD:refs/heads/main"

// WriteTo writes the advertisement, ending with a flush-pkt, without allocating per tag (the
// server's own garbage would blur what a test measures of the client). It stops at the first
// write error (the client hung up).
func (a Advertisement) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	const id = "1111111111111111111111111111111111111111"
	line := make([]byte, 0, 4+len(id)+1+len("refs/tags/")+a.NameLength+1+len(advertisedCaps)+1)
	var n int64
	for i := range a.Tags {
		line = append(line[:0], "0000"+id+" refs/tags/t"...)
		line = strconv.AppendInt(line, int64(i), 10)
		line = append(line, '-')
		for len(line) < 4+len(id)+1+len("refs/tags/")+a.NameLength {
			line = append(line, 'x')
		}
		if i == 0 {
			line = append(line, 0)
			line = append(line, advertisedCaps...)
		}
		line = append(line, '\n')
		const hex = "0123456789abcdef"
		for j, l := 3, len(line); j >= 0; j, l = j-1, l>>4 {
			line[j] = hex[l&0xf]
		}
		m, err := bw.Write(line)
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	m, err := io.WriteString(bw, "0000")
	n += int64(m)
	if err != nil {
		return n, err
	}
	return n, bw.Flush()
}

// Handler serves the advertisement as Git's smart HTTP protocol does, for every repository
// path: GET .../info/refs?service=git-upload-pack.
func (a Advertisement) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/info/refs") || r.URL.Query().Get("service") != "git-upload-pack" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		service := "# service=git-upload-pack\n"
		_, _ = fmt.Fprintf(w, "%04x%s0000", len(service)+4, service)
		_, _ = a.WriteTo(w)
	})
}

// ServeSSH serves the advertisement over SSH on loopback, as ServeSSH serves a repository, for
// every repository path, and returns the listening address.
func (a Advertisement) ServeSSH(t testing.TB, hostKey ssh.Signer, client ssh.PublicKey) string {
	t.Helper()
	return serveSSH(t, hostKey, client, func(ch ssh.Channel, _ string) uint32 {
		if _, err := a.WriteTo(ch); err != nil {
			return 1
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(ch, 4)) // the client's flush-pkt
		return 0
	})
}
