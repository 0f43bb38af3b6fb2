# Lifeline's two commands are `make dev` and `make test`; everything they need
# is built from the versions pinned in hack/tools and cached in
# ~/.cache/lifeline (override with LIFELINE_CACHE_DIR).

GO ?= go
DEVCTL := $(GO) run ./hack/devctl
# Modules besides the main one that make vet and make test cover: the
# public API module and the tools modules with tests of their own.
# (hack/kruisevectors, which builds OpenKruise, runs only by hand.)
SUBMODULES := api pkg hack/tools/kwok

.PHONY: all
all: build

.PHONY: build
build: ## Build every binary of the main module into bin/.
	$(GO) build -o bin/ ./cmd/...

.PHONY: dev
dev: ## Run a local cluster with Lifeline and the demo; Ctrl-C tears it down.
	$(DEVCTL) up

.PHONY: demo
demo: ## With make dev running: walk the seed scenario, showing the service registry at each step.
	$(DEVCTL) demo

.PHONY: registry
registry: ## With make dev running: show the demo pods next to the service registry.
	$(DEVCTL) registry

.PHONY: generate
generate: ## Regenerate deepcopy functions, CRDs and RBAC from the API markers.
	@CONTROLLER_GEN=$$($(DEVCTL) bin controller-gen) && \
	  (cd api && $$CONTROLLER_GEN object paths=./...) && \
	  $$CONTROLLER_GEN crd rbac:roleName=lifeline-manager webhook paths=./... paths=github.com/lifeline-k8s/lifeline/api/... \
	    output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac \
	    output:webhook:artifacts:config=config/webhook && \
	  (cd pkg && $$CONTROLLER_GEN rbac:roleName=lifeline-bridge paths=./hook/... output:rbac:dir=../config/bridge) && \
	  $(GO) run ./hack/webhookselectors

.PHONY: verify-generated
verify-generated: ## Fail when committed generated files differ from fresh ones.
	$(GO) run ./hack/verifygen

.PHONY: vet
vet:
	$(GO) vet ./...
	@for m in $(SUBMODULES); do (cd $$m && $(GO) vet ./...) || exit 1; done
	@test -z "$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go'); exit 1; }

.PHONY: test
test: verify-generated vet ## Unit, integration (envtest) and end-to-end (local cluster) tests.
	KUBEBUILDER_ASSETS=$$($(DEVCTL) envtest) $(GO) test -count=1 -timeout 45m ./...
	@for m in $(SUBMODULES); do (cd $$m && $(GO) test -count=1 ./...) || exit 1; done

.PHONY: unit
unit: ## Tests that need no API server.
	$(GO) test -count=1 -short ./...

.PHONY: help
help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

.PHONY: bench
bench: ## Compare CloneSet with Deployment on a local cluster and print the figures.
	$(GO) run ./hack/bench
