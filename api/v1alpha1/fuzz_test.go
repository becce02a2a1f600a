package v1alpha1_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
)

// Fuzzed admission: many generated ClusterStacks, ClusterStackReleases and ClusterAddons, valid
// and invalid, are created with dry-run against the real API server, which runs the CRDs'
// OpenAPI schemas and CEL rules. Each object is built field by field; a field is made invalid on
// purpose now and then, and the generator records a fault: the text (a field path, or the start
// of a rule's message) the refusal must contain. Cross-field rules (release name lengths, the
// version/autoSubscribe rule, the release's name being its tag) are predicted from the generated
// values with internal/stack's ReleaseName, the function the controllers name releases with.
//
// The API server must never answer with a 5xx; an object without faults must be accepted; an
// object with faults must be refused as Invalid, naming every fault. When a fault is a wrong
// type, a value over its maxLength or a list over its maxItems, the API server skips the CEL
// rules (it says "some validation rules were not checked" instead), so only the faults the
// schema finds are then required to be named.
//
// The seed is printed; replay a failure with API_FUZZ_SEED=<seed>. API_FUZZ_N sets the number
// of ClusterStacks (default 300; a third as many releases and a sixth as many addons).

// fault is a deliberate error in a generated object.
type fault struct {
	// want is what the refusal must contain: "<field path>:" for schema and field-level rules,
	// the start of the message for rules on a parent object.
	want string
	// cel: only a CEL rule finds it, so the API server does not report it when a blocking
	// fault made it skip the CEL rules.
	cel bool
	// blocking: a wrong type, a value over maxLength or a list over maxItems (or a missing
	// required field or a value outside an enum): the API server then skips the CEL rules.
	blocking bool
}

type fuzzGen struct {
	r      *rand.Rand
	faults []fault
}

// bad decides whether the next field is made invalid.
func (g *fuzzGen) bad() bool { return g.r.Intn(100) < 7 }

func (g *fuzzGen) fault(want string) { g.faults = append(g.faults, fault{want: want}) }

func (g *fuzzGen) celFault(want string) { g.faults = append(g.faults, fault{want: want, cel: true}) }

func (g *fuzzGen) blockingFault(want string) {
	g.faults = append(g.faults, fault{want: want, blocking: true})
}

func (g *fuzzGen) pick(options ...string) string { return options[g.r.Intn(len(options))] }

const (
	lowerAlnum = "abcdefghijklmnopqrstuvwxyz0123456789"
	digits     = "0123456789"
)

// str is n characters from alphabet.
func (g *fuzzGen) str(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.r.Intn(len(alphabet))]
	}
	return string(b)
}

// length is mostly short, sometimes up to max: boundaries are where the rules bite.
func (g *fuzzGen) length(lo, hi int) int {
	switch g.r.Intn(4) {
	case 0:
		return hi - g.r.Intn(min(3, hi-lo+1))
	case 1:
		return lo + g.r.Intn(hi-lo+1)
	default:
		return lo + g.r.Intn(min(8, hi-lo+1))
	}
}

// badChars is n characters of [a-z0-9] with one character inserted that is neither one of
// them nor one of allowed (the field's other characters, such as '-' and '.' in names).
func (g *fuzzGen) badChars(n int, allowed string) string {
	var bad []string
	for _, c := range []string{"-", "_", ".", "A", "Z", " ", "/", ":", "'", "\"", "\\", "%", "$", "{", "é", "日", "💥", "\t", "\x00", "\n"} {
		if !strings.Contains(allowed, c) {
			bad = append(bad, c)
		}
	}
	s := g.str(lowerAlnum, max(n, 1))
	i := g.r.Intn(len(s) + 1)
	return s[:i] + bad[g.r.Intn(len(bad))] + s[i:]
}

// dnsName is a DNS-1123 subdomain of n >= 1 characters ([a-z0-9], '-' and '.' inside).
func (g *fuzzGen) dnsName(prefix string, n int) string {
	s := prefix
	for len(s) < n-1 {
		c := g.str(lowerAlnum+"-", 1)
		if g.r.Intn(20) == 0 && !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "-") {
			c = "."
		}
		if (c == "-" || c == ".") && strings.HasSuffix(s, ".") {
			c = "a"
		}
		s += c
	}
	if len(s) < n {
		s += g.str(lowerAlnum, 1)
	}
	return s[:n]
}

