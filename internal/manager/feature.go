package manager

import (
	"context"
	"flag"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lifeline-k8s/lifeline/internal/hookhandlers"
	"github.com/lifeline-k8s/lifeline/internal/ownerindex"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	budgetadmission "github.com/lifeline-k8s/lifeline/internal/podbudget/admission"
	"github.com/lifeline-k8s/lifeline/internal/podcache"
	"github.com/lifeline-k8s/lifeline/internal/protection"
	"github.com/lifeline-k8s/lifeline/pkg/recorder"
)

// Feature is everything one Lifeline feature adds to the manager, in one
// place: its flags, its types, its controllers, its webhooks, its part of
// the pod admission and the match conditions that part needs. The
// manager iterates the features in the order Features lists them; a
// feature holds its own state (options, caches shared by its controllers
// and webhooks), so nothing depends on which step ran first.
type Feature struct {
	Name string
	// Flags binds the feature's flags to its options.
	Flags func(*flag.FlagSet)
	// Validate checks the parsed flags; nil when any value goes.
	Validate func() error
	// AddToScheme adds the types the feature reads or writes.
	AddToScheme func(*runtime.Scheme) error
	// Controllers registers the feature's controllers.
	Controllers func(ctx context.Context, mgr ctrl.Manager, s *Shared) error
	// Webhooks registers the feature's own webhooks and its pod
	// admission handlers; called once the serving certificate is there.
	Webhooks func(mgr ctrl.Manager, s *Shared, w Webhooks)
	// Conversions are the kinds the feature serves in v1alpha1 and
	// v1beta1, converted by the manager's conversion webhook
	// (internal/conversion); AddToScheme adds both versions.
	Conversions []schema.GroupKind
	// MatchConditions are the CEL conditions the feature's pod webhooks
	// need, by webhook name; hack/webhookselectors writes them into the
	// generated configuration.
	MatchConditions map[string][]podadmission.MatchCondition
	// ObjectSelectors narrow the feature's pod webhooks by the pod's
	// labels, by webhook name; hack/webhookselectors writes them too. The
	// API server reads labels without converting the pod, where a match
	// condition converts it for every request the webhook's rules match.
	ObjectSelectors map[string]*metav1.LabelSelector
	// Protection are the objects that make a namespace ask for the
	// feature's fail-closed pod webhooks (see internal/protection).
	Protection []protection.Source
	// FailClosed names the kind of protection each fail-closed pod
	// webhook of the feature serves; hack/webhookselectors points it at
	// the namespaces labelled for that kind, and its fail-open twin
	// (protection.Twin) at the others.
	FailClosed map[string]protection.Kind
	// HookHandlers are the feature's kinds with lifecycle hooks, whose
	// handlers the manager publishes for the hook operators' admission
	// policy (internal/hookhandlers).
	HookHandlers []hookhandlers.Source
}

// Shared is what features share with each other: the budget guard (its
// admission and the CloneSet controller's in-place updates must queue in
// one place, or one process races itself) and who the manager is.
type Shared struct {
	Budgets *budgetadmission.Guard
	// Webhook reads and writes from the API server for webhooks, not
	// rate-limited in the process (see sharedWith); v1beta1 converted.
	Webhook client.Client
	// Self is the user the manager runs as: the hook guard lets its own
	// deletions through.
	Self string
	// Namespace is the manager's own, never protected.
	Namespace string
	// PodScope says which namespaces' pods the cache holds whole, and
	// whether it has taken them in yet (nil: every pod is cached).
	PodScope *podcache.Scope
	// Pods lists a workload's pods straight from the pod informer's index.
	Pods ownerindex.PodLister
	// Events posts every feature's Events, combined and rate-limited per
	// object as kube-controller-manager's are (Warnings never dropped).
	Events *recorder.Broadcaster
}

// Webhooks is where a feature registers webhooks: the server for its own
// paths, and the one pod mutating and validating handler.
type Webhooks struct {
	Server     webhook.Server
	Decoder    admission.Decoder
	Mutating   *podadmission.Mutating
	Validating *podadmission.Validating
}
