package manager

import (
	"context"
	"flag"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	clonesetcontroller "github.com/lifeline-k8s/lifeline/internal/cloneset/controller"
	clonesetwebhook "github.com/lifeline-k8s/lifeline/internal/cloneset/webhook"
	"github.com/lifeline-k8s/lifeline/internal/conversion"
	"github.com/lifeline-k8s/lifeline/internal/phases"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	"github.com/lifeline-k8s/lifeline/internal/podexec"
)

// CloneSet runs CloneSets: its controller, its validation and defaults,
// the binding mutator that makes scheduled pods Normal, and the hook
// guard. o receives its flags.
func CloneSet(shared *WorkloadOptions) *Feature {
	o := &clonesetcontroller.Options{}
	// The controller's expectations, which the binding mutator reads too;
	// made once the flags are parsed.
	expectations := sync.OnceValue(func() *podexec.Expectations {
		shared.into(&o.Options)
		return phases.NewExpectations(o.Options)
	})
	// controllerRuns: the controller is set up in this manager, so the
	// pods it creates are in expectations once it leads.
	var controllerRuns atomic.Bool
	bindingWait := clonesetwebhook.CacheWait
	return &Feature{
		Name: "cloneset",
		Flags: func(fs *flag.FlagSet) {
			fs.IntVar(&o.Workers, "cloneset-workers", 3, "How many CloneSets reconcile at once.")
			fs.DurationVar(&bindingWait, "binding-cache-wait", clonesetwebhook.CacheWait,
				"How long the pod binding webhook waits for the manager's cache to show a pod it does not show yet before reading it from the API server.")
			fs.BoolVar(&o.ExcludePreparingDelete, "cloneset-scaling-exclude-preparing-delete", false,
				"Leave PreparingDelete pods out of every CloneSet's replica count, so scaling up creates new pods instead of reviving them.")
			fs.BoolVar(&o.CreatePodsNormal, "cloneset-create-pods-normal", false,
				"Create CloneSet pods without a preNormal hook in Normal, as OpenKruise up to v1.8, instead of PreparingNormal until they are scheduled (v1.9).")
			fs.BoolVar(&o.RecreatePodsWhenVCTChanges, "cloneset-recreate-pods-when-vct-changes", false,
				"Recreate, rather than update in place, pods of InPlaceIfPossible CloneSets whose volumeClaimTemplates changed since their revision, so they get claims of the new templates (OpenKruise's RecreatePodWhenChangeVCTInCloneSetGate).")
		},
		AddToScheme: schemes(appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme),
		Conversions: []schema.GroupKind{conversion.CloneSet},
		Controllers: func(ctx context.Context, mgr ctrl.Manager, s *Shared) error {
			exp := expectations()
			r := &clonesetcontroller.Reconciler{Shell: shell(mgr, s, "cloneset-controller", "ScaleUpLimited"), Options: *o}
			r.Expectations = exp
			controllerRuns.Store(true)
			return r.SetupWithManager(mgr)
		},
		Webhooks: func(mgr ctrl.Manager, s *Shared, w Webhooks) {
			clonesetwebhook.Register(w.Server, w.Decoder, HubClient(mgr))
			var arrivals *clonesetwebhook.Arrivals
			if informer, err := mgr.GetCache().GetInformer(context.Background(), &corev1.Pod{}); err == nil {
				// Without it a bind the cache has not caught up with
				// reads the pod from the API server at once.
				arrivals, _ = clonesetwebhook.NewArrivals(informer)
			}
			w.Mutating.Register("cloneset-normal-in-bind", clonesetwebhook.NewBindingMutator(w.Decoder, HubClient(mgr), expectations(), leading(mgr, &controllerRuns), s.Webhook, arrivals, bindingWait), clonesetwebhook.BindingTarget)
			w.Mutating.Register("cloneset-gate-in-status", clonesetwebhook.NewGateMutator(w.Decoder), clonesetwebhook.GateStatusTarget)
		},
		MatchConditions: map[string][]podadmission.MatchCondition{
			"mpodstatus.lifeline.dev": clonesetwebhook.GateStatusConditions,
		},
		ObjectSelectors: map[string]*metav1.LabelSelector{
			"mpodstatus.lifeline.dev": clonesetwebhook.GateStatusPods,
		},
	}
}

// leading reports whether a controller that is set up (runs) leads in
// this replica: mgr's leader-elected controllers run here (at once when
// leader election is off).
func leading(mgr ctrl.Manager, runs *atomic.Bool) func() bool {
	elected := mgr.Elected()
	return func() bool {
		select {
		case <-elected:
			return runs.Load()
		default:
			return false
		}
	}
}