// segment is a [a-z0-9]+ value (provider, stack name) or, now and then, an invalid one.
func (g *fuzzGen) segment(path string) string {
	if g.bad() {
		switch g.r.Intn(3) {
		case 0:
			g.fault(path + ":")
			return ""
		case 1:
			g.blockingFault(path + ":")
			return g.str(lowerAlnum, 33+g.r.Intn(60))
		default:
			g.fault(path + ":")
			return g.badChars(g.length(1, 31), "")
		}
	}
	return g.str(lowerAlnum, g.length(1, 32))
}

func (g *fuzzGen) kubernetesVersion(path string) string {
	if g.bad() {
		v := g.pick("1.33.4", "v1.33", "", "1", "1.", ".33", "123456.78", "1.x", "1,33", "１.33", "01.33", "1.033", g.badChars(4, "."))
		if len(v) > 8 {
			g.blockingFault(path + ":")
		} else {
			g.fault(path + ":")
		}
		return v
	}
	return g.number(2) + "." + g.number(3)
}

// number is a decimal without leading zeros of up to n digits.
func (g *fuzzGen) number(n int) string {
	if g.r.Intn(5) == 0 {
		return "0"
	}
	return g.str("123456789", 1) + g.str(digits, g.r.Intn(n))
}

// version is a stack version v<N>[-<channel>(.|-)<patch>] of up to 64 characters.
func (g *fuzzGen) version() string {
	v := "v" + g.number(4)
	if g.r.Intn(3) == 0 {
		n := g.length(3, 64-len(v)-1) // <channel>.<patch>
		c := 1 + g.r.Intn(n-2)
		v += "-" + g.str(lowerAlnum, c) + g.pick(".", "-") + g.str(lowerAlnum, n-c-1)
	}
	return v
}

// versionOfLen is a valid stack version of exactly n >= 2 characters.
func (g *fuzzGen) versionOfLen(n int) string {
	if n < 6 || g.r.Intn(2) == 0 {
		return "v" + g.str("123456789", 1) + g.str(digits, n-2)
	}
	c := 1 + g.r.Intn(n-5) // v1-<channel>.<patch>
	return "v1-" + g.str(lowerAlnum, c) + g.pick(".", "-") + g.str(lowerAlnum, n-4-c)
}

func (g *fuzzGen) badVersion() string {
	switch g.r.Intn(3) {
	case 0:
		return "v1-" + g.str(lowerAlnum, 62+g.r.Intn(40)) // too long
	case 1:
		return g.pick("1.0", "V1", "v", "v1-", "v1_x", "v1-Alpha.0", "", "v1.0", "va", "v-1", "v01", "v1-rc", "v1-a..b", "v1-.a", "v1-a.", "v1-a.b.c")
	default:
		return "v1-a." + g.badChars(3, ".-")
	}
}

// versions returns spec.versions (nil: absent) or an invalid value.
func (g *fuzzGen) versions(path string) any {
	if g.r.Intn(8) == 0 {
		return nil
	}
	n := g.r.Intn(5)
	seen := map[string]bool{}
	var vs []any
	for len(vs) < n {
		v := g.version()
		if !seen[v] {
			seen[v] = true
			vs = append(vs, v)
		}
	}
	if g.bad() {
		switch g.r.Intn(5) {
		case 0, 1:
			v := g.badVersion()
			if len(v) > 64 {
				g.blockingFault(path + "[")
			} else {
				g.fault(path + "[")
			}
			vs = append(vs, v)
		case 2:
			g.fault(path + "[")
			vs = append(vs, "v7", "v7") // a set: duplicates are refused
		case 3:
			g.blockingFault(path + ":")
			for i := 0; len(vs) < 33+g.r.Intn(8); i++ {
				if v := "v" + strconv.Itoa(1000+i); !seen[v] {
					vs = append(vs, v)
				}
			}
		default:
			g.blockingFault(path + ":")
			return "v1"
		}
	}
	if vs == nil {
		return []any{}
	}
	return vs
}

