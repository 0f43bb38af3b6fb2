// Package manager registers every Lifeline controller and webhook with a
// controller-runtime manager. The lifeline-manager binary wires Lifeline
// through it, and so do the integration tests that run parts of it in
// process; the end-to-end tests run the binary itself.
package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	ppscontroller "github.com/lifeline-k8s/lifeline/internal/pps/controller"
	ppswebhook "github.com/lifeline-k8s/lifeline/internal/pps/webhook"
	ppsworkloads "github.com/lifeline-k8s/lifeline/internal/pps/workloads"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	clonesetcontroller "github.com/lifeline-k8s/lifeline/internal/cloneset/controller"
	clonesetwebhook "github.com/lifeline-k8s/lifeline/internal/cloneset/webhook"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	budgetadmission "github.com/lifeline-k8s/lifeline/internal/podbudget/admission"
	budgetcontroller "github.com/lifeline-k8s/lifeline/internal/podbudget/controller"
	budgetwebhook "github.com/lifeline-k8s/lifeline/internal/podbudget/webhook"
)

// Options configure the controllers.
type Options struct {
	CloneSetWorkers                int
	ExpectationTimeout             time.Duration
	CloneSetExcludePreparingDelete bool
	HookWaitWarning                time.Duration
	CloneSetCreatePodsNormal       bool
	CloneSetRecreateOnVCTChange    bool
	// PPSWhitelist is the ConfigMap whose PPS_Watch_Custom_Workload_WhiteList
	// names the StatefulSet-like kinds PersistentPodStates may target.
	PPSWhitelist types.NamespacedName
}

// Scheme holds every type Lifeline reads or writes.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(appsv1alpha1.AddToScheme(s))
	utilruntime.Must(policyv1alpha1.AddToScheme(s))
	return s
}

// Setup registers the controllers with mgr.
func Setup(ctx context.Context, mgr ctrl.Manager, o Options) error {
	cs := &clonesetcontroller.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("cloneset-controller"),
		Budgets:   budgetGuard(mgr),
		Options: clonesetcontroller.Options{
			Workers:                       o.CloneSetWorkers,
			ExpectationTimeout:            o.ExpectationTimeout,
			ExcludePreparingDelete:        o.CloneSetExcludePreparingDelete,
			HookWaitWarning:               o.HookWaitWarning,
			CreatePodsNormal:              o.CloneSetCreatePodsNormal,
			RecreateOnClaimTemplateChange: o.CloneSetRecreateOnVCTChange,
		},
	}
	if err := cs.SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	pub := &budgetcontroller.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("podunavailablebudget-controller")}
	if err := pub.SetupWithManager(mgr); err != nil {
		return err
	}
	custom := &ppsworkloads.Whitelist{Reader: mgr.GetAPIReader(), ConfigMap: o.PPSWhitelist}
	whitelists.Store(mgr, custom)
	pps := &ppscontroller.Reconciler{Client: mgr.GetClient(), Live: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("persistentpodstate-controller"), Custom: custom}
	if err := pps.SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	generator := &ppscontroller.Generator{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("persistentpodstate-generator")}
	return generator.SetupWithManager(mgr)
}

// whitelists holds each manager's PersistentPodState whitelist, read by
// its controller (Setup) and its webhooks (SetupWebhooks).
var whitelists sync.Map

func whitelist(mgr ctrl.Manager) *ppsworkloads.Whitelist {
	if w, ok := whitelists.Load(mgr); ok {
		return w.(*ppsworkloads.Whitelist)
	}
	return nil // Setup did not run: no custom kinds
}

// SetupWebhooks starts the webhook server with every Lifeline webhook. Call it
// only once the serving certificate is in place: the server reads it when it
// starts. self is the user the manager runs as (see WhoAmI): the hook guard
// lets its own deletions through.
func SetupWebhooks(mgr ctrl.Manager, self string) {
	server := mgr.GetWebhookServer()
	decoder := admission.NewDecoder(mgr.GetScheme())
	clonesetwebhook.Register(server, decoder, mgr.GetClient())
	budgetwebhook.Register(server, decoder, mgr.GetClient())
	ppswebhook.Register(server, decoder, mgr.GetClient(), whitelist(mgr))

	// Pod admission: features register in the order they run.
	mutating, validating := &podadmission.Mutating{}, &podadmission.Validating{}
	mutating.Register("cloneset-normal-in-bind", clonesetwebhook.NewBindingMutator(decoder, mgr.GetClient(), mgr.GetAPIReader()), clonesetwebhook.BindingTarget)
	mutating.Register("persistentpodstate-placement", &ppswebhook.Injector{
		States: mgr.GetClient(), Custom: whitelist(mgr), Recorder: mgr.GetEventRecorder("persistentpodstate-webhook"),
	}, ppswebhook.CreateTarget)
	// The budget first: a disruption it refuses must not be redirected.
	validating.Register("podunavailablebudget", budgetGuard(mgr), slices.Concat(podadmission.DisruptionTargets, podadmission.UpdateTargets)...)
	validating.Register("cloneset-hook-guard", &clonesetwebhook.HookGuard{
		Cache: mgr.GetClient(), Live: mgr.GetAPIReader(), Writer: mgr.GetClient(), Recorder: mgr.GetEventRecorder("cloneset-hook-guard"),
		Exempt: map[string]bool{self: true},
	}, podadmission.DisruptionTargets...)
	server.Register(podadmission.MutatePath, &webhook.Admission{Handler: mutating})
	server.Register(podadmission.ValidatePath, &webhook.Admission{Handler: validating})
}

// guards holds each manager's one budget guard: the controllers and the
// webhooks must share it, so that one process queues every disruption of
// a budget in one place (budgetadmission.Guard batches them into one status
// write) instead of racing itself.
var guards sync.Map

// budgetGuard judges disruptions against PodUnavailableBudgets, for the
// pod admission and the CloneSet controller alike. Its status writes and
// live reads go through a client of their own, not rate-limited in the
// process: each answers a request the API server is holding open, their
// number is bounded by those requests, and queueing them behind the
// controllers' reads would put a webhook's latency at the mercy of a
// resync (the API server's priority and fairness still applies).
func budgetGuard(mgr ctrl.Manager) *budgetadmission.Guard {
	g, _ := guards.LoadOrStore(mgr, sync.OnceValue(func() *budgetadmission.Guard {
		cfg := rest.CopyConfig(mgr.GetConfig())
		cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
		direct, err := client.New(cfg, client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper()})
		if err != nil {
			// client.New fails only on a configuration the manager's
			// own client was already built from.
			panic(fmt.Sprintf("a client for budget admissions: %v", err))
		}
		return &budgetadmission.Guard{
			Cache: mgr.GetClient(), Live: direct, Writer: direct,
			Recorder: mgr.GetEventRecorder("podunavailablebudget"), Now: time.Now,
		}
	}))
	return g.(func() *budgetadmission.Guard)()
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
