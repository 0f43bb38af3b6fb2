// Package manager sets Lifeline up in a controller-runtime manager: the
// features (features.go) each register their flags, types, controllers and
// webhooks in one place (Feature), and the manager iterates them. The
// lifeline-manager binary wires Lifeline through it, and so do the
// integration tests that run parts of it in process; the end-to-end tests
// run the binary itself.
package manager

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lifeline-k8s/lifeline/internal/conversion"
	"github.com/lifeline-k8s/lifeline/internal/hookhandlers"
	"github.com/lifeline-k8s/lifeline/internal/ownerindex"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	budgetadmission "github.com/lifeline-k8s/lifeline/internal/podbudget/admission"
	"github.com/lifeline-k8s/lifeline/internal/podcache"
	"github.com/lifeline-k8s/lifeline/internal/protection"
	"github.com/lifeline-k8s/lifeline/pkg/recorder"
)

// Lifeline is a set of features set up in one manager.
type Lifeline struct {
	// Namespace is the manager's own: its pods must stay deletable with
	// no replica serving, so it is never protected.
	Namespace string

	features []*Feature
	guard    sync.Once
	shared   Shared
	// convert serves the features' Conversions (SetupWebhooks).
	convert http.Handler
	// PodScope, when set, is the scope the manager's cache was built with
	// (cache.Options.NewInformer): Setup makes every object of the
	// features' protection kinds hold its namespace's pods in the cache.
	// Unset, every pod is cached.
	PodScope *podcache.Scope
	// Conversion, when its Service or URL is set, is kept as the
	// conversion webhook of the CRDs of the features' Conversions
	// (Setup fills in the client and the CRDs).
	Conversion conversion.Endpoint
}

// BindFlags binds every feature's flags to fs.
func BindFlags(features []*Feature, fs *flag.FlagSet) {
	for _, f := range features {
		if f.Flags != nil {
			f.Flags(fs)
		}
	}
}

// New checks the features' options (every error at once) and returns them
// ready to set up.
func New(features []*Feature) (*Lifeline, error) {
	var errs []error
	for _, f := range features {
		if f.Validate != nil {
			errs = append(errs, f.Validate())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Lifeline{features: features}, nil
}

// Scheme holds every type the features read or write.
func (l *Lifeline) Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	for _, f := range l.features {
		if f.AddToScheme != nil {
			if err := f.AddToScheme(s); err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name, err)
			}
		}
	}
	return s, nil
}

// Setup registers the owner index every controller lists by, the
// namespace protection the features' objects ask for, then each feature's
// controllers.
func (l *Lifeline) Setup(ctx context.Context, mgr ctrl.Manager) error {
	if err := ownerindex.Register(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	pods, err := ownerindex.NewIndexedPods(ctx, mgr.GetCache())
	if err != nil {
		return fmt.Errorf("pod index: %w", err)
	}
	shared := l.sharedWith(mgr)
	shared.Pods = pods
	shared.Budgets.Pods = pods
	var kinds []schema.GroupKind
	for _, f := range l.features {
		kinds = append(kinds, f.Conversions...)
	}
	if len(kinds) > 0 {
		h, err := conversion.Handler(mgr.GetScheme(), kinds...)
		if err != nil {
			return fmt.Errorf("conversion webhook: %w", err)
		}
		l.convert = h
		if err := l.keepConversionEndpoint(mgr, kinds); err != nil {
			return err
		}
	}
	var sources []protection.Source
	for _, f := range l.features {
		sources = append(sources, f.Protection...)
	}
	if len(sources) > 0 {
		p := &protection.Reconciler{Client: HubClient(mgr), Recorder: shared.Events.For("namespace-protection"),
			Sources: sources, Exempt: l.exempt()}
		if err := p.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("namespace protection: %w", err)
		}
	}
	if err := l.trackPodScope(mgr, sources); err != nil {
		return err
	}
	var hooked []hookhandlers.Source
	for _, f := range l.features {
		hooked = append(hooked, f.HookHandlers...)
	}
	if len(hooked) > 0 {
		h := &hookhandlers.Reconciler{Client: HubClient(mgr), Live: shared.Webhook, Namespace: l.Namespace, Sources: hooked}
		if err := h.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("hook handlers: %w", err)
		}
	}
	for _, f := range l.features {
		if f.Controllers == nil {
			continue
		}
		if err := f.Controllers(ctx, mgr, l.sharedWith(mgr)); err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
	}
	return nil
}

