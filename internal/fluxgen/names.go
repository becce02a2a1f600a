package fluxgen

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Naming.
//
// Every generated name is built by SafeName (or, for Helm release names and label values,
// by the same plain-or-hashed rule with the character set those allow). A name is either
//
//   - plain: the parts joined with "-", used only when that join is unambiguous (see below),
//     fits the limit and does not look hashed; or
//   - hashed: a readable prefix (the parts joined with "-", cleaned and cut to fit) followed by
//     "-" and hashLen lowercase hex digits of the SHA-256 of an injective encoding of the exact
//     tuple of parts.
//
// Why distinct tuples never share a name (for one name function, i.e. a fixed number of parts):
//
//  1. plain vs plain: a plain name is used only when every part is a non-empty DNS-1123 label
//     ([a-z0-9-], starting and ending with [a-z0-9]) and no part but the first contains '-'.
//     Then the last n-1 '-'-separated segments of the name are exactly parts 2..n (they have
//     no '-' of their own, and part 1 does not end with '-'), and part 1 is what precedes them:
//     the tuple is recovered from the name, so two tuples with the same plain name are equal.
//     (Joining when more parts may contain '-' is ambiguous: ("a", "b-c") and ("a-b", "c")
//     both give "a-b-c"; the second is plain, the first is hashed.)
//  2. plain vs hashed: every hashed name ends with "-" and hashLen hex digits (or is only those
//     digits); a join of that shape is never used plain (looksHashed), so no plain name equals
//     a hashed one.
//  3. hashed vs hashed: equal hashed names end with the same digits, i.e. the tuples' hashes
//     agree in their first 48 bits. The hashed input is injective (each part is written as
//     "<length>:<part>,"), so this needs a SHA-256 collision on 48 bits: about 2^-48 for a given
//     pair, 2e-7 for ten thousand hashed names of one kind in one namespace. No scheme can do
//     better: a tuple of a 63-character cluster and a 63-character component carries more
//     information than fits into 63 characters, so some shortening must be a hash. Should it
//     ever happen between tuples of different owners (two clusters, two releases), the Applier
//     refuses to take over the other owner's object instead of silently sharing it.
//
// Names of different functions that produce objects of one kind in one namespace are kept apart
// too: the cluster-class objects' plain names end in "-cluster-class", which the per-component
// names (AddonChartName, AddonObjectName) never end in plain; their hashed names hash tuples of
// different lengths, whose encodings differ.

// Name length limits.
const (
	// MaxObjectName is the limit of the names of generated Flux objects (GitRepository,
	// HelmChart, HelmRelease, Kustomization): Flux copies them into label values of the objects
	// it creates, and label values have at most 63 characters. Within it a name is a DNS-1123 label.
	MaxObjectName = 63
	// MaxHelmReleaseName is Helm's limit on release names.
	MaxHelmReleaseName = 53
	// MaxConfigMapName is the limit of ConfigMap names (a DNS-1123 subdomain).
	MaxConfigMapName = 253
	// MaxLabelValue is the limit of label values.
	MaxLabelValue = 63

	// hashLen is the number of hex digits (4 bits each) of the tuple hash in a hashed name.
	hashLen = 12
	// minSafeName is the smallest limit SafeName accepts: a one-character prefix, '-' and the hash.
	minSafeName = hashLen + 2
	// clusterClassSuffix ends the plain names of a release's cluster-class objects.
	clusterClassSuffix = "-cluster-class"
)

// SafeName returns a name for the tuple parts that is at most max characters long, consists of
// lowercase letters, digits and '-', starts and ends with a letter or digit (a DNS-1123 label
// when max <= 63, a DNS-1123 subdomain when max <= 253), and is distinct for distinct tuples.
//
// The name is the parts joined with "-" when every part is a DNS-1123 label, no part but the
// first contains '-', the join fits into max and does not end like a hashed name. Otherwise it is
// a readable prefix (the cleaned join, cut to fit) followed by "-" and 12 hex digits of a hash
// of the exact tuple. See the package's naming notes for why distinct tuples get distinct names.
// max must be at least 14.
func SafeName(max int, parts ...string) string {
	if max < minSafeName {
		panic(fmt.Sprintf("fluxgen.SafeName: limit %d is below the minimum %d", max, minSafeName))
	}
	if plain, ok := plainName(parts); ok && len(plain) <= max {
		return plain
	}
	return hashedName(max, parts)
}

// plainName returns the parts joined with "-" when that join is unambiguous (every part a
// DNS-1123 label, no part but the first containing '-') and does not look hashed.
func plainName(parts []string) (string, bool) {
	if len(parts) == 0 {
		return "", false
	}
	for i, p := range parts {
		if !isLabelChars(p) || (i > 0 && strings.Contains(p, "-")) {
			return "", false
		}
	}
	s := strings.Join(parts, "-")
	if looksHashed(s) {
		return "", false
	}
	return s, true
}

