# Lifeline's two commands are `make dev` and `make test`; everything they need
# is built from the versions pinned in hack/tools and cached in
# ~/.cache/lifeline (override with LIFELINE_CACHE_DIR).

GO ?= go
# The Go go.mod asks for; a go command of 1.21 or newer fetches it itself.
GO_MIN := $(shell sed -n 's/^go //p' go.mod)
DEVCTL := $(GO) run ./hack/devctl
# hack/buildbin builds the pinned binaries (hack/binaries). It compiles in
# seconds, so a recipe builds it first and then starts what takes minutes
# (the control plane's build) before anything heavier compiles; a recipe
# that runs it in the background can stop it, as it is no go run.
BUILDBIN := bin/buildbin
BUILDBIN_BUILD := $(GO) build -o $(BUILDBIN) ./hack/buildbin
# One build configuration for everything make builds (tests, make dev's
# binaries, the control plane's, the images and the plugin's archives, the
# last two static and path-free as they ship): Go's build cache shares a
# compiled package only between builds of the same flags, so a mix compiles
# client-go and the rest once per mix.
export CGO_ENABLED := 0
export GOFLAGS := -trimpath $(filter-out -trimpath,$(GOFLAGS))
# Modules besides the main one that make vet and make test cover: the
# public API module, the kubectl plugin and the tools modules with tests of
# their own.
# (hack/kruisevectors, which builds OpenKruise, runs only by hand.)
SUBMODULES := api pkg hack/tools cmd/kubectl-lifeline

.PHONY: all
all: build ## The same as make build.

.PHONY: build
build: ## Build every binary into bin/: the main module's and the kubectl plugin (its own module).
	$(GO) build -o bin/ ./cmd/...
	cd cmd/kubectl-lifeline && $(GO) build -o ../../bin/ .

.PHONY: plugin
plugin: ## Install kubectl-lifeline into GOBIN (kubectl finds it on PATH as kubectl lifeline).
	cd cmd/kubectl-lifeline && $(GO) install .

.PHONY: krew
krew: ## Build kubectl-lifeline's release archives and render .krew.yaml against them into bin/krew (TAG names the release).
	$(GO) run ./hack/krew -out bin/krew $(if $(TAG),-tag=$(TAG))

.PHONY: images
images: ## Build the manager, bridge and node agent images as tarballs in bin/images, without Docker (REGISTRY, TAG to name them).
	$(GO) run ./hack/images $(if $(REGISTRY),-registry=$(REGISTRY)) $(if $(TAG),-tag=$(TAG))

# What make dev's cluster runs, built from the start beside the compile of
# hack/devctl (devctl up waits for a build under way): the kubelet unless
# ARGS turn the real nodes off.
DEV_BINARIES := etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok $(if $(findstring -real-nodes=0,$(ARGS)),,kubelet)

.PHONY: dev
dev: ## Run a local cluster with Lifeline and the demo; Ctrl-C tears it down.
	@$(MAKE) --no-print-directory preflight
	@$(BUILDBIN_BUILD) || exit 1; $(BUILDBIN) $(DEV_BINARIES) >/dev/null & builds=$$!; trap 'kill $$builds 2>/dev/null' EXIT; trap 'exit 130' INT TERM; \
	  n=$$($(GO) list -deps -f '{{if .Stale}}stale{{end}}' ./hack/devctl | grep -c stale); \
	  [ "$$n" = 0 ] || echo "compiling make dev's driver (hack/devctl) while the control plane builds: $$n packages not in Go's build cache yet"; \
	  $(DEVCTL) up $(ARGS)

.PHONY: preflight
preflight: ## Check the Go command before anything is built: present, and new enough for go.mod (or able to fetch that toolchain).
	@command -v $(GO) >/dev/null || { echo "no go command on PATH: install Go $(GO_MIN) or newer (https://go.dev/dl), or name it with GO=/path/to/go"; exit 1; }
	@v=$$($(GO) env GOVERSION 2>/dev/null | sed 's/^go//'); \
	  [ -n "$$v" ] && [ "$$(printf '%s\n' "1.21" "$$v" | sort -V | head -1)" = "1.21" ] || { echo "$(GO) is too old ($$($(GO) version)): Go $(GO_MIN) or newer is needed (Go 1.21 and later fetch it by themselves)"; exit 1; }