func (g *fuzzGen) url(path string) string {
	if g.bad() {
		switch g.r.Intn(2) {
		case 0:
			g.blockingFault(path + ":")
			return "https://h/" + g.str(lowerAlnum, 2048)
		default:
			g.fault(path + ":")
			return g.pick("file:///etc", "git@github.com:org/stacks.git", "", "https://", "ftp://h/r", "HTTPS://h/r", "github.com/org/stacks", " https://h/r")
		}
	}
	u := g.pick("https", "http", "ssh") + "://" + g.dnsName("git", g.length(4, 40))
	if g.r.Intn(2) == 0 {
		u += ":" + strconv.Itoa(1+g.r.Intn(65535))
	}
	u += "/" + g.str(lowerAlnum+"/-_.", g.length(1, 100))
	if g.r.Intn(10) == 0 {
		u += strings.Repeat("x", 2048-len(u)) // the longest URL
	}
	return u
}

func (g *fuzzGen) repoPath(path string) string {
	if g.bad() {
		switch g.r.Intn(3) {
		case 0:
			g.fault(path + ":")
			return ""
		case 1:
			g.blockingFault(path + ":")
			return strings.Repeat("p", 1025+g.r.Intn(100))
		default:
			g.celFault(path + ":")
			return g.pick("/abs", "a/../b", "..", "a..b", "/", "../x", "x/..")
		}
	}
	var segs []string
	for n := 1 + g.r.Intn(5); len(segs) < n; {
		segs = append(segs, g.str(lowerAlnum+"-_", g.length(1, 20)))
	}
	p := strings.Join(segs, "/")
	if g.r.Intn(10) == 0 {
		p += "/" + strings.Repeat("q", 1024-len(p)-1) // the longest path
	}
	return p
}

func (g *fuzzGen) source(path string) map[string]any {
	src := map[string]any{"url": g.url(path + ".url"), "path": g.repoPath(path + ".path")}
	if g.r.Intn(3) == 0 {
		name := g.dnsName("g", g.length(1, 253))
		if g.bad() {
			g.celFault(path + ".secretRef:")
			name = g.pick("", "Git_Creds", "-git", "git-", strings.Repeat("g", 254), g.badChars(6, ".-"))
		}
		src["secretRef"] = map[string]any{"name": name}
	}
	return src
}

// duration formats d in one of the forms the pattern accepts.
func (g *fuzzGen) duration(d time.Duration) string {
	switch {
	case g.r.Intn(4) == 0 && d%time.Millisecond == 0:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case g.r.Intn(4) == 0 && d%(6*time.Second) == 0:
		return strconv.FormatFloat(d.Minutes(), 'f', -1, 64) + "m"
	default:
		return d.String() // "1m30s", "10s", "1h0m0s"
	}
}

// interval returns spec.interval; minimum is the least value the rules accept.
func (g *fuzzGen) interval(path string, minimum time.Duration) any {
	if g.r.Intn(4) == 0 {
		return nil
	}
	if g.bad() {
		switch g.r.Intn(3) {
		case 0:
			if minimum > 0 {
				g.celFault(path + ":")
				d := minimum - time.Millisecond // just below, or anywhere below
				if g.r.Intn(2) == 0 {
					d = time.Duration(g.r.Int63n(int64(minimum))).Truncate(time.Millisecond)
				}
				return g.duration(d)
			}
			fallthrough
		case 1:
			g.fault(path + ":")
			return g.pick("5", "1d", "abc", "-1m", "", "1.5", "10 s", "1m-", "P1D", "10S")
		default:
			g.celFault(path + ":") // matches the pattern, but is no time.Duration
			return g.pick("9999999999h", "2562048h", "99999999999999999999s")
		}
	}
	d := minimum + time.Duration(g.r.Int63n(int64(48*time.Hour)))
	switch g.r.Intn(3) {
	case 0:
		d = minimum
	case 1:
		d = d.Truncate(time.Second)
	}
	return g.duration(d.Truncate(time.Millisecond))
}

