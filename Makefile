# ClusterStack Operator
#
# Two commands for a new machine:  `make demo` (local management plane with the examples)
# and `make test` (unit, envtest and end-to-end tests on real components).

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
ROOT := $(abspath .)
BIN ?= $(ROOT)/bin
TOOLS := $(ROOT)/hack/tools
STATE_DIR ?= $(ROOT)/.local
# The module cache may not reach the checksum database for every module; every module here is
# pinned by a committed go.sum, so look-ups are not needed.
export GOFLAGS ?= -buildvcs=false
export GONOSUMDB ?= *
export KUBEBUILDER_ASSETS := $(BIN)

# VERSION is the operator's version: the Helm chart's version and appVersion (v$(VERSION), the
# release tag and image tag) are written from it by `make chart`; test/install checks they match.
VERSION := 0.1.0
CHART_DIR := config/helm/clusterstack-operator

GO_SOURCES := $(shell find . -name '*.go' -not -path './hack/*' -not -path './bin/*' -not -path './.local/*' 2>/dev/null)

.DEFAULT_GOAL := help

##@ General
.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development
.PHONY: manifests
manifests: $(BIN)/controller-gen ## Generate CRDs, RBAC and webhook manifests; sync the Helm chart (make chart) and the API docs (make docs).
	$(BIN)/controller-gen crd rbac:roleName=clusterstack-operator webhook paths="./api/...;./controllers/...;./internal/webhooks/..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac \
		output:webhook:artifacts:config=config/webhook
	@$(MAKE) --no-print-directory chart
	@$(MAKE) --no-print-directory docs

.PHONY: chart
chart: ## Sync the Helm chart with config/ (CRDs, RBAC rules), and it and config/flux with VERSION.
	rm -f $(CHART_DIR)/crds/*.yaml
	mkdir -p $(CHART_DIR)/crds $(CHART_DIR)/files
	cp config/crd/bases/*.yaml $(CHART_DIR)/crds/
	cp config/rbac/role.yaml $(CHART_DIR)/files/role.yaml
	cp config/rbac/leader_election_role.yaml $(CHART_DIR)/files/leader_election_role.yaml
	cp config/tenant/cluster_role.yaml $(CHART_DIR)/files/tenant_cluster_role.yaml
	cp config/dashboard/cluster_role.yaml $(CHART_DIR)/files/dashboard_viewer_role.yaml
	sed -i -e 's/^version: .*/version: $(VERSION)/' -e 's/^appVersion: .*/appVersion: "v$(VERSION)"/' $(CHART_DIR)/Chart.yaml
	sed -i -e 's/^\(    tag: \)v.*/\1v$(VERSION)/' config/flux/source/gitrepository.yaml
	sed -i -e 's/^\(      newTag: \)v.*/\1v$(VERSION)/' config/flux/kustomize/operator.yaml

.PHONY: helm-lint
helm-lint: ## Lint and render the Helm chart, and check it against config/default (go test ./test/install).
	go test ./test/install/ -count=1

.PHONY: generate
generate: $(BIN)/controller-gen ## Generate deepcopy code and the docs generated from the API (make docs).
	$(BIN)/controller-gen object:headerFile=hack/boilerplate.go.txt paths="./api/..."
	@$(MAKE) --no-print-directory docs

.PHONY: docs
docs: ## Generate docs/api-reference.md and docs/conditions.md from api/v1alpha1 (go test ./hack/apidocs checks them).
	go run ./hack/apidocs

# verify-generated compares checksums of every file under api/, config/ and docs/ before and
# after `make generate manifests`: a changed, new or removed file fails it, on a clean checkout
# (CI) as on a tree with uncommitted changes, and a new generated file that was never added to
# Git fails it too.
GENERATED_DIRS := api config docs
.PHONY: verify-generated
verify-generated: $(BIN)/controller-gen ## Fail when generate/manifests change, add or remove a file under api/, config/ or docs/.
	@sums() { find $(GENERATED_DIRS) -type f -print0 | sort -z | xargs -0 sha256sum; }; \
	before=$$(mktemp); trap 'rm -f $$before' EXIT; sums > $$before; \
	$(MAKE) --no-print-directory generate manifests; \
	if ! sums | diff -u $$before - >/dev/null; then \
		echo "generated files are out of date: make generate manifests changed:"; \
		sums | diff $$before - | sed -n 's/^[<>] [0-9a-f]*  /  /p' | sort -u; exit 1; fi

