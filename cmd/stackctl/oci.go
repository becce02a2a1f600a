package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"

	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/clusterstack-io/clusterstack-operator/internal/ocistack"
	"github.com/clusterstack-io/clusterstack-operator/internal/releasename"
	"github.com/clusterstack-io/clusterstack-operator/internal/stack"
	"github.com/clusterstack-io/clusterstack-operator/internal/stackcli"
)

// Environment variables holding secrets, so that they are not on command lines.
const (
	envRegistryPassword     = "REGISTRY_PASSWORD"
	envFromRegistryPassword = "FROM_REGISTRY_PASSWORD"
	envCosignPassword       = "COSIGN_PASSWORD"
)

// registryFlags are the flags of one registry side (destination, or with prefix "from-" the
// source of a mirror).
type registryFlags struct {
	username, caFile string
	insecure         bool
	passwordEnv      string
}

func (r *registryFlags) register(fs *flag.FlagSet, prefix, passwordEnv string) {
	fs.StringVar(&r.username, prefix+"username", "", "registry user name (the password is read from $"+passwordEnv+")")
	fs.StringVar(&r.caFile, prefix+"ca-file", "", "PEM CA bundle the registry's certificate chains to")
	fs.BoolVar(&r.insecure, prefix+"insecure", false, "plain http (loopback registries only, never with credentials)")
	r.passwordEnv = passwordEnv
}

func (r *registryFlags) target(url string) (ocistack.Target, error) {
	t := ocistack.Target{URL: url, Username: r.username, Insecure: r.insecure}
	if r.username != "" {
		t.Password = os.Getenv(r.passwordEnv)
	}
	if r.caFile != "" {
		ca, err := os.ReadFile(r.caFile)
		if err != nil {
			return t, err
		}
		t.CA = ca
	}
	if _, err := ocistack.Reference(url); err != nil {
		return t, err
	}
	return t, nil
}

// parseInterspersed parses flags before, between and after the positional arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func loadSigner(keyFile string) (signature.Signer, error) {
	if keyFile == "" {
		return nil, nil
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	return ocistack.LoadSigner(key, []byte(os.Getenv(envCosignPassword)))
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt)
}