func (g *fuzzGen) rollbackReleases(path string) any {
	if g.r.Intn(3) == 0 {
		return nil
	}
	if g.bad() {
		if g.r.Intn(4) == 0 {
			g.blockingFault(path + ":")
			return []any{"3", 1.5, true}[g.r.Intn(3)]
		}
		g.fault(path + ":")
		return []int64{-1, -100, 11, 1000, 1 << 31, -(1 << 31) - 1, 1 << 53}[g.r.Intn(7)]
	}
	return int64(g.r.Intn(11))
}

func (g *fuzzGen) boolean(path string) any {
	if g.bad() && g.r.Intn(3) == 0 {
		g.blockingFault(path + ":")
		return g.pick("true", "yes")
	}
	return g.r.Intn(2) == 0
}

// objectName is a metadata.name; max is the rules' limit (63 for ClusterStacks).
func (g *fuzzGen) objectName(max int) string {
	if g.bad() {
		switch g.r.Intn(3) {
		case 0:
			if max >= 253 {
				g.fault("metadata.name")
				return g.dnsName("fz", 254+g.r.Intn(50))
			}
			n := max + 1 + g.r.Intn(min(3, 253-max)) // just over the limit, or anywhere up to 253
			if g.r.Intn(2) == 0 {
				n = max + 1 + g.r.Intn(253-max)
			}
			if n > 253 {
				g.fault("metadata.name")
			} else {
				g.celFault("metadata.name")
			}
			return g.dnsName("fz", n)
		case 1:
			g.fault("metadata.name")
			return g.dnsName("fz", 254+g.r.Intn(50))
		default:
			g.fault("metadata.name")
			return g.pick("FZ-"+g.str(lowerAlnum, 5), "fz_"+g.str(lowerAlnum, 5), "fz-", "fz.", "fz..a", "fz "+g.str(lowerAlnum, 3), "fz/x")
		}
	}
	return g.dnsName("fz", g.length(3, max))
}

// isBlocked reports whether a wrong type made the API server skip the CEL rules.
func isBlocked(faults []fault) bool {
	for _, f := range faults {
		if f.blocking {
			return true
		}
	}
	return false
}

func validSegment(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	return strings.Trim(s, lowerAlnum) == ""
}

// validMinor reports whether s is a Kubernetes minor "<major>.<minor>" (decimals without
// leading zeros, at most 8 characters).
func validMinor(s string) bool {
	number := func(n string) bool {
		return n != "" && strings.Trim(n, digits) == "" && (n == "0" || n[0] != '0')
	}
	major, minor, ok := strings.Cut(s, ".")
	return ok && len(s) <= 8 && number(major) && number(minor)
}

