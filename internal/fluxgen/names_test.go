package fluxgen

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// nameKind says which rules a generated name must satisfy.
type nameKind int

const (
	objectName    nameKind = iota // Flux object: DNS-1123 label, valid label value, <= 63
	configMapName                 // ConfigMap: DNS-1123 subdomain, <= 253
	helmName                      // Helm release name: Helm's pattern, <= 53
	labelValue                    // label value, <= 63
)

// checkName fails the test unless name satisfies the rules of its kind.
func checkName(t *testing.T, what, name string, kind nameKind) {
	t.Helper()
	var errs []string
	switch kind {
	case objectName:
		errs = append(validation.IsDNS1123Label(name), validation.IsValidLabelValue(name)...)
	case configMapName:
		errs = validation.IsDNS1123Subdomain(name)
	case helmName:
		if len(name) > MaxHelmReleaseName || !helmReleaseNameRE.MatchString(name) {
			errs = []string{"not a Helm release name of at most 53 characters"}
		}
	case labelValue:
		errs = validation.IsValidLabelValue(name)
	}
	if len(errs) > 0 {
		t.Errorf("%s = %q (%d characters): %s", what, name, len(name), strings.Join(errs, "; "))
	}
}

// TestNames documents the names of ordinary inputs: they are part of the operator's contract
// (objects are found again by them after an upgrade), so a change here renames objects in
// running installations. Hashes are the first 12 hex digits of the SHA-256 of the tuple written
// as "<length>:<part>," per part, e.g. `printf '1:a,3:b-c,' | sha256sum` for ("a", "b-c").
func TestNames(t *testing.T) {
	tests := []struct {
		what string
		got  string
		want string
		kind nameKind
	}{
		// Plain joins: no part but the first contains '-'.
		{`AddonObjectName("alpha", "cni")`, AddonObjectName("alpha", "cni"), "alpha-cni", objectName},
		{`AddonObjectName("prod-eu-1", "cni")`, AddonObjectName("prod-eu-1", "cni"), "prod-eu-1-cni", objectName},
		{`AddonObjectName("a-b", "c")`, AddonObjectName("a-b", "c"), "a-b-c", objectName},
		{`AddonChartName("aws-base-1-36-v1", "cni")`, AddonChartName("aws-base-1-36-v1", "cni"), "aws-base-1-36-v1-cni", objectName},
		// A component with '-': the join is ambiguous, so a hash of the tuple is appended.
		{`AddonObjectName("a", "b-c")`, AddonObjectName("a", "b-c"), "a-b-c-ba889e4391f0", objectName},
		{`AddonObjectName("alpha", "cluster-info")`, AddonObjectName("alpha", "cluster-info"), "alpha-cluster-info-ef176a5cecd8", objectName},
		{`AddonObjectName("alpha", "metrics-server")`, AddonObjectName("alpha", "metrics-server"), "alpha-metrics-server-35616ac50145", objectName},
		{`AddonChartName("aws-base-1-36-v1", "cluster-addon")`, AddonChartName("aws-base-1-36-v1", "cluster-addon"), "aws-base-1-36-v1-cluster-addon-7a8363605b1e", objectName},
		// "-cluster-class" ends only cluster-class objects' plain names.
		{`AddonObjectName("x-cluster", "class")`, AddonObjectName("x-cluster", "class"), "x-cluster-class-ff8df411771a", objectName},
		{`AddonChartName("x-cluster", "class")`, AddonChartName("x-cluster", "class"), "x-cluster-class-ff8df411771a", objectName},
		// One-part names keep the name when it is a valid label of at most 63 characters.
		{`GitRepositoryName("aws-base-1-36-v1")`, GitRepositoryName("aws-base-1-36-v1"), "aws-base-1-36-v1", objectName},
		{`GitRepositoryName("aws-base-1-36-v1-rc.1")`, GitRepositoryName("aws-base-1-36-v1-rc.1"), "aws-base-1-36-v1-rc-1-c7cfe6dcab58", objectName},
		{`GitRepositoryName(<66-character SCS tag>)`, GitRepositoryName("openstack-scs-1-33-v0-sha.0123456789abcdef0123456789abcdef01234567"), "openstack-scs-1-33-v0-sha-0123456789abcdef01234567-dd3ebc45f81d", objectName},
		{`ClusterClassObjectName("aws-base-1-36-v1")`, ClusterClassObjectName("aws-base-1-36-v1"), "aws-base-1-36-v1-cluster-class", objectName},
		{`ClusterClassObjectName(<66-character SCS tag>)`, ClusterClassObjectName("openstack-scs-1-33-v0-sha.0123456789abcdef0123456789abcdef01234567"), "openstack-scs-1-33-v0-sha-0123456789abcdef01234567-4e73fbe3cc37", objectName},
		{`HelmReleaseName("cni")`, HelmReleaseName("cni"), "cni", helmName},
		{`HelmReleaseName("aws-base-1-36-v1")`, HelmReleaseName("aws-base-1-36-v1"), "aws-base-1-36-v1", helmName},
		// Release names contain '-': the per-release values ConfigMap always carries a hash.
		{`ValuesConfigMapName("alpha", "aws-base-1-36-v1")`, ValuesConfigMapName("alpha", "aws-base-1-36-v1"), "alpha-aws-base-1-36-v1-values-287ac6482e6e", configMapName},
		{`ValuesConfigMapName("c1", "aws-base-1-33-v2")`, ValuesConfigMapName("c1", "aws-base-1-33-v2"), "c1-aws-base-1-33-v2-values-6d72c6eb62ae", configMapName},
		{`KubeconfigSecretName("alpha")`, KubeconfigSecretName("alpha"), "alpha-kubeconfig", configMapName},
		{`LabelValue("aws-base-1-36-v1-rc.1")`, LabelValue("aws-base-1-36-v1-rc.1"), "aws-base-1-36-v1-rc.1", labelValue},
		{`LabelValue(<66-character SCS tag>)`, LabelValue("openstack-scs-1-33-v0-sha.0123456789abcdef0123456789abcdef01234567"), "openstack-scs-1-33-v0-sha-0123456789abcdef01234567-dd3ebc45f81d", labelValue},
		{`LabelValue("")`, LabelValue(""), "", labelValue},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %q, want %q", tt.what, tt.got, tt.want)
		}
		checkName(t, tt.what, tt.got, tt.kind)
	}
}

