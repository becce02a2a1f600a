package controllers

// TEMPORARY: replaced by TagLister.Refs from the git-credentials branch when it is merged.

import (
	"context"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/storage/memory"

	csv1 "github.com/clusterstack-io/clusterstack-operator/api/v1alpha1"
)

// Refs returns every tag of the repository with the commit it points to (peeled).
func (l *TagLister) Refs(ctx context.Context, ns string, src csv1.StackSource, maxAge time.Duration) (map[string]string, error) {
	auth, err := l.auth(ctx, ns, src)
	if err != nil {
		return nil, err
	}
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{src.URL}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: auth, PeelingOption: git.AppendPeeled})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range refs {
		if !r.Name().IsTag() {
			continue
		}
		name := r.Name().Short()
		if strings.HasSuffix(name, "^{}") {
			out[strings.TrimSuffix(name, "^{}")] = r.Hash().String()
		} else if _, ok := out[name]; !ok {
			out[name] = r.Hash().String()
		}
	}
	return out, nil
}