// SetupWebhooks registers every feature's webhooks and serves the two pod
// admission handlers. Call it only once the serving certificate is in
// place: the server reads it when it starts. self is the user the manager
// runs as (see WhoAmI).
func (l *Lifeline) SetupWebhooks(mgr ctrl.Manager, self string) {
	w := Webhooks{
		Server: mgr.GetWebhookServer(), Decoder: admission.NewDecoder(mgr.GetScheme()),
		Mutating: &podadmission.Mutating{Scope: l.scope()}, Validating: &podadmission.Validating{Scope: l.scope()},
	}
	shared := l.sharedWith(mgr)
	shared.Self = self
	for _, f := range l.features {
		if f.Webhooks != nil {
			f.Webhooks(mgr, shared, w)
		}
	}
	w.Server.Register(podadmission.MutatePath, &webhook.Admission{Handler: w.Mutating})
	w.Server.Register(podadmission.ValidatePath, &webhook.Admission{Handler: w.Validating})
	if l.convert != nil {
		w.Server.Register(conversion.Path, l.convert)
	}
}

// trackPodScope makes the objects of every kind that can ask for
// protection (whether or not they ask: a CloneSet adopts orphans, a budget
// counts a Deployment's pods) hold their namespace's pods in the cache.
func (l *Lifeline) trackPodScope(mgr ctrl.Manager, sources []protection.Source) error {
	if l.PodScope == nil {
		return nil
	}
	var objs []client.Object
	seen := map[string]bool{}
	for _, src := range sources {
		// Custom kinds are all Unstructured: told apart by their kind.
		t := reflect.TypeOf(src.Object).String() + " " + src.Object.GetObjectKind().GroupVersionKind().String()
		if !seen[t] {
			seen[t] = true
			objs = append(objs, src.Object)
		}
	}
	if err := mgr.Add(l.PodScope.Tracker(mgr.GetCache(), objs...)); err != nil {
		return fmt.Errorf("pod cache scope: %w", err)
	}
	return nil
}

// scope is the pod admission's scope: none when every pod is cached.
func (l *Lifeline) scope() podadmission.Scope {
	if l.PodScope == nil {
		return nil
	}
	return l.PodScope
}

// exempt are the namespaces never protected.
func (l *Lifeline) exempt() []string {
	out := slices.Clone(podadmission.SystemNamespaces)
	if l.Namespace != "" {
		out = append(out, l.Namespace)
	}
	return out
}

// FailClosed are the fail-closed pod webhooks' kinds of protection, by
// webhook name, as the features declare them; a webhook two features
// share must serve one kind.
func FailClosed(features []*Feature) (map[string]protection.Kind, error) {
	out := map[string]protection.Kind{}
	for _, f := range features {
		for name, kind := range f.FailClosed {
			if other, taken := out[name]; taken && other != kind {
				return nil, fmt.Errorf("webhook %s: protection %s and %s (from %s)", name, other, kind, f.Name)
			}
			out[name] = kind
		}
	}
	return out, nil
}

// MatchConditions are the pod webhooks' CEL conditions, by webhook name, as
// the features declare them. Conditions of one webhook all must hold, so a
// webhook may take conditions from one feature only: another feature's
// would hide requests from it.
func MatchConditions(features []*Feature) (map[string][]podadmission.MatchCondition, error) {
	return byWebhook(features, "match conditions", func(f *Feature) map[string][]podadmission.MatchCondition { return f.MatchConditions })
}

// ObjectSelectors are the pod webhooks' object selectors, by webhook name,
// as the features declare them; one feature's per webhook, as
// MatchConditions.
func ObjectSelectors(features []*Feature) (map[string]*metav1.LabelSelector, error) {
	return byWebhook(features, "object selectors", func(f *Feature) map[string]*metav1.LabelSelector { return f.ObjectSelectors })
}

// byWebhook gathers what the features declare per webhook, refusing a
// webhook two features declare it for.
func byWebhook[T any](features []*Feature, what string, of func(*Feature) map[string]T) (map[string]T, error) {
	out, from := map[string]T{}, map[string]string{}
	for _, f := range features {
		for name, v := range of(f) {
			if other, taken := from[name]; taken {
				return nil, fmt.Errorf("webhook %s: %s from both %s and %s", name, what, other, f.Name)
			}
			out[name], from[name] = v, f.Name
		}
	}
	return out, nil
}