func TestSafeName(t *testing.T) {
	tests := []struct {
		name  string
		max   int
		parts []string
		want  string
	}{
		{name: "one part", max: 63, parts: []string{"alpha"}, want: "alpha"},
		{name: "first part may contain '-'", max: 63, parts: []string{"a-b", "c", "d"}, want: "a-b-c-d"},
		{name: "a later part with '-' is hashed", max: 63, parts: []string{"a", "b-c", "d"}, want: "a-b-c-d-846480ce2306"},
		{name: "exactly the limit stays plain", max: 14, parts: []string{"abcdefg", "hijkl"}, want: "abcdefg-hijkl"},
		{name: "over the limit: prefix cut to fit", max: 14, parts: []string{"abcdefg", "hijklmn"}, want: "a-068a9882bc3b"},
		{name: "dash at the cut is trimmed", max: 20, parts: []string{"abcdef-gh"}, want: "abcdef-gh"},
		{name: "dash at the cut is trimmed (long)", max: 20, parts: []string{"abcdef-ghijklmnopqrst"}, want: "abcdef-d153fc07a88c"},
		{name: "upper case, dots and other characters cleaned", max: 63, parts: []string{"Alpha", "x.y_z"}, want: "alpha-x-y-z-010faa6c2b87"},
		{name: "a join shaped like a hashed name is hashed", max: 63, parts: []string{"a", "0123456789ab"}, want: "a-0123456789ab-c8bbf9d9dd57"},
		{name: "empty part", max: 63, parts: []string{"", "a"}, want: "a-d476ca72caa7"},
		{name: "nothing readable: hash only", max: 63, parts: []string{"---"}, want: "7363f6976199"},
		{name: "no parts", max: 63, parts: nil, want: "e3b0c44298fc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SafeName(tt.max, tt.parts...)
			if got != tt.want {
				t.Errorf("SafeName(%d, %q) = %q, want %q", tt.max, tt.parts, got, tt.want)
			}
			if len(got) > tt.max {
				t.Errorf("SafeName(%d, %q) = %q is longer than %d", tt.max, tt.parts, got, tt.max)
			}
			checkName(t, "SafeName", got, objectName)
		})
	}
	t.Run("limit below the minimum panics", func(t *testing.T) {
		defer func() {
			if recover() == nil {
				t.Error("SafeName(13, ...) did not panic")
			}
		}()
		SafeName(13, "a")
	})
}

// TestNamesDoNotCollide: the pair that plain joining maps to one name gets two.
func TestNamesDoNotCollide(t *testing.T) {
	pairs := []struct {
		what string
		a, b string
	}{
		{"AddonObjectName(a, b-c) vs (a-b, c)", AddonObjectName("a", "b-c"), AddonObjectName("a-b", "c")},
		{"AddonChartName(r-1, b-c) vs (r-1-b, c)", AddonChartName("r-1", "b-c"), AddonChartName("r-1-b", "c")},
		{"ValuesConfigMapName(a, b-c) vs (a-b, c)", ValuesConfigMapName("a", "b-c"), ValuesConfigMapName("a-b", "c")},
		{"ClusterClassObjectName(x) vs AddonChartName(x-cluster, class)", ClusterClassObjectName("x"), AddonChartName("x-cluster", "class")},
		{"ClusterClassObjectName(x) vs AddonObjectName(x-cluster, class)", ClusterClassObjectName("x"), AddonObjectName("x-cluster", "class")},
		{"HelmReleaseName(long) vs HelmReleaseName(its shortened name)", HelmReleaseName(strings.Repeat("a", 60)), HelmReleaseName(HelmReleaseName(strings.Repeat("a", 60)))},
		{"GitRepositoryName(x.y) vs (x-y)", GitRepositoryName("x.y"), GitRepositoryName("x-y")},
	}
	for _, p := range pairs {
		if p.a == p.b {
			t.Errorf("%s: both %q", p.what, p.a)
		}
	}
}