// push publishes a stack directory as an OCI artifact in Flux's format.
func push(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stackctl push", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var reg registryFlags
	reg.register(fs, "", envRegistryPassword)
	version := fs.String("version", "", "stack version (default: the cluster-class chart's version)")
	tag := fs.String("tag", "", "tag to publish (default: the release name <provider>-<name>-<major>-<minor>-<version>)")
	signKey := fs.String("sign-key", "", "cosign private key to sign the release with (its password from $"+envCosignPassword+")")
	source := fs.String("source", "", "source URL recorded in the artifact (org.opencontainers.image.source)")
	revision := fs.String("revision", "", "source revision recorded in the artifact, e.g. <tag>@sha1:<commit>")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 2 {
		fmt.Fprintf(stderr, "stackctl push: give a stack directory and oci://<host>/<repository>\n%s", usage)
		return 2
	}
	dir, url := pos[0], pos[1]
	t, err := reg.target(url)
	if err != nil {
		fmt.Fprintf(stderr, "stackctl push: %v\n", err)
		return 2
	}
	signer, err := loadSigner(*signKey)
	if err != nil {
		fmt.Fprintf(stderr, "stackctl push: %v\n", err)
		return 1
	}
	name, err := releaseTag(dir, *version, *tag)
	if err != nil {
		fmt.Fprintf(stderr, "stackctl push: %v\n", err)
		return 1
	}
	ctx, cancel := signalContext()
	defer cancel()
	pub, err := ocistack.PushRelease(ctx, t, dir, name, ocistack.Origin{Source: *source, Revision: *revision}, signer)
	if err != nil {
		fmt.Fprintf(stderr, "stackctl push: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s:%s@%s%s\n", url, name, pub.Release.Digest, signedNote(pub.Signed))
	printCharts(stdout, url, publishedCharts(name, pub))
	return 0
}

func signedNote(signed bool) string {
	if signed {
		return " (signed)"
	}
	return ""
}

// publishedCharts are the charts of a release published as tag, signed or not, by component.
func publishedCharts(tag string, pub ocistack.Published) map[string]ocistack.Copied {
	out := map[string]ocistack.Copied{}
	for c, d := range pub.Charts {
		out[c] = ocistack.Copied{Tag: ocistack.ChartTag(tag, c), Descriptor: d, Signed: pub.Signed}
	}
	return out
}

// printCharts prints one line per chart of a release published or copied to url, in component
// order: url:<chart tag>@<digest> (chart <component>[, signed]).
func printCharts(w io.Writer, url string, charts map[string]ocistack.Copied) {
	components := make([]string, 0, len(charts))
	for c := range charts {
		components = append(components, c)
	}
	sort.Strings(components)
	for _, c := range components {
		ch := charts[c]
		note := ""
		if ch.Signed {
			note = ", signed"
		}
		fmt.Fprintf(w, "%s:%s@%s (chart %s%s)\n", url, ch.Tag, ch.Descriptor.Digest, c, note)
	}
}

// releaseTag is the tag a stack directory is published under: tag, or the release name of
// version (default: the cluster-class chart's version). The stack must load without problems.
func releaseTag(dir, version, tag string) (string, error) {
	s, err := stack.Load(dir)
	if err != nil {
		var ps stack.Problems
		if errors.As(err, &ps) {
			return "", fmt.Errorf("the stack has problems (stackctl lint %s):\n%s", dir, strings.TrimSuffix(stack.FormatProblems(dir, ps), "\n"))
		}
		return "", err
	}
	if tag != "" {
		return tag, nil
	}
	if version == "" {
		version = s.ClusterClass.Version
	}
	if _, err := releasename.ParseVersion(version); err != nil {
		return "", fmt.Errorf("%w: give --version", err)
	}
	return s.ReleaseName(version), nil
}

// mirror copies releases into a registry: from a registry (byte for byte, with signatures) or
// from the release tags of a stack directory in a Git checkout (published as push does).
func mirror(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stackctl mirror", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var from, to registryFlags
	to.register(fs, "", envRegistryPassword)
	from.register(fs, "from-", envFromRegistryPassword)
	tags := fs.String("tags", "", "comma-separated tags to copy (default: every release tag)")
	signKey := fs.String("sign-key", "", "with a Git source: cosign private key to sign what is published (password from $"+envCosignPassword+")")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 2 {
		fmt.Fprintf(stderr, "stackctl mirror: give a source (oci://<host>/<repository> or a stack directory in a Git checkout) and oci://<host>/<repository>\n%s", usage)
		return 2
	}
	dst, err := to.target(pos[1])
	if err != nil {
		fmt.Fprintf(stderr, "stackctl mirror: %v\n", err)
		return 2
	}
	var only []string
	if *tags != "" {
		only = strings.Split(*tags, ",")
	}
	ctx, cancel := signalContext()
	defer cancel()
	if strings.HasPrefix(pos[0], "oci://") {
		src, err := from.target(pos[0])
		if err != nil {
			fmt.Fprintf(stderr, "stackctl mirror: %v\n", err)
			return 2
		}
		return mirrorRegistry(ctx, src, dst, only, stdout, stderr)
	}
	signer, err := loadSigner(*signKey)
	if err != nil {
		fmt.Fprintf(stderr, "stackctl mirror: %v\n", err)
		return 1
	}
	return mirrorGit(ctx, pos[0], dst, only, signer, stdout, stderr)
}

// maxMirrorTags bounds the tags listed from a source registry.
const maxMirrorTags = 10000

func mirrorRegistry(ctx context.Context, src, dst ocistack.Target, only []string, stdout, stderr io.Writer) int {
	if len(only) == 0 {
		all, err := ocistack.Tags(ctx, src, maxMirrorTags)
		if err != nil {
			fmt.Fprintf(stderr, "stackctl mirror: %v\n", err)
			return 1
		}
		// Charts are copied with the release that names them.
		for _, t := range all {
			if !ocistack.IsSignatureTag(t) && !ocistack.IsChartTag(t) {
				only = append(only, t)
			}
		}
	}
	failed := false
	for _, tag := range only {
		c, err := ocistack.Mirror(ctx, src, dst, tag)
		if err != nil {
			fmt.Fprintf(stderr, "stackctl mirror: %v\n", err)
			failed = true
			continue
		}
		fmt.Fprintf(stdout, "%s:%s@%s%s\n", dst.URL, tag, c.Descriptor.Digest, signedNote(c.Signed))
		printCharts(stdout, dst.URL, c.Charts)
	}
	if failed {
		return 1
	}
	return 0
}

func mirrorGit(ctx context.Context, dir string, dst ocistack.Target, only []string, signer signature.Signer, stdout, stderr io.Writer) int {
	s, err := stack.Load(dir)
	if err != nil {
		fmt.Fprintf(stderr, "stackctl mirror: %s: %v\n", dir, err)
		return 1
	}
	co, err := stackcli.OpenCheckout(dir)
	if err != nil {
		fmt.Fprintf(stderr, "stackctl mirror: %v\n", err)
		return 1
	}
	rel, err := co.RelPath(dir)
	if err != nil {
		fmt.Fprintf(stderr, "stackctl mirror: %v\n", err)
		return 1
	}
	all, err := co.ReleaseTags(s.ReleaseName(""))
	if err != nil {
		fmt.Fprintf(stderr, "stackctl mirror: %v\n", err)
		return 1
	}
	want := map[string]bool{}
	for _, t := range only {
		want[t] = true
	}
	source := co.RemoteURL()
	if source == "" {
		source = "file://" + filepath.ToSlash(co.Root)
	}
	failed, found := false, 0
	for _, tag := range all {
		if len(want) > 0 && !want[tag.Name] {
			continue
		}
		if _, err := releasename.ParseVersion(strings.TrimPrefix(tag.Name, s.ReleaseName(""))); err != nil {
			continue
		}
		found++
		// The commit's time as the artifact's creation time: the same tag publishes the same
		// digest, however often it is mirrored.
		err := func() error {
			root, extracted, err := co.Extract(tag.Commit, rel)
			if err != nil {
				return err
			}
			defer func() { _ = os.RemoveAll(root) }()
			pub, err := ocistack.PushRelease(ctx, dst, extracted, tag.Name, ocistack.Origin{Source: source, Revision: tag.Name + "@sha1:" + tag.Commit, Created: tag.Time}, signer)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s:%s@%s%s (from %s@sha1:%s)\n", dst.URL, tag.Name, pub.Release.Digest, signedNote(pub.Signed), tag.Name, tag.Commit)
			printCharts(stdout, dst.URL, publishedCharts(tag.Name, pub))
			return nil
		}()
		if err != nil {
			fmt.Fprintf(stderr, "stackctl mirror: tag %s: %v\n", tag.Name, err)
			failed = true
		}
	}
	if found < len(want) || found == 0 {
		fmt.Fprintf(stderr, "stackctl mirror: %d release tags of %s found in %s (asked for %v)\n", found, s.ReleaseName("<version>"), co.Root, only)
		return 1
	}
	if failed {
		return 1
	}
	return 0
}

// keyPair writes <prefix>.key (cosign's encrypted format, password from $COSIGN_PASSWORD) and
// <prefix>.pub.
func keyPair(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, usage)
		return 2
	}
	priv, pub, err := ocistack.GenerateKeyPair([]byte(os.Getenv(envCosignPassword)))
	if err != nil {
		fmt.Fprintf(stderr, "stackctl key-pair: %v\n", err)
		return 1
	}
	for name, data := range map[string][]byte{args[0] + ".key": priv, args[0] + ".pub": pub} {
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			fmt.Fprintf(stderr, "stackctl key-pair: %v\n", err)
			return 1
		}
		_, err = f.Write(data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			fmt.Fprintf(stderr, "stackctl key-pair: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, name)
	}
	return 0
}
