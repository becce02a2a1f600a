package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
	"github.com/clusterstack-io/clusterstack-operator/internal/gitauth"
	"github.com/clusterstack-io/clusterstack-operator/internal/ocistack"
	"github.com/clusterstack-io/clusterstack-operator/internal/redact"
)

// maxListedOCITags bounds the tags one listing of an OCI repository reads, of any form: a
// registry that serves more fails the listing (as gitauth.ErrTooManyRefs), naming the limit.
// Registries list tags in pages of at most ocistack.MaxMetadataBytes each; a page that does not
// decode within that bound fails the listing the same way.
const maxListedOCITags = 10 * maxKeptTags

// OCIListing is Listing for an OCI repository, with the credentials of the source's
// kubernetes.io/dockerconfigjson Secret and the CA of its certSecretRef in namespace ns (the
// namespace its Flux objects are in), refusing what Flux refuses (credentials over plain http,
// plain http to a host that is not loopback). Refs maps the tags of sel's form to "", but for
// resolve, which maps to the hex of the digest it points to (a HEAD of its manifest), or is
// missing when the repository has no such tag.
func (l *TagLister) OCIListing(ctx context.Context, ns string, src csv1.OCISource, sel TagSelector, maxAge time.Duration, notBefore time.Time, resolve string) (TagListing, error) {
	source := ociSourceKey(ns, src)
	key := fmt.Sprintf("%s|%d|%s|%s", source, sel.Form, sel.Prefix, resolve)
	with := "without credentials"
	if src.SecretRef != nil {
		with = "with credentials Secret " + ns + "/" + src.SecretRef.Name
	}
	var target ocistack.Target
	return l.cached(ctx, source, key, maxAge, notBefore,
		func(ctx context.Context) (string, error) {
			what := fmt.Sprintf("list tags of %s (%s)", redact.URL(src.URL), with)
			var err error
			if target, err = l.ociTarget(ctx, ns, src); err != nil {
				return "", fmt.Errorf("%s: %w", what, err)
			}
			return what, nil
		},
		func(ctx context.Context) (TagListing, error) {
			return listOCI(ctx, target, sel, resolve)
		})
}

// ociSourceKey identifies an OCI source in the tag cache: the namespace, the URL and the
// credentials and CA Secrets.
func ociSourceKey(ns string, src csv1.OCISource) string {
	source := "oci|" + ns + "|" + src.URL
	if src.SecretRef != nil {
		source += "|" + src.SecretRef.Name
	}
	if src.CertSecretRef != nil {
		source += "|ca:" + src.CertSecretRef.Name
	}
	return source
}

// listOCI lists the tags of sel's form, and resolves one.
func listOCI(ctx context.Context, t ocistack.Target, sel TagSelector, resolve string) (TagListing, error) {
	tags, err := ocistack.Tags(ctx, t, maxListedOCITags)
	if err != nil {
		if errors.Is(err, ocistack.ErrTooManyTags) || errors.Is(err, ocistack.ErrBadTagPage) {
			return TagListing{}, fmt.Errorf("%s (%w)", err.Error(), gitauth.ErrTooManyRefs)
		}
		return TagListing{}, err
	}
	all := make(map[string]string, len(tags))
	for _, tag := range tags {
		all[tag] = ""
	}
	out, err := sel.filter(redact.URL(t.URL), all)
	if err != nil {
		return TagListing{}, err
	}
	if _, ok := out.Refs[resolve]; ok && resolve != "" {
		d, err := ocistack.Resolve(ctx, t, resolve)
		if err != nil {
			return TagListing{}, err
		}
		out.Refs[resolve] = strings.TrimPrefix(d, "sha256:")
	}
	return out, nil
}

// ociTarget reads the source's Secrets in namespace ns (never another's).
func (l *TagLister) ociTarget(ctx context.Context, ns string, src csv1.OCISource) (ocistack.Target, error) {
	t := ocistack.Target{URL: src.URL, Insecure: src.Insecure}
	if src.SecretRef != nil {
		s, err := l.readSecret(ctx, "credentials", ns, src.SecretRef.Name)
		if err != nil {
			return t, err
		}
		cfg, ok := s.Data[ocistack.DockerConfigKey]
		if !ok {
			return t, fmt.Errorf("credentials Secret %s/%s has no %s: make it a kubernetes.io/dockerconfigjson Secret (kubectl create secret docker-registry)", ns, src.SecretRef.Name, ocistack.DockerConfigKey)
		}
		host, err := ocistack.Host(src.URL)
		if err != nil {
			return t, err
		}
		if t.Username, t.Password, err = ocistack.DockerConfigCredentials(cfg, host); err != nil {
			return t, fmt.Errorf("credentials Secret %s/%s: %w", ns, src.SecretRef.Name, err)
		}
	}
	if src.CertSecretRef != nil {
		s, err := l.readSecret(ctx, "CA", ns, src.CertSecretRef.Name)
		if err != nil {
			return t, err
		}
		t.CA = s.Data["ca.crt"]
	}
	return t, nil
}