.PHONY: demo
demo: ## With make dev running: walk the seed scenario, showing the service registry at each step.
	$(DEVCTL) demo

.PHONY: dashboard
dashboard: ## With make dev running: run the demo under a Prometheus (built from its pinned module) and print what each query of the Grafana dashboard returns.
	$(DEVCTL) dashboard

.PHONY: registry
registry: ## With make dev running: show the demo pods next to the service registry.
	$(DEVCTL) registry

.PHONY: first-run
first-run: ## Measure make dev and make test on fresh clones with empty caches, then warm, and write the figures into README.md (about 75 min; ARGS=-dev-only, -test-only, -remove-runtime).
	$(GO) run ./hack/firstrun $(ARGS)

.PHONY: generate
# The CRDs serve v1alpha1 and v1beta1 and store v1beta1 (see the README).
CRD_PACKAGES := paths=github.com/lifeline-k8s/lifeline/api/...

generate: ## Regenerate deepcopy functions, CRDs, RBAC and webhook configurations from the markers, and the chart's copies of them.
	@$(BUILDBIN_BUILD) && CONTROLLER_GEN=$$($(BUILDBIN) controller-gen) && \
	  (cd api && $$CONTROLLER_GEN object paths=./...) && \
	  $$CONTROLLER_GEN crd rbac:roleName=lifeline-manager webhook paths=./cmd/lifeline-manager/... paths=./internal/... $(CRD_PACKAGES) \
	    output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac \
	    output:webhook:artifacts:config=config/webhook && \
	  (cd pkg && $$CONTROLLER_GEN rbac:roleName=lifeline-bridge paths=./hook/... output:rbac:dir=../config/bridge) && \
	  $$CONTROLLER_GEN rbac:roleName=lifeline-node-agent paths=./cmd/lifeline-node-agent/... output:rbac:dir=config/nodeagent && \
	  $(GO) run ./hack/webhookselectors && \
	  rm -rf charts/lifeline/crds charts/lifeline/files && mkdir -p charts/lifeline/crds charts/lifeline/files && \
	  cp config/crd/bases/*.yaml charts/lifeline/crds/ && \
	  cp config/rbac/role.yaml charts/lifeline/files/manager-role.yaml && \
	  cp config/bridge/role.yaml charts/lifeline/files/bridge-role.yaml && \
	  cp config/nodeagent/role.yaml charts/lifeline/files/node-agent-role.yaml && \
	  cp config/bridge/policy.yaml charts/lifeline/files/hook-handlers-policy.yaml && \
	  cp config/rbac/policy.yaml charts/lifeline/files/identities-policy.yaml && \
	  cp config/webhook/manifests.yaml charts/lifeline/files/webhooks.yaml

.PHONY: verify-generated
verify-generated: ## Fail when committed generated files differ from fresh ones, or when the modules disagree on a shared dependency's version.
	$(GO) run ./hack/verifygen
	$(GO) run ./hack/alignmods -check

.PHONY: align-modules
align-modules: ## Raise the modules' versions of shared dependencies to one each, so Go's build cache compiles them once (make verify-generated checks it).
	$(GO) run ./hack/alignmods

.PHONY: vet
vet: ## go vet of every module, and gofmt of every Go file.
	$(GO) vet ./...
	@for m in $(SUBMODULES); do (cd $$m && $(GO) vet ./...) || exit 1; done
	@test -z "$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go'); exit 1; }

# The steps of make test. Each runs even when an earlier one fails, and the
# failures are listed together at the end, so one red module never hides
# another's result.
TEST_STEPS := tracked-files verify-generated vet test-main $(addprefix test-module/,$(SUBMODULES))

# Where make test records each step's time and go test's JSON, from which
# it prints, at its end, the steps' times and the slowest packages and tests.
TEST_REPORT := bin/test-report

# The binaries the main module's tests run, built when make test starts
# rather than when a test first asks (a test waits for a build under way:
# hack/binaries locks every binary): the cluster's first, at once, as most
# packages wait for them, then the tools a few tests run (the Consul agent,
# Helm, OpenKruise's manager, krew) one after the other: Consul
# first, as internal/bridge and an e2e test both wait for it, krew last, as
# its test comes first and builds it sooner itself (a test that reaches its
# tool first builds it, and the build here then finds it done).
# (At nice 10 the Consul agent's build took 40 min on 2 cores, starved by
# the tests, and held internal/bridge as long.)
TEST_CLUSTER_BINARIES := etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet kwok gotestsum
TEST_TOOL_BINARIES := consul helm kruise-manager krew

.PHONY: test
test: ## Unit, integration (envtest) and end-to-end (local cluster) tests of every module; ends with a table of each step's time and CPU and the slowest tests.
	@rm -rf $(TEST_REPORT) && mkdir -p $(TEST_REPORT) && $(BUILDBIN_BUILD) || exit 1; \
	$(BUILDBIN) -in-turn "$(TEST_CLUSTER_BINARIES)" $(TEST_TOOL_BINARIES) > $(TEST_REPORT)/build-binaries.log 2>&1 & builds=$$!; \
	trap 'kill $$builds 2>/dev/null' EXIT; trap 'exit 130' INT TERM; \
	failed=; for step in $(TEST_STEPS); do \
	  echo "=== make $$step"; start=$$(date +%s); echo "$$step start $$(head -1 /proc/stat 2>/dev/null)" >> $(TEST_REPORT)/cpu; \
	  if $(MAKE) --no-print-directory $$step TEST_VET=off; then result=ok; else result=FAILED; failed="$$failed $$step"; fi; \
	  echo "$$step $$(( $$(date +%s) - start )) $$result" >> $(TEST_REPORT)/steps; echo "$$step end $$(head -1 /proc/stat 2>/dev/null)" >> $(TEST_REPORT)/cpu; \
	done; \
	$(GO) run ./hack/testreport $(TEST_REPORT); \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed"; exit 1; fi; \
	echo "make test: all $(words $(TEST_STEPS)) steps passed"

.PHONY: tracked-files
tracked-files: ## Fail when git tracks an executable binary or a file over 1 MiB outside testdata/.
	$(GO) run ./hack/trackedfiles

# test/e2e is named first so that go test builds and starts it first: it
# is the longest package (1,412 s of test-main's 1,576 on 11-29) and started
# 2.5 min in, behind every other package's link.
TEST_MAIN_PACKAGES ?= ./test/e2e ./...

# How many test binaries go test runs at once (and compiles, from the same
# pool): more than the cores, as the long packages mostly wait on their
# clusters and a package waiting for a tool's build holds a place. The
# timeout is each test binary's: e2e took 45 min in a cold run on 2 cores
# (25 of them waiting for the Consul agent's build).
TEST_PACKAGES ?= 3
# How many of a package's parallel tests run at once (go test's default is
# the cores): e2e's tests marked alongside mostly wait on hooks, registries
# and budgets, so four at once overlap their waits on 2 cores.
TEST_PARALLEL ?= 4
# Test binaries are linked without DWARF (nobody attaches a debugger to
# make test's; stack traces and profiles do not need it): linking was 13%
# of a warm make test's CPU (349 of 2,615 s on 11-29), and -w cuts a link
# by 10-25% (e2e's 9.5 to 7.2 CPU s).
TEST_LDFLAGS ?= -w
# go test vets each package before it runs it (a subset of go vet's
# checks, cached apart from go vet's own). make test's vet step runs all of
# go vet over every module, so make test sets TEST_VET=off for its test
# steps rather than do that work again (about 0.4 CPU-seconds a package,
# 11-30); run alone, the test targets vet as go test does.
TEST_VET ?=

.PHONY: test-main
test-main: ## The main module's tests: unit, integration and end-to-end.
	@mkdir -p $(TEST_REPORT)
	$(BUILDBIN_BUILD) && GOTESTSUM=$$($(BUILDBIN) gotestsum) && ASSETS=$$($(BUILDBIN) -envtest) && \
	  KUBEBUILDER_ASSETS=$$ASSETS $$GOTESTSUM --format standard-quiet --jsonfile $(TEST_REPORT)/test-main.json -- -count=1 $(if $(TEST_VET),-vet=$(TEST_VET)) -ldflags=$(TEST_LDFLAGS) -p $(TEST_PACKAGES) -parallel $(TEST_PARALLEL) -timeout 60m $(TEST_MAIN_PACKAGES)

.PHONY: test-module/%
test-module/%: ## The tests of one of the other modules (SUBMODULES).
	@mkdir -p $(TEST_REPORT)
	$(BUILDBIN_BUILD) && GOTESTSUM=$$($(BUILDBIN) gotestsum) && cd $* && $$GOTESTSUM --format standard-quiet --jsonfile $(CURDIR)/$(TEST_REPORT)/$(subst /,_,$*).json -- -count=1 $(if $(TEST_VET),-vet=$(TEST_VET)) ./...

.PHONY: unit
unit: ## Tests that need no API server.
	$(GO) test -count=1 -short ./...

.PHONY: help
help: ## This list: every target, one line each.
	@grep -E '^[a-z/%-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

.PHONY: rbac-audit
rbac-audit: ## Remove each rule of the manager's and the bridge's roles in turn on a local cluster and print which probe fails without it (make test runs four), then, as the manager, a hook operator and a team that may patch pods, show every write outside what each may write refused.
	LIFELINE_RBAC_AUDIT=all $(GO) test -count=1 -timeout 60m ./test/e2e -run 'TestRBACRuleRemoval|TestBridgeRBACRuleRemoval|TestManagerWritesOnlyItsOwn|TestHookOperatorWritesOnlyHooks|TestBudgetCannotBeWalkedAroundWithMetadata|TestWebhookPortTakesOnlyTheAPIServer' -v

.PHONY: cert-manager-renewal
cert-manager-renewal: ## Install the chart in cert-manager mode on real nodes with cert-manager built from its pinned module, renew the serving certificate under webhook load and count the failed calls (0 expected).
	LIFELINE_CERT_MANAGER=1 $(GO) test -count=1 -timeout 30m ./test/realnode -run '^TestChartCertManagerRenewalUnderLoad$$' -v

.PHONY: bench
bench: ## Measure Lifeline side by side with native Kubernetes and OpenKruise v1.9.0 on one local cluster; writes bench/results/<date>.json and SVG charts (ARGS="-scenarios=cloneset,deployment" picks scenarios; ARGS=-list lists them).
	$(GO) run ./hack/bench $(ARGS)

.PHONY: chaos
chaos: ## Fault run on a local cluster: 520 pods (20 on real nodes) through rollouts, scaling, evictions and a drain while managers, the API server, etcd, the bridge and its registry fail; prints the seed, the plan and the invariant violations (LIFELINE_CHAOS_SEED=N replays a plan). make test runs a short one.
	LIFELINE_CHAOS=full $(GO) test -count=1 -timeout 80m ./test/chaos -run '^TestChaos$$' -v

.PHONY: soak
soak: ## 50 CloneSets and 20 budgets at 1,000 then 10,000 pods on a local cluster, 10 minutes idle each, then one in-place rollout of all; prints the manager's CPU, peak RSS, reconciles and API requests per second. make test runs a small one.
	LIFELINE_SOAK=full $(GO) test -count=1 -timeout 120m ./test/chaos -run '^TestSoak$$' -v

# The fuzz targets: every admission webhook (an AdmissionReview posted to
# each path a package registers) and the conversion webhook. make test runs
# their seed corpora (and any crasher saved under testdata/fuzz).
FUZZ_TARGETS := ./internal/cloneset/webhook:FuzzAdmission ./internal/statefulset/webhook:FuzzAdmission \
	./internal/daemonset/webhook:FuzzAdmission ./internal/podbudget/webhook:FuzzAdmission \
	./internal/pps/webhook:FuzzAdmission ./internal/conversion:FuzzConversion \
	./test/integration:FuzzPodAdmission
FUZZTIME ?= 5m

.PHONY: fuzz
fuzz: ## Fuzz every admission handler, the conversion webhook and the pod admission entry points (with the manager's caches on a test API server), FUZZTIME (5m) each; a crasher is written under the package's testdata/fuzz, where make test then replays it.
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; echo "=== $$pkg $$fn ($(FUZZTIME))"; \
	  $(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; done
