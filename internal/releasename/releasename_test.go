package releasename

import (
	"reflect"
	"regexp"
	"testing"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		provider, name, minor, version, want string
	}{
		{"aws", "base", "1.36", "v1", "aws-base-1-36-v1"},
		{"aws", "base", "v1.36", "v10", "aws-base-1-36-v10"},
		{"aws", "base", "1-36", "v2", "aws-base-1-36-v2"},
		{"aws", "base", "1.36.3", "v2", "aws-base-1-36-v2"},
		{"openstack", "scs", "1.35", "v0-sha.abc1234", "openstack-scs-1-35-v0-sha.abc1234"},
	}
	for _, tt := range tests {
		if got := Format(tt.provider, tt.name, tt.minor, tt.version); got != tt.want {
			t.Errorf("Format(%q, %q, %q, %q) = %q, want %q", tt.provider, tt.name, tt.minor, tt.version, got, tt.want)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		tag     string
		want    Release
		wantErr bool
	}{
		{tag: "aws-base-1-36-v1", want: Release{"aws", "base", 1, 36, "v1"}},
		{tag: "aws-base-1-36-v10", want: Release{"aws", "base", 1, 36, "v10"}},
		{tag: "openstack-scs-1-35-v0-sha.abc1234", want: Release{"openstack", "scs", 1, 35, "v0-sha.abc1234"}},
		{tag: "openstack-scs2-1-33-v1-alpha.0", want: Release{"openstack", "scs2", 1, 33, "v1-alpha.0"}},
		{tag: "docker-ferrol-1-27-v1-alpha-1", want: Release{"docker", "ferrol", 1, 27, "v1-alpha-1"}},
		{tag: "aws-base-1-36", wantErr: true},
		{tag: "aws-base-1-36-1", wantErr: true},
		{tag: "aws-base-1-36-v", wantErr: true},
		{tag: "aws-base-1-36-v01", wantErr: true},
		{tag: "aws-base-1-x-v1", wantErr: true},
		{tag: "AWS-base-1-36-v1", wantErr: true},
		{tag: "aws-base-1-36-v1-alpha", wantErr: true},
		{tag: "aws-base-1-36-v1.2", wantErr: true},
		{tag: "my_provider-base-1-36-v1", wantErr: true},
	}
	for _, tt := range tests {
		got, err := Parse(tt.tag)
		if tt.wantErr {
			if err == nil {
				t.Errorf("Parse(%q) = %+v, want an error", tt.tag, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.tag, err)
			continue
		}
		if got != tt.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tt.tag, got, tt.want)
		}
		if got.String() != tt.tag {
			t.Errorf("%+v.String() = %q, want %q", got, got.String(), tt.tag)
		}
	}
	r, _ := Parse("aws-base-1-36-v3")
	if r.KubernetesMinor() != "1.36" || r.HelmReleaseName() != "aws-base-1-36" {
		t.Errorf("KubernetesMinor/HelmReleaseName = %q/%q", r.KubernetesMinor(), r.HelmReleaseName())
	}
}