// TestLongNames: a 60-character cluster name and a 40-character component name (both with
// '-'), and a 140-character release name, give names within every limit.
func TestLongNames(t *testing.T) {
	cluster := strings.Repeat("c", 30) + "-" + strings.Repeat("d", 29)
	component := strings.Repeat("k", 20) + "-" + strings.Repeat("m", 19)
	release := strings.Repeat("p", 32) + "-" + strings.Repeat("s", 32) + "-1-36-v1-" + strings.Repeat("x", 66)
	if len(cluster) != 60 || len(component) != 40 || len(release) != 140 {
		t.Fatalf("test inputs have lengths %d, %d, %d", len(cluster), len(component), len(release))
	}
	names := []struct {
		what string
		name string
		kind nameKind
	}{
		{"AddonObjectName", AddonObjectName(cluster, component), objectName},
		{"AddonChartName", AddonChartName(release, component), objectName},
		{"ClusterClassObjectName", ClusterClassObjectName(release), objectName},
		{"GitRepositoryName", GitRepositoryName(release), objectName},
		{"HelmReleaseName(release)", HelmReleaseName(release), helmName},
		{"HelmReleaseName(component)", HelmReleaseName(component), helmName},
		{"ValuesConfigMapName", ValuesConfigMapName(cluster, release), configMapName},
		{"LabelValue(release)", LabelValue(release), labelValue},
	}
	for _, n := range names {
		checkName(t, n.what, n.name, n.kind)
	}
	// Readable: the cut-down prefix still starts with the cluster name.
	if got, want := AddonObjectName(cluster, component), cluster[:50]+"-3bbdea8d0eb6"; got != want {
		t.Errorf("AddonObjectName(60, 40) = %q, want %q", got, want)
	}
}

// FuzzNames checks, for random pairs of (cluster, component, release) tuples, that every name is
// within its limit and valid, and that distinct inputs give distinct names, also across the
// functions naming objects of one kind. Run it with
//
//	go test -run '^$' -fuzz FuzzNames -fuzztime 30s ./internal/fluxgen/
func FuzzNames(f *testing.F) {
	hashed := AddonObjectName("a", "b-c") // "a-b-c-<hash>": split into a tuple whose join is that name
	i := strings.LastIndex(hashed, "-")
	seeds := [][6]string{
		{"a", "b-c", "r", "a-b", "c", "r"},
		{"alpha", "cni", "aws-base-1-36-v1", "alpha", "cni", "aws-base-1-36-v2"},
		{"alpha", "cluster-info", "aws-base-1-36-v1", "prod-eu-1", "metrics-server", "aws-base-1-36-v1-rc.1"},
		{"a", "b-c", "r", hashed[:i], hashed[i+1:], "r"},
		{"x", "class", "x", "x-cluster", "class", "x-cluster"},
		{strings.Repeat("c", 60), strings.Repeat("k", 40), strings.Repeat("r", 140), strings.Repeat("c", 60), strings.Repeat("k", 41), strings.Repeat("r", 139)},
		{"", "", "", "-", "--", "."},
		{"Alpha", "CNI", "aws.base", "alpha", "cni", "aws-base"},
		{"ä", "b/c", "r,1:", "a", "b", "r"},
		{"cni-0123456789ab", "cni-0123456789ab", "cni-0123456789ab", "cni", "cni", "cni"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5])
	}
	f.Fuzz(func(t *testing.T, cluster1, component1, release1, cluster2, component2, release2 string) {
		type tuple struct{ cluster, component, release string }
		t1 := tuple{cluster1, component1, release1}
		t2 := tuple{cluster2, component2, release2}
		names := func(x tuple) map[string]string {
			return map[string]string{
				"AddonObjectName":        AddonObjectName(x.cluster, x.component),
				"AddonChartName":         AddonChartName(x.release, x.component),
				"ClusterClassObjectName": ClusterClassObjectName(x.release),
				"GitRepositoryName":      GitRepositoryName(x.release),
				"HelmReleaseName":        HelmReleaseName(x.component),
				"ValuesConfigMapName":    ValuesConfigMapName(x.cluster, x.release),
				"LabelValue":             LabelValue(x.release),
				"SafeName":               SafeName(MaxObjectName, x.cluster, x.component, x.release),
			}
		}
		kinds := map[string]nameKind{"HelmReleaseName": helmName, "ValuesConfigMapName": configMapName, "LabelValue": labelValue}
		n1, n2 := names(t1), names(t2)
		for _, n := range []map[string]string{n1, n2} {
			for fn, name := range n {
				checkName(t, fn, name, kinds[fn])
			}
		}
		// Which inputs each function reads: distinct inputs must give distinct names.
		inputs := map[string]func(tuple) any{
			"AddonObjectName":        func(x tuple) any { return [2]string{x.cluster, x.component} },
			"AddonChartName":         func(x tuple) any { return [2]string{x.release, x.component} },
			"ClusterClassObjectName": func(x tuple) any { return x.release },
			"GitRepositoryName":      func(x tuple) any { return x.release },
			"HelmReleaseName":        func(x tuple) any { return x.component },
			"ValuesConfigMapName":    func(x tuple) any { return [2]string{x.cluster, x.release} },
			"LabelValue":             func(x tuple) any { return x.release },
			"SafeName":               func(x tuple) any { return x },
		}
		for fn, in := range inputs {
			if in(t1) != in(t2) && n1[fn] == n2[fn] {
				t.Errorf("%s: %+v and %+v both give %q", fn, in(t1), in(t2), n1[fn])
			}
		}
		// Functions naming objects of one kind in one namespace.
		if n1["ClusterClassObjectName"] == n2["AddonChartName"] {
			t.Errorf("HelmChart %q is the cluster-class's of %q and the addon chart of %q/%q", n1["ClusterClassObjectName"], release1, release2, component2)
		}
		if n1["ClusterClassObjectName"] == n2["AddonObjectName"] {
			t.Errorf("HelmRelease %q is the cluster-class's of %q and the addon of %q/%q", n1["ClusterClassObjectName"], release1, cluster2, component2)
		}
	})
}