// sharedWith builds, once, what features share: the budget guard judges
// disruptions for the pod admission and the CloneSet controller alike. Its
// status writes and live reads, and every webhook's reads around the
// cache, go through a client of their own, not
// rate-limited in the process: each answers a request the API server is
// holding open, their number is bounded by those requests, and queueing
// them behind the controllers' reads would put a webhook's latency at the
// mercy of a resync (the API server's priority and fairness still applies).
func (l *Lifeline) sharedWith(mgr ctrl.Manager) *Shared {
	l.guard.Do(func() {
		l.shared.Namespace = l.Namespace
		l.shared.PodScope = l.PodScope
		cfg := rest.CopyConfig(mgr.GetConfig())
		cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
		direct, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
		if err != nil {
			// client.New fails only on a configuration the manager's
			// own client was already built from.
			panic(fmt.Sprintf("a client for budget admissions: %v", err))
		}
		hubDirect := conversion.HubClient(direct)
		l.shared.Webhook = hubDirect
		if l.shared.Events, err = recorder.New(mgr.GetConfig(), mgr.GetHTTPClient(), mgr.GetScheme()); err == nil {
			err = mgr.Add(l.shared.Events)
		}
		if err != nil {
			panic(fmt.Sprintf("the event broadcaster: %v", err))
		}
		l.shared.Budgets = &budgetadmission.Guard{
			Cache: HubClient(mgr), Live: hubDirect, Writer: hubDirect,
			Recorder: l.shared.Events.For("podunavailablebudget"), Now: time.Now, Synced: l.PodScope,
		}
	})
	return &l.shared
}

// WhoAmI asks the API server which user cfg authenticates as
// (SelfSubjectReview).
func WhoAmI(ctx context.Context, cfg *rest.Config) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("asking the API server who the manager is: %w", err)
	}
	return review.Status.UserInfo.Username, nil
}

// WebhooksReadyCheck is a readiness check that fails until ready is closed
// and the webhook server has started, so a replica takes admission traffic
// only once it can answer.
func WebhooksReadyCheck(mgr ctrl.Manager, ready <-chan struct{}) func(*http.Request) error {
	return func(req *http.Request) error {
		select {
		case <-ready:
			return mgr.GetWebhookServer().StartedChecker()(req)
		default:
			return errors.New("webhook certificate not ready")
		}
	}
}

// Scheme holds every type Lifeline's features use, for clients outside
// the manager (tests, benchmarks, make dev).
func Scheme() *runtime.Scheme {
	l := &Lifeline{features: Features()}
	s, err := l.Scheme()
	if err != nil {
		panic(err) // the types' own registration failed: a build defect
	}
	return s
}

// keepConversionEndpoint adds the runnable that points the CRDs of kinds at
// this manager's conversion webhook. It reads and writes CRDs directly (a
// cache would list and watch every CRD in the cluster).
func (l *Lifeline) keepConversionEndpoint(mgr ctrl.Manager, kinds []schema.GroupKind) error {
	if l.Conversion.Service == nil && l.Conversion.URL == "" {
		return nil
	}
	e := &l.Conversion
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	e.Client, e.CRDs = c, nil
	for _, gk := range kinds {
		m, err := mgr.GetRESTMapper().RESTMapping(gk)
		if err != nil {
			return fmt.Errorf("conversion webhook: finding the CRD of %s: %w", gk, err)
		}
		e.CRDs = append(e.CRDs, conversion.CRDName(gk, m.Resource.Resource))
	}
	if err := mgr.AddReadyzCheck("conversion", e.Ready); err != nil {
		return err
	}
	return mgr.Add(e)
}

// HubClient is the manager's client reading and writing the kinds served
// in two versions as the hub, v1beta1, which the CRDs store and the cache
// holds (conversion.HubClient).
func HubClient(mgr ctrl.Manager) client.Client { return conversion.HubClient(mgr.GetClient()) }

// HubReader is HubClient for the manager's uncached reader.
func HubReader(mgr ctrl.Manager) client.Reader { return conversion.HubReader(mgr.GetAPIReader()) }