.PHONY: fmt
fmt: ## go fmt.
	go fmt ./...

.PHONY: vet
vet: ## go vet.
	go vet ./...

.PHONY: lint
lint: $(BIN)/golangci-lint lint-stack ## Static checks: golangci-lint (.golangci.yml: go vet, staticcheck, gofmt, goimports, errorlint, unparam, ...) and the stack lint.
	$(BIN)/golangci-lint run ./...

.PHONY: lint-stack
lint-stack: ## Lint the reference stacks in stacks/.
	@for d in $$(find stacks -name stack.yaml -o -name csctl.yaml | xargs -n1 dirname | sort -u); do \
		echo "stackctl lint $$d"; go run ./cmd/stackctl lint $$d; done

##@ Build
.PHONY: build
build: $(BIN)/manager ## Build the manager binary into bin/manager.

$(BIN)/manager: $(GO_SOURCES) go.mod go.sum
	CGO_ENABLED=0 go build -o $@ ./cmd

.PHONY: plugin
plugin: ## Build the kubectl plugin into bin/kubectl-clusterstack (put bin/ on PATH: kubectl clusterstack).
	CGO_ENABLED=0 go build -o $(BIN)/kubectl-clusterstack ./cmd/kubectl-clusterstack

PLUGIN_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64

.PHONY: plugin-release
plugin-release: ## Cross-compile the kubectl plugin into dist/*.tar.gz and write dist/clusterstack.yaml (config/krew's manifest with v$(VERSION) and the checksums).
	rm -rf dist && mkdir -p dist
	sed -e '/^#/d' -E -e 's#(version: |download/)v[0-9][^/ ]*#\1v$(VERSION)#' config/krew/clusterstack.yaml > dist/clusterstack.yaml
	set -e; for p in $(PLUGIN_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; d=dist/kubectl-clusterstack_$${os}_$${arch}; \
		mkdir -p $$d; CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags "-s -w" -o $$d/kubectl-clusterstack$$ext ./cmd/kubectl-clusterstack; \
		tar -C $$d -czf $$d.tar.gz kubectl-clusterstack$$ext; rm -r $$d; \
		sum=$$(sha256sum $$d.tar.gz | cut -d' ' -f1); \
		sed -i "\#/kubectl-clusterstack_$${os}_$${arch}.tar.gz\$$#{n;s/sha256: .*/sha256: \"$$sum\"/}" dist/clusterstack.yaml; \
	done
	! grep -q '"0\{64\}"' dist/clusterstack.yaml
	@echo "dist/: archives and clusterstack.yaml for krew-index"

.PHONY: run
run: manifests ## Run the manager against the cluster in $KUBECONFIG.
	go run ./cmd

.PHONY: docker-build
docker-build: ## Build the manager image (needs a Docker engine).
	docker build -t $${IMG:-clusterstack-operator:dev} .

.PHONY: install
install: manifests ## Install the CRDs into the cluster in $KUBECONFIG.
	kubectl apply --server-side -f config/crd/bases

.PHONY: deploy
deploy: manifests ## Deploy the operator (CRDs, RBAC, manager) into the cluster in $KUBECONFIG.
	kubectl apply --server-side -k config/default

##@ Local plane and tests
.PHONY: demo
demo: tools build ## Start the local management plane with the examples (Ctrl-C stops it).
	go run ./bootstrap/local up --state-dir $(STATE_DIR)

# Every package but the end-to-end, fault and benchmark suites: unit and envtest tests. Expanded
# when a recipe that uses it is about to run; when `go list` fails (a package that does not load,
# a broken go.mod) make stops there, instead of testing whatever the list still held.
UNIT_PKGS = $(eval _pkgs := $(shell go list ./...))$(if $(filter 0,$(.SHELLSTATUS)),,$(error go list ./... failed (exit status $(.SHELLSTATUS)): no package list to test))$(if $(_pkgs),,$(error go list ./... listed no package))$(foreach p,$(_pkgs),$(if $(findstring /test/e2e,$(p))$(findstring /test/bench,$(p))$(findstring /test/faults,$(p)),,$(p)))

.PHONY: test
test: tools build inotify-limit lint verify-generated test-race test-suites ## Lint, generated files, unit and envtest tests with the race detector, then the end-to-end and fault-injection suites side by side (make test-suites).

# E2E_PROCS is how many Ginkgo processes share the end-to-end suite's top-level containers, each
# on a plane of its own: the suite mostly waits (for Flux, grace periods, intervals, workload
# clusters starting), so two run it in about half the time on 2 cores.
E2E_PROCS ?= 2
# TEST_REPORTS holds the suites' Ginkgo JSON reports (hack/slowspecs reads them).
TEST_REPORTS ?= $(ROOT)/.test-reports
GINKGO := go run github.com/onsi/ginkgo/v2/ginkgo

# The end-to-end suite takes longest; the fault suite, then the benchmark package's tests (-p 1:
# one plane at a time beside the end-to-end suite's two), and then the local plane's own suite
# (with the race detector) run beside it, on the cores its waits leave.
# The Ginkgo suites write JSON reports and the lanes' `go test` outputs are kept in TEST_REPORTS;
# hack/slowspecs prints the slowest specs, then every failure, a line each last.
.PHONY: test-suites
test-suites: tools build inotify-limit ## The end-to-end suite (E2E_PROCS Ginkgo processes, each on its own plane) beside the fault-injection suite, the benchmark package's tests (the idle-writes test) and then the local plane's suite with the race detector; then the 20 slowest specs and every failure.
	@rm -rf $(TEST_REPORTS) && mkdir -p $(TEST_REPORTS)
	@set +e; \
	( $(GINKGO) --procs=$(E2E_PROCS) --timeout=74m --json-report=e2e.json --output-dir=$(TEST_REPORTS) ./test/e2e 2>&1 | sed -u 's/^/[e2e] /' ) & e2e=$$!; \
	( GINKGO_REPORT_DIR=$(TEST_REPORTS) go test -p 1 ./test/faults/... ./test/bench/... -count=1 -timeout 77m 2>&1 | tee $(TEST_REPORTS)/faults.log | sed -u 's/^/[faults] /'; f=$$?; \
	  GINKGO_REPORT_DIR=$(TEST_REPORTS) go test -race ./bootstrap/plane/... -count=1 -timeout 30m 2>&1 | tee $(TEST_REPORTS)/plane.log | sed -u 's/^/[plane] /'; p=$$?; \
	  echo "fault suite and benchmark tests: exit status $$f; local plane suite: exit status $$p" > $(TEST_REPORTS)/lanes; \
	  [ $$f -eq 0 ] && [ $$p -eq 0 ] ) & faults=$$!; \
	wait $$e2e; e2e_status=$$?; wait $$faults; faults_status=$$?; \
	go run ./hack/slowspecs -go-log $(TEST_REPORTS)/faults.log -go-log $(TEST_REPORTS)/plane.log \
	  $(TEST_REPORTS)/e2e.json $(TEST_REPORTS)/faults.json $(TEST_REPORTS)/plane.json; \
	echo "end-to-end suite: exit status $$e2e_status; $$(cat $(TEST_REPORTS)/lanes 2>/dev/null || echo "fault, benchmark and local plane lane: exit status $$faults_status")"; \
	[ $$e2e_status -eq 0 ] && [ $$faults_status -eq 0 ]

# QUICK_PKGS are UNIT_PKGS but bootstrap/plane, whose suite starts a whole local plane (Flux,
# Gitea, a registry: about 4 minutes); make test-suites runs it.
QUICK_PKGS = $(filter-out %/bootstrap/plane,$(UNIT_PKGS))

.PHONY: test-quick
test-quick: tools lint ## Lint, then unit and envtest tests without the race detector; no end-to-end, fault, benchmark or local-plane suite (make test runs those).
	go test $(QUICK_PKGS) -count=1

.PHONY: test-unit
test-unit: ## Unit and envtest tests only (no end-to-end, no race detector: quicker).
	go test $(UNIT_PKGS) -count=1

# The Ginkgo suites among them write JSON reports into TEST_REPORTS/race; when a test fails,
# hack/slowspecs prints every failure with its message last, a line each at the very end.
.PHONY: test-race
test-race: ## Unit and envtest tests with the race detector, but the local plane's suite (make test-suites runs it with the race detector beside the end-to-end suite); every failure is listed at the end.
	@rm -rf $(TEST_REPORTS)/race && mkdir -p $(TEST_REPORTS)/race
	GINKGO_REPORT_DIR=$(TEST_REPORTS)/race go test -race $(QUICK_PKGS) -count=1 -timeout 30m 2>&1 | tee $(TEST_REPORTS)/race/go-test.log || \
	  { go run ./hack/slowspecs -n 0 -go-log $(TEST_REPORTS)/race/go-test.log $(TEST_REPORTS)/race/*.json; exit 1; }

.PHONY: test-e2e
test-e2e: tools build ## End-to-end tests only.
	go test ./test/e2e/... -count=1 -timeout 50m -v -ginkgo.v

# FUZZTIME is how long `make fuzz` fuzzes each target.
FUZZTIME ?= 30s

.PHONY: fuzz
fuzz: ## Fuzz every Fuzz* target of the module for FUZZTIME (30s) each, one after the other (`make test` runs only their seed corpora); a failing input is saved in the package's testdata/fuzz.
	@pkgs=$$(go list -f '{{.ImportPath}} {{.Dir}}' ./...); failed=; n=0; \
	while read -r pkg dir; do \
		for fn in $$(cat $$dir/*_test.go 2>/dev/null | sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p'); do \
			n=$$((n+1)); echo "go test -run '^\$$' -fuzz '^$$fn\$$' -fuzztime $(FUZZTIME) $$pkg"; \
			go test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) $$pkg || failed="$$failed $$pkg.$$fn"; \
		done; \
	done <<< "$$pkgs"; \
	if [ $$n -eq 0 ]; then echo "no Fuzz* targets found"; exit 1; fi; \
	if [ -n "$$failed" ]; then echo "fuzzing found failures in:$$failed"; exit 1; fi; \
	echo "fuzzed $$n targets for $(FUZZTIME) each: nothing found"

.PHONY: inotify-limit
# Every kube-apiserver watches its certificates with inotify (3 instances each); the end-to-end and
# fault suites side by side run about 40 API servers and as many controllers, more than Linux's
# default of 128 inotify instances per user. Raised when this user may (root, as in CI).
inotify-limit: ## Raise fs.inotify.max_user_instances to 1024 where permitted (the suites run ~40 API servers at once).
	@f=/proc/sys/fs/inotify/max_user_instances; if [ -r $$f ] && [ "$$(cat $$f)" -lt 1024 ]; then \
		if [ -w $$f ]; then echo 1024 > $$f && echo "raised $$f to 1024"; \
		else echo "warning: $$f is $$(cat $$f); the suites need ~250 (sudo sysctl fs.inotify.max_user_instances=1024)"; fi; fi

.PHONY: test-faults
test-faults: tools build inotify-limit ## The fault-injection suite on the real plane (test/faults); prints its seed: FAULTS_SEED=<seed> replays a run.
	go test ./test/faults/... -count=1 -timeout 60m -v -ginkgo.v

.PHONY: bench
bench: tools build ## Benchmark on the real API server: fan-out against the floors (BENCH_FLOOR_WORKERS swept), writes, memory, idle writes, status latency (BENCH_CLUSTERS, docs/performance.md).
	go test ./test/bench/... -run '^$$' -bench IdleWritesAndStatusLatency -benchtime 1x -timeout 180m

.PHONY: bench-report
bench-report: tools build ## Run the benchmarks (N = 100 and 1,000; BENCH_REPORT_10K=1 adds 10,000), the real-Flux benchmark and the fault suite, and write the tables of docs/performance.md and docs/reliability.md with the commit, date and machine.
	go run ./hack/benchreport $(if $(BENCH_REPORT_10K),-with-10k) $(BENCH_REPORT_FLAGS)

.PHONY: bench-flux
bench-flux: tools build inotify-limit ## Benchmark with the real helm- and kustomize-controller: Flux alone, the operator driving Flux, Flux alone again; BENCH_FLUX_CLUSTERS (200) Clusters over BENCH_FLUX_WORKLOADS (10) workload API servers.
	go test ./test/bench/... -run '^$$' -bench RealFlux -benchtime 1x -timeout 180m

.PHONY: bench-dashboard
bench-dashboard: tools ## Benchmark the dashboard's fleet page in headless Chromium for BENCH_DASHBOARD_CLUSTERS (10,000) Clusters: time to first paint, the server's memory.
	go test ./test/bench/... -run '^$$' -bench DashboardFleet -benchtime 1x -timeout 40m -v

##@ Tools (pinned Go modules in hack/tools, built into bin/)
# The Kubernetes binaries report the pinned module version (as release builds do); a module
# build would say v0.0.0-master, which CAPI's manager refuses as a management cluster.
KUBE_VERSION := $(shell sed -n 's/^require k8s.io\/kubernetes \(v[0-9.]*\).*/\1/p' $(TOOLS)/kube/go.mod)
KUBE_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=$(word 1,$(subst ., ,$(patsubst v%,%,$(KUBE_VERSION)))) \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION))) \
	-X k8s.io/component-base/version.gitTreeState=clean
