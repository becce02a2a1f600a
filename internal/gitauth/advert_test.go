package gitauth

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
)

// pkt frames lines as pkt-lines; "" is a flush-pkt.
func pkt(lines ...string) string {
	var b strings.Builder
	for _, l := range lines {
		if l == "" {
			b.WriteString("0000")
			continue
		}
		fmt.Fprintf(&b, "%04x%s", len(l)+4, l)
	}
	return b.String()
}

const (
	idA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	idB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	idC = "cccccccccccccccccccccccccccccccccccccccc"
)

func TestReadAdvertisement(t *testing.T) {
	tags := RefQuery{Prefix: "refs/tags/"}
	for _, tt := range []struct {
		name    string
		in      string
		q       RefQuery
		want    map[string]string
		ignored int
		head    string
		errHas  string
	}{
		{name: "tags peeled, branches and HEAD not kept, HEAD's target read from the capabilities",
			in: pkt(idA+" HEAD\x00multi_ack symref=HEAD:refs/heads/main agent=git/2\n", idA+" refs/heads/main\n",
				idB+" refs/tags/v1\n", idC+" refs/tags/v1^{}\n", idA+" refs/tags/v2\n", ""),
			q: tags, want: map[string]string{"refs/tags/v1": idC, "refs/tags/v2": idA}, head: "refs/heads/main"},
		{name: "protocol v1 announces itself first",
			in: pkt("version 1\n", idB+" refs/tags/v1\x00caps\n", ""), q: tags, want: map[string]string{"refs/tags/v1": idB}},
		{name: "an empty repository",
			in: pkt("0000000000000000000000000000000000000000 capabilities^{}\x00caps\n", ""), q: tags, want: map[string]string{}},
		{name: "the prefix, the length bound and Keep select; refused ones are counted",
			in:   pkt(idA+" refs/tags/a-v1\x00\n", idA+" refs/tags/a-v2-too-long\n", idA+" refs/tags/a-x\n", idA+" refs/tags/b-v1\n", ""),
			q:    RefQuery{Prefix: "refs/tags/a-", MaxNameBytes: len("refs/tags/a-v10"), Keep: func(n string) bool { return strings.HasPrefix(n, "refs/tags/a-v") }},
			want: map[string]string{"refs/tags/a-v1": idA}, ignored: 2},
		{name: "a peeled entry of a tag not kept is dropped",
			in: pkt(idA+" refs/tags/x\x00\n", idB+" refs/tags/x^{}\n", ""), q: RefQuery{Prefix: "refs/tags/v"}, want: map[string]string{}},
		{name: "the remote's error", in: pkt("ERR access denied\x07\n"), q: tags, errHas: "remote error: access denied?"},
		{name: "protocol v2", in: pkt("version 2\n") + "0001", q: tags, errHas: "version 2"},
		{name: "a malformed length", in: "zzzz", q: tags, errHas: "pkt-line length"},
		{name: "a malformed line", in: pkt("not a ref\n", ""), q: tags, errHas: "malformed reference advertisement"},
		{name: "cut short", in: pkt(idA + " refs/tags/v1\x00\n"), q: tags, errHas: "closed the connection"},
		{name: "more kept references than allowed",
			in: pkt(idA+" refs/tags/v1\x00\n", idA+" refs/tags/v2\n", idA+" refs/tags/v3\n", ""), q: RefQuery{Prefix: "refs/tags/", MaxKept: 2},
			errHas: "more than 2 references of the form asked for (refs/tags/...)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newPktReader(strings.NewReader(tt.in), "https://git.example.com/x.git", currentLimits(tt.q))
			got, err := readAdvertisement(p, tt.q)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) || !strings.Contains(err.Error(), "https://git.example.com/x.git") {
					t.Fatalf("got %v, %v; want an error naming the repository with %q", got, err, tt.errHas)
				}
				return
			}
			if err != nil || !maps.Equal(got.Refs, tt.want) || got.Ignored != tt.ignored || got.Head != tt.head {
				t.Errorf("got %+v, %v; want refs %v, %d ignored, head %q", got, err, tt.want, tt.ignored, tt.head)
			}
		})
	}
}

// The limits count every advertised reference (peeled entries not) and every byte, whatever
// is kept.
func TestReadAdvertisementLimits(t *testing.T) {
	in := pkt(idA+" refs/heads/main\x00\n", idA+" refs/tags/v1\n", idB+" refs/tags/v1^{}\n", idA+" refs/tags/v2\n", "")
	q := RefQuery{Prefix: "refs/tags/none-"}
	for _, tt := range []struct {
		lim    limits
		errHas string
	}{
		{limits{bytes: int64(len(in)), refs: 3, kept: 1}, ""},
		{limits{bytes: int64(len(in)), refs: 2, kept: 1}, "more than 2 references"},
		{limits{bytes: int64(len(in)) - 1, refs: 3, kept: 1}, fmt.Sprintf("more than %d bytes of reference advertisement", len(in)-1)},
	} {
		_, err := readAdvertisement(newPktReader(strings.NewReader(in), "u", tt.lim), q)
		switch {
		case tt.errHas == "" && err != nil:
			t.Errorf("limits %+v: %v", tt.lim, err)
		case tt.errHas != "" && (!errors.Is(err, ErrTooManyRefs) || !strings.Contains(err.Error(), tt.errHas)):
			t.Errorf("limits %+v: got %v, want ErrTooManyRefs with %q", tt.lim, err, tt.errHas)
		}
	}
}
