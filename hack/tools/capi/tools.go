//go:build tools

// Package tools pins the CAPI core manager's main package for `go mod tidy`.
package tools

import _ "sigs.k8s.io/cluster-api/core"