func TestCompareVersions(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"v1", "v1", 0},
		{"v2", "v10", -1},
		{"v10", "v2", 1},
		{"v10", "v9", 1},
		{"v0-sha.abc1234", "v1", -1},
		{"v1-alpha.0", "v1", -1},
		{"v1", "v1-rc.3", 1},
		{"v1-alpha.1", "v1-alpha.0", 1},
		{"v1-alpha.10", "v1-alpha.9", 1},
		{"v1-alpha.3", "v1-beta.0", -1},
		{"v1-alpha-0", "v1-alpha.0", 0},
		{"v2-alpha.0", "v1", 1},
		{"garbage", "v1", -1},
		{"v1", "garbage", 1},
	}
	for _, tt := range tests {
		if got := CompareVersions(tt.a, tt.b); got != tt.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestSortAndLatest(t *testing.T) {
	tags := []string{
		"aws-base-1-36-v2", "aws-base-1-36-v10", "aws-base-1-36-v9", "aws-base-1-35-v11",
		"aws-base-1-36-v11-alpha.0", "aws-other-1-36-v99", "not-a-tag", "aws-base-1-36-v1",
	}
	latest, ok := Latest(tags, "aws", "base", "1.36", false)
	if !ok || latest.Version != "v10" {
		t.Errorf("Latest(stable) = %+v, %v, want v10", latest, ok)
	}
	latest, ok = Latest(tags, "aws", "base", "1.36", true)
	if !ok || latest.Version != "v11-alpha.0" {
		t.Errorf("Latest(with channels) = %+v, %v, want v11-alpha.0", latest, ok)
	}
	if _, ok := Latest(tags, "aws", "base", "1.34", true); ok {
		t.Error("Latest found a release of a minor without any")
	}

	var rs []Release
	for _, tag := range []string{"aws-base-1-36-v10", "aws-base-1-36-v2", "aws-base-1-35-v3", "aws-base-1-36-v2-rc.1"} {
		r, err := Parse(tag)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	Sort(rs)
	var got []string
	for _, r := range rs {
		got = append(got, r.String())
	}
	want := []string{"aws-base-1-35-v3", "aws-base-1-36-v2-rc.1", "aws-base-1-36-v2", "aws-base-1-36-v10"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Sort = %v, want %v", got, want)
	}
}

func TestParseKubernetesVersion(t *testing.T) {
	tests := []struct {
		in, normalized, minor string
		wantErr               bool
	}{
		{in: "1.36.3", normalized: "v1.36.3", minor: "1.36"},
		{in: "v1.28.11", normalized: "v1.28.11", minor: "1.28"},
		{in: "1.36", wantErr: true},
		{in: "v1.35", wantErr: true},
		{in: "1.36.3-rc.0", wantErr: true},
		{in: "1.036.3", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		n, m, err := ParseKubernetesVersion(tt.in)
		if (err != nil) != tt.wantErr || n != tt.normalized || m != tt.minor {
			t.Errorf("ParseKubernetesVersion(%q) = %q, %q, %v", tt.in, n, m, err)
		}
	}
}

func TestValidSegment(t *testing.T) {
	for s, want := range map[string]bool{"aws": true, "scs2": true, "": false, "AWS": false, "my_provider": false, "my-provider": false} {
		if got := ValidSegment(s); got != want {
			t.Errorf("ValidSegment(%q) = %v, want %v", s, got, want)
		}
	}
}

// The grammar the parser checks byte by byte, as regular expressions: the reference the tests
// below compare it with.
var (
	versionGrammar = regexp.MustCompile(`^v(0|[1-9][0-9]*)(?:-([a-z0-9]+)[.-]([a-z0-9]+))?$`)
	segmentGrammar = regexp.MustCompile(`^[a-z0-9]+$`)
	numberGrammar  = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)
)

// checkGrammar fails t when the byte-by-byte checks disagree with the reference grammar on s.
func checkGrammar(t *testing.T, s string) {
	t.Helper()
	if got, want := ValidSegment(s), segmentGrammar.MatchString(s); got != want {
		t.Errorf("ValidSegment(%q) = %v, the grammar says %v", s, got, want)
	}
	if got, want := validNumber(s), numberGrammar.MatchString(s); got != want {
		t.Errorf("validNumber(%q) = %v, the grammar says %v", s, got, want)
	}
	major, channel, patch, ok := splitVersion(s)
	m := versionGrammar.FindStringSubmatch(s)
	if ok != (m != nil) {
		t.Fatalf("splitVersion(%q) ok = %v, the grammar says %v", s, ok, m != nil)
	}
	if ok && (major != m[1] || channel != m[2] || patch != m[3]) {
		t.Errorf("splitVersion(%q) = %q %q %q, the grammar says %q %q %q", s, major, channel, patch, m[1], m[2], m[3])
	}
}

// TestGrammarMatchesRegularExpressions compares the checks with the grammar on every string of
// up to five bytes over the bytes that matter, and on longer samples.
func TestGrammarMatchesRegularExpressions(t *testing.T) {
	alphabet := []byte{'v', '0', '1', '9', 'a', 'z', '-', '.', 'V', '_', '\n'}
	var walk func(prefix []byte)
	walk = func(prefix []byte) {
		checkGrammar(t, string(prefix))
		if len(prefix) == 5 {
			return
		}
		for _, c := range alphabet {
			walk(append(prefix, c))
		}
	}
	walk(nil)
	for _, s := range []string{"v12", "v012", "v1-alpha.0", "v1-alpha-0", "v0-sha.abc1234", "v1-alpha.0.1", "v1-alpha-0-1",
		"v1--0", "v1-alpha.", "v1-.0", "v10-rc.01", "v99999999999999999999", "v1-ALPHA.0", "v1-alpha.0\n", "aws", "1-36"} {
		checkGrammar(t, s)
	}
}

func FuzzGrammar(f *testing.F) {
	for _, s := range []string{"v1", "v0-sha.abc1234", "v1-alpha-0", "v01", "aws-base-1-36-v1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkGrammar(t, s)
		_, _ = Parse(s)
	})
}

// BenchmarkParse parses a release name, as counting a stack's uses does for each Cluster.
func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("aws-base-1-36-v1-alpha.0"); err != nil {
			b.Fatal(err)
		}
	}
}