// isLabelChars reports whether s is non-empty, has only lowercase letters, digits and '-', and
// starts and ends with a letter or digit: a DNS-1123 label but for the length.
func isLabelChars(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool { return ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') }

func isHex(c byte) bool { return ('a' <= c && c <= 'f') || ('0' <= c && c <= '9') }

// looksHashed reports whether s has the shape of a hashed name: it ends with hashLen hex digits
// that are the whole of s or follow a '-'.
func looksHashed(s string) bool {
	if len(s) < hashLen {
		return false
	}
	for i := len(s) - hashLen; i < len(s); i++ {
		if !isHex(s[i]) {
			return false
		}
	}
	return len(s) == hashLen || s[len(s)-hashLen-1] == '-'
}

// hashedName is the readable prefix of the tuple, cut to leave room for the hash, then "-" and
// the hash of the tuple.
func hashedName(max int, parts []string) string {
	h := tupleHash(parts)
	prefix := cleanPrefix(strings.Join(parts, "-"))
	if room := max - hashLen - 1; len(prefix) > room {
		prefix = strings.TrimRight(prefix[:room], "-")
	}
	if prefix == "" {
		return h
	}
	return prefix + "-" + h
}

// tupleHash is hashLen hex digits of the SHA-256 of the tuple, each part written as
// "<length>:<part>,": an encoding from which the tuple can be read back, so distinct tuples
// (also of different lengths, with empty parts or with any separator inside parts) hash
// distinct inputs.
func tupleHash(parts []string) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(strconv.Itoa(len(p)))
		b.WriteByte(':')
		b.WriteString(p)
		b.WriteByte(',')
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])[:hashLen]
}

// cleanPrefix lowercases s, turns every character but letters and digits into '-', collapses
// runs of '-' and trims them at both ends.
func cleanPrefix(s string) string {
	s = strings.ToLower(s)
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) {
			c = '-'
		}
		if c == '-' && (len(b) == 0 || b[len(b)-1] == '-') {
			continue
		}
		b = append(b, c)
	}
	return strings.TrimRight(string(b), "-")
}

// perComponentName names an object of one component of an owner (a cluster or a release),
// leaving the plain names ending in "-cluster-class" to the cluster-class objects.
func perComponentName(owner, component string) string {
	name := SafeName(MaxObjectName, owner, component)
	if strings.HasSuffix(name, clusterClassSuffix) {
		return hashedName(MaxObjectName, []string{owner, component})
	}
	return name
}

// Names of generated objects.

// GitRepositoryName is the name of a release's GitRepository: the release name when it is a
// DNS-1123 label of at most 63 characters ("aws-base-1-36-v1"), otherwise shortened by SafeName.
func GitRepositoryName(release string) string { return SafeName(MaxObjectName, release) }

// ClusterClassObjectName is the name of the HelmChart/HelmRelease/Kustomization of a release's
// cluster-class: "<release>-cluster-class" ("aws-base-1-36-v1-cluster-class") when that is a
// DNS-1123 label of at most 63 characters, otherwise shortened by SafeName.
func ClusterClassObjectName(release string) string {
	return SafeName(MaxObjectName, release+clusterClassSuffix)
}

// AddonChartName is the name of the shared HelmChart of an addon component of a release:
// SafeName(63, release, component), "aws-base-1-36-v1-cni" for a component without '-'.
func AddonChartName(release, component string) string { return perComponentName(release, component) }

// AddonObjectName is the name of a cluster's HelmRelease or Kustomization for a component:
// SafeName(63, cluster, component), "alpha-cni" for a component without '-'.
func AddonObjectName(cluster, component string) string {
	return perComponentName(cluster, component)
}

// ValuesConfigMapName is the name of the values ConfigMap of a cluster for one release (each
// release has its own, so a cluster's Flux objects switch values and charts in one write):
// SafeName(253, cluster, release, "values"). Release names contain '-', so it carries a hash:
// "alpha-aws-base-1-36-v1-values-<12 hex digits>". Distinct (cluster, release) pairs get
// distinct names.
func ValuesConfigMapName(cluster, release string) string {
	return SafeName(MaxConfigMapName, cluster, release, "values")
}

// KubeconfigSecretName is the name of CAPI's kubeconfig Secret of a cluster.
func KubeconfigSecretName(cluster string) string { return cluster + "-kubeconfig" }

// HelmReleaseName returns a Helm release name within Helm's limit of 53 characters: the name
// itself when it is a valid Helm release name (DNS-1123 labels joined by '.') that fits and does
// not look hashed, otherwise a readable prefix and a hash of the name (as SafeName). Distinct
// names give distinct release names.
func HelmReleaseName(name string) string {
	if len(name) <= MaxHelmReleaseName && isHelmReleaseName(name) && !looksHashed(name) {
		return name
	}
	return hashedName(MaxHelmReleaseName, []string{name})
}

// isHelmReleaseName reports whether s matches Helm's release name pattern (without its length).
func isHelmReleaseName(s string) bool {
	for _, l := range strings.Split(s, ".") {
		if !isLabelChars(l) {
			return false
		}
	}
	return true
}

// LabelValue returns s when it is a valid label value (at most 63 letters, digits, '-', '_' and
// '.', starting and ending with a letter or digit) that does not look hashed, otherwise a
// readable prefix and a hash of s (as SafeName); "" stays "". Distinct strings give distinct
// values, so a selector on LabelValue(name) matches the objects labelled for that name only.
func LabelValue(s string) string {
	if s == "" {
		return ""
	}
	if len(s) <= MaxLabelValue && isLabelValueChars(s) && !looksHashed(s) {
		return s
	}
	return hashedName(MaxLabelValue, []string{s})
}

func isLabelValueChars(s string) bool {
	if s == "" {
		return false
	}
	alnum := func(c byte) bool { return isAlnum(c) || ('A' <= c && c <= 'Z') }
	if !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}