// clusterStack generates a ClusterStack and records its faults.
func (g *fuzzGen) clusterStack() *unstructured.Unstructured {
	name := g.objectName(63)
	provider := g.segment("spec.provider")
	stackName := g.segment("spec.name")
	minor := g.kubernetesVersion("spec.kubernetesVersion")
	versions := g.versions("spec.versions")
	if list, ok := versions.([]any); ok && g.r.Intn(3) == 0 {
		// A version whose release name is just at, or just over, the limit of 63.
		if n := 63 - len(releasename.Format(provider, stackName, minor, "")) + g.r.Intn(2); n >= 2 && n <= 64 {
			if v := g.versionOfLen(n); !slices.Contains(list, any(v)) {
				list = append(list, v)
				versions = list
			}
		}
	}
	autoSubscribe := g.boolean("spec.autoSubscribe")
	spec := map[string]any{
		"provider": provider, "name": stackName, "kubernetesVersion": minor,
		"source": g.source("spec.source"),
	}
	if versions != nil {
		spec["versions"] = versions
	}
	if autoSubscribe != false || g.r.Intn(2) == 0 {
		spec["autoSubscribe"] = autoSubscribe
	}
	if iv := g.interval("spec.interval", 10*time.Second); iv != nil {
		spec["interval"] = iv
	}
	if rb := g.rollbackReleases("spec.rollbackReleases"); rb != nil {
		spec["rollbackReleases"] = rb
	}
	if g.r.Intn(3) == 0 {
		spec["followMovedTags"] = g.boolean("spec.followMovedTags")
	}
	if g.r.Intn(3) == 0 {
		sa := g.dnsName("sa", g.length(2, 253))
		if g.bad() {
			sa = g.pick("", "SA", "sa_1", "-sa", "sa-", strings.Repeat("s", 254), g.badChars(5, ".-"))
			if len(sa) > 253 {
				g.blockingFault("spec.serviceAccountName:")
			} else {
				g.fault("spec.serviceAccountName:")
			}
		}
		spec["serviceAccountName"] = sa
	}

	// Cross-field rules, predicted from the generated values.
	list, isList := versions.([]any)
	if autoSubscribe == false && (versions == nil || isList && len(list) == 0) {
		g.celFault("set spec.versions to at least one version")
	}
	if validSegment(provider) && validSegment(stackName) && validMinor(minor) {
		for _, v := range list {
			if rel := releasename.Format(provider, stackName, minor, v.(string)); utf8.RuneCountInString(rel) > 63 {
				if strings.Contains(rel, "\n") {
					// The API server refuses a messageExpression's result with a line break
					// and reports the rule's static message instead.
					g.celFault("spec.versions: a release name (tag) <provider>-<name>-<major>-<minor>-<version> would be longer than 63 characters")
				} else {
					g.celFault("spec.versions: release name " + rel + " would be " + strconv.Itoa(utf8.RuneCountInString(rel)) + " characters")
				}
				break
			}
		}
		if prefix := releasename.Format(provider, stackName, minor, ""); autoSubscribe == true && len(prefix) > 63-16 {
			g.celFault("spec.provider, spec.name, spec.kubernetesVersion: the release names start with " + prefix + ", " + strconv.Itoa(len(prefix)) + " characters")
		}
	}
	return object("ClusterStack", name, spec)
}

// clusterStackRelease generates a ClusterStackRelease, named like its tag unless it is a fault.
func (g *fuzzGen) clusterStackRelease() *unstructured.Unstructured {
	provider := g.segment("spec.provider")
	stackName := g.segment("spec.stackName")
	minor := g.kubernetesVersion("spec.kubernetesVersion")
	version := g.version()
	if g.bad() {
		version = g.badVersion()
		if len(version) > 64 {
			g.blockingFault("spec.version:")
		} else {
			g.fault("spec.version:")
		}
	}
	spec := map[string]any{
		"clusterStack": g.dnsName("s", g.length(1, 63)), "provider": provider, "stackName": stackName,
		"kubernetesVersion": minor, "version": version, "source": g.source("spec.source"),
	}
	if g.bad() {
		g.blockingFault("spec.clusterStack:")
		spec["clusterStack"] = strings.Repeat("s", 64+g.r.Intn(200))
	}
	if iv := g.interval("spec.interval", 0); iv != nil {
		spec["interval"] = iv
	}
	if g.r.Intn(3) == 0 {
		spec["followMovedTags"] = g.boolean("spec.followMovedTags")
	}
	tag := provider + "-" + stackName + "-" + strings.ReplaceAll(minor, ".", "-") + "-" + version
	name := tag
	if g.bad() {
		name = g.objectName(253)
		if name != tag {
			g.celFault("metadata.name must be <provider>-<stackName>-<major>-<minor>-<version>")
		}
	}
	if n := utf8.RuneCountInString(name); n > 63 && n <= 253 {
		g.celFault("metadata.name (the release tag) must be at most 63 characters")
	}
	return object("ClusterStackRelease", name, spec)
}

func (g *fuzzGen) clusterAddon() *unstructured.Unstructured {
	clusterName := g.str(lowerAlnum+"-.", g.length(0, 253))
	if g.bad() {
		g.blockingFault("spec.clusterName:")
		clusterName = strings.Repeat("c", 254+g.r.Intn(100))
	}
	return object("ClusterAddon", g.objectName(253), map[string]any{"clusterName": clusterName})
}

func object(kind, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "clusterstack.io/v1alpha1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": "default"},
		"spec":     spec,
	}}
}

func envInt(name string, def int64) int64 {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		Expect(err).NotTo(HaveOccurred(), "%s=%q", name, v)
		return n
	}
	return def
}