KUBE_BINS := $(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/kube-scheduler
TOOL_BINS := $(KUBE_BINS) $(BIN)/etcd $(BIN)/source-controller $(BIN)/kustomize-controller \
	$(BIN)/helm-controller $(BIN)/kwok $(BIN)/controller-gen $(BIN)/capi-manager $(BIN)/provider-webhooks \
	$(BIN)/gitea $(BIN)/golangci-lint $(BIN)/registry

.PHONY: tools
tools: $(TOOL_BINS) $(BIN)/crds/.stamp $(BIN)/gitea-assets/.stamp ## Build pinned tools and collect CRDs into bin/ (a no-op when up to date).

$(BIN)/kube-apiserver: $(TOOLS)/kube/go.mod $(TOOLS)/kube/go.sum
	cd $(TOOLS)/kube && go build -ldflags "$(KUBE_LDFLAGS)" -o $(BIN)/ k8s.io/kubernetes/cmd/kube-apiserver
$(BIN)/kube-controller-manager: $(TOOLS)/kube/go.mod $(TOOLS)/kube/go.sum
	cd $(TOOLS)/kube && go build -ldflags "$(KUBE_LDFLAGS)" -o $(BIN)/ k8s.io/kubernetes/cmd/kube-controller-manager
$(BIN)/kube-scheduler: $(TOOLS)/kube/go.mod $(TOOLS)/kube/go.sum
	cd $(TOOLS)/kube && go build -ldflags "$(KUBE_LDFLAGS)" -o $(BIN)/ k8s.io/kubernetes/cmd/kube-scheduler
$(BIN)/etcd: $(TOOLS)/etcd/go.mod $(TOOLS)/etcd/go.sum $(TOOLS)/etcd/main.go
	cd $(TOOLS)/etcd && go build -o $@ .
$(BIN)/source-controller: $(TOOLS)/source-controller/go.mod $(TOOLS)/source-controller/go.sum
	cd $(TOOLS)/source-controller && go build -o $@ github.com/fluxcd/source-controller
$(BIN)/kustomize-controller: $(TOOLS)/kustomize-controller/go.mod $(TOOLS)/kustomize-controller/go.sum
	cd $(TOOLS)/kustomize-controller && go build -o $@ github.com/fluxcd/kustomize-controller
$(BIN)/helm-controller: $(TOOLS)/helm-controller/go.mod $(TOOLS)/helm-controller/go.sum
	cd $(TOOLS)/helm-controller && go build -o $@ github.com/fluxcd/helm-controller
$(BIN)/kwok: $(TOOLS)/kwok/go.mod $(TOOLS)/kwok/go.sum
	cd $(TOOLS)/kwok && go build -o $@ sigs.k8s.io/kwok/cmd/kwok
$(BIN)/capi-manager: $(TOOLS)/capi/go.mod $(TOOLS)/capi/go.sum
	cd $(TOOLS)/capi && go build -o $@ sigs.k8s.io/cluster-api/core
$(BIN)/provider-webhooks: $(TOOLS)/capi/go.mod $(TOOLS)/capi/go.sum $(TOOLS)/capi/provider-webhooks/main.go
	cd $(TOOLS)/capi && go build -o $@ ./provider-webhooks
$(BIN)/controller-gen: $(TOOLS)/controller-gen/go.mod $(TOOLS)/controller-gen/go.sum
	cd $(TOOLS)/controller-gen && go build -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen
# CNCF Distribution's registry server: the plane's OCI registry (Options.WithRegistry) and the
# registry the OCI tests publish to (bootstrap/registry).
$(BIN)/registry: $(TOOLS)/registry/go.mod $(TOOLS)/registry/go.sum
	cd $(TOOLS)/registry && go build -o $@ github.com/distribution/distribution/v3/cmd/registry
# golangci-lint for `make lint` (configuration in .golangci.yml): about 2.5 minutes cold.
$(BIN)/golangci-lint: $(TOOLS)/golangci-lint/go.mod $(TOOLS)/golangci-lint/go.sum
	cd $(TOOLS)/golangci-lint && go build -o $@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint
# Gitea, the plane's forge (Options.WithForge): cgo for SQLite, about 10 minutes cold. It
# reports the pinned version, as its release builds do (a module build says "development").
GITEA_VERSION := $(shell sed -n 's/^require code.gitea.io\/gitea v\([0-9.]*\).*/\1/p' $(TOOLS)/gitea/go.mod)
GITEA_TAGS := sqlite sqlite_unlock_notify
$(BIN)/gitea: $(TOOLS)/gitea/go.mod $(TOOLS)/gitea/go.sum
	cd $(TOOLS)/gitea && CGO_ENABLED=1 go build -tags "$(GITEA_TAGS)" \
		-ldflags "-s -w -X main.Version=$(GITEA_VERSION) -X 'main.Tags=$(GITEA_TAGS)'" -o $@ code.gitea.io/gitea

# Gitea's options/, templates/ and public/ from the same pinned module: a build without
# bindata reads them from its STATIC_ROOT_PATH. Copied (the module cache is read-only).
$(BIN)/gitea-assets/.stamp: $(TOOLS)/gitea/go.mod $(TOOLS)/gitea/go.sum
	dir=$$(cd $(TOOLS)/gitea && go list -m -f '{{.Dir}}' code.gitea.io/gitea); \
	rm -rf $(BIN)/gitea-assets && mkdir -p $(BIN)/gitea-assets && \
	cp -R $$dir/options $$dir/templates $$dir/public $(BIN)/gitea-assets/ && \
	chmod -R u+w $(BIN)/gitea-assets
	touch $@

# CRDs of Flux, CAPI, CAPD and CAPA, CAPI's webhook manifests and kwok's stage files, copied from
# the same pinned modules.
$(BIN)/crds/.stamp: $(TOOLS)/source-controller/go.mod $(TOOLS)/kustomize-controller/go.mod $(TOOLS)/helm-controller/go.mod $(TOOLS)/crds/go.mod $(TOOLS)/capi/go.mod $(TOOLS)/kwok/go.mod hack/collect-crds.sh
	hack/collect-crds.sh $(BIN)
	touch $@

.PHONY: clean
clean: ## Remove the local plane's state (not the tools).
	rm -rf $(STATE_DIR)
