//go:build tools

// Package tools pins Gitea's main package for `go mod tidy`: the plane's forge, built into
// bin/gitea by `make tools`.
package tools

import _ "code.gitea.io/gitea"