var _ = Describe("Fuzzed admission", func() {
	It("refuses every generated invalid object with a message naming the field, and accepts every valid one", func(ctx SpecContext) {
		seed := envInt("API_FUZZ_SEED", time.Now().UnixNano())
		n := int(envInt("API_FUZZ_N", 300))
		AddReportEntry("API_FUZZ_SEED", seed)
		fmt.Fprintf(GinkgoWriter, "fuzzed admission: API_FUZZ_SEED=%d API_FUZZ_N=%d\n", seed, n)
		g := &fuzzGen{r: rand.New(rand.NewSource(seed))}

		var failures []string
		stats := map[string]int{}
		start := time.Now()
		for i := 0; i < n+n/3+n/6; i++ {
			g.faults = nil
			var obj *unstructured.Unstructured
			switch {
			case i < n:
				obj = g.clusterStack()
			case i < n+n/3:
				obj = g.clusterStackRelease()
			default:
				obj = g.clusterAddon()
			}
			err := k8s.Create(ctx, obj, client.DryRunAll)
			if problem := judge(err, g.faults); problem != "" {
				js, _ := json.Marshal(shorten(obj.Object))
				failures = append(failures, fmt.Sprintf("#%d %s: %s\n  object: %s\n  error: %s", i, obj.GetKind(), problem, js, shortenString(fmt.Sprint(err), 2000)))
			}
			outcome := "accepted"
			if err != nil {
				outcome = "refused"
			}
			stats[obj.GetKind()+" "+outcome]++
		}
		elapsed := time.Since(start)
		fmt.Fprintf(GinkgoWriter, "fuzzed admission: %d objects in %s: %v\n", n+n/3+n/6, elapsed.Round(time.Millisecond), stats)
		AddReportEntry("fuzzed admission", fmt.Sprintf("%d objects in %s: %v", n+n/3+n/6, elapsed.Round(time.Millisecond), stats))
		if len(failures) > 10 {
			failures = append(failures[:10], fmt.Sprintf("... and %d more", len(failures)-10))
		}
		Expect(failures).To(BeEmpty(), "replay with API_FUZZ_SEED=%d API_FUZZ_N=%d:\n%s", seed, n, strings.Join(failures, "\n"))
		// Both outcomes must be exercised, or the generator has drifted.
		Expect(stats["ClusterStack accepted"]).To(BeNumerically(">", n/10))
		Expect(stats["ClusterStack refused"]).To(BeNumerically(">", n/10))
	})
})

// judge returns what is wrong with the API server's answer err to an object with faults.
func judge(err error, faults []fault) string {
	if err != nil {
		if apierrors.IsInternalError(err) {
			return "internal error"
		}
		if status, ok := err.(apierrors.APIStatus); ok && status.Status().Code >= 500 {
			return fmt.Sprintf("server error %d", status.Status().Code)
		}
	}
	if len(faults) == 0 {
		if err != nil {
			return "refused, but valid by construction"
		}
		return ""
	}
	if err == nil {
		return fmt.Sprintf("accepted, but invalid by construction: %v", wants(faults))
	}
	if !apierrors.IsInvalid(err) {
		return "refused, but not as Invalid"
	}
	blocked := isBlocked(faults)
	var missing []string
	for _, f := range faults {
		if f.cel && blocked {
			continue
		}
		if !strings.Contains(err.Error(), f.want) {
			missing = append(missing, f.want)
		}
	}
	if blocked && !strings.Contains(err.Error(), "some validation rules were not checked") {
		missing = append(missing, "(CEL rules skipped: \"some validation rules were not checked\")")
	}
	if len(missing) > 0 {
		return fmt.Sprintf("the refusal does not name %q", missing)
	}
	return ""
}

func wants(faults []fault) []string {
	var w []string
	for _, f := range faults {
		w = append(w, f.want)
	}
	return w
}

// shorten replaces long strings in a generated object by their start and length, for reports.
func shorten(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, e := range v {
			m[k] = shorten(e)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = shorten(e)
		}
		return l
	case string:
		return shortenString(v, 80)
	}
	return v
}

func shortenString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s...(%d bytes)", s[:n], len(s))
}