// TestNamesInjectiveExhaustive names every tuple of short strings over "a", "0" and "-" (with
// empty parts and names shaped like hashed ones) and checks that no two inputs share a name,
// within each function and across the functions naming objects of one kind. Every name is also
// fed back as input (split at its last '-' for two parts): a plain name never equals a hashed one.
func TestNamesInjectiveExhaustive(t *testing.T) {
	words := []string{""}
	for n, last := 0, []string{""}; n < 4; n++ {
		var next []string
		for _, w := range last {
			for _, c := range []string{"a", "0", "-"} {
				next = append(next, w+c)
			}
		}
		words = append(words, next...)
		last = next
	}
	words = append(words, "0123456789ab", "a-0123456789ab", "cluster", "a-cluster", "class", "cluster-class")
	type owner struct{ fn, in string }
	seen := map[string]map[string]owner{} // kind -> name -> input
	add := func(kind, fn, in, name string) {
		if seen[kind] == nil {
			seen[kind] = map[string]owner{}
		}
		if o, ok := seen[kind][name]; ok && o != (owner{fn, in}) {
			t.Errorf("%s %q: %s%s and %s%s", kind, name, o.fn, o.in, fn, in)
		}
		seen[kind][name] = owner{fn, in}
	}
	one := []struct {
		fn    string
		f     func(string) string
		kinds []string
	}{
		{"GitRepositoryName", GitRepositoryName, []string{"GitRepository"}},
		{"ClusterClassObjectName", ClusterClassObjectName, []string{"HelmChart", "HelmRelease"}},
		{"HelmReleaseName", HelmReleaseName, []string{"Helm release"}},
		{"LabelValue", LabelValue, []string{"label value"}},
	}
	for _, o := range one {
		for _, a := range words {
			for _, in := range []string{a, o.f(a)} {
				for _, kind := range o.kinds {
					add(kind, o.fn, fmt.Sprintf("(%q)", in), o.f(in))
				}
			}
		}
	}
	two := []struct {
		fn   string
		f    func(string, string) string
		kind string
	}{
		{"AddonChartName", AddonChartName, "HelmChart"},
		{"AddonObjectName", AddonObjectName, "HelmRelease"},
		{"ValuesConfigMapName", ValuesConfigMapName, "ConfigMap"},
	}
	for _, o := range two {
		for _, a := range words {
			for _, b := range words {
				n := o.f(a, b)
				add(o.kind, o.fn, fmt.Sprintf("(%q, %q)", a, b), n)
				if i := strings.LastIndex(n, "-"); i >= 0 {
					add(o.kind, o.fn, fmt.Sprintf("(%q, %q)", n[:i], n[i+1:]), o.f(n[:i], n[i+1:]))
				}
			}
		}
	}
}
