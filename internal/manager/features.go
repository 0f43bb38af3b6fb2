package manager

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
	clonesetcontroller "github.com/lifeline-k8s/lifeline/internal/cloneset/controller"
	clonesetwebhook "github.com/lifeline-k8s/lifeline/internal/cloneset/webhook"
	"github.com/lifeline-k8s/lifeline/internal/conversion"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	budgetadmission "github.com/lifeline-k8s/lifeline/internal/podbudget/admission"
	budgetcontroller "github.com/lifeline-k8s/lifeline/internal/podbudget/controller"
	budgetwebhook "github.com/lifeline-k8s/lifeline/internal/podbudget/webhook"
	"github.com/lifeline-k8s/lifeline/internal/podexec"
	ppscontroller "github.com/lifeline-k8s/lifeline/internal/pps/controller"
	ppswebhook "github.com/lifeline-k8s/lifeline/internal/pps/webhook"
	ppsworkloads "github.com/lifeline-k8s/lifeline/internal/pps/workloads"
	"github.com/lifeline-k8s/lifeline/internal/protection"
	statefulsetcontroller "github.com/lifeline-k8s/lifeline/internal/statefulset/controller"
	statefulsetwebhook "github.com/lifeline-k8s/lifeline/internal/statefulset/webhook"
)

// Features are Lifeline's features in the order the manager sets them up,
// which is also the order their pod admission handlers run in: the budget
// first, since a disruption it refuses must not be redirected (by the
// CloneSet hook guard into PreparingDelete).
func Features() []*Feature {
	// The expectation timeout and the hook-wait warning are flags every
	// workload shares; the Workloads feature binds them.
	shared := &WorkloadOptions{}
	sts := &statefulsetcontroller.Options{}
	return []*Feature{PodUnavailableBudget(), Workloads(shared), CloneSet(shared), StatefulSet(shared, sts), DaemonSet(shared), PersistentPodState(sts)}
}

// StatefulSet runs Advanced StatefulSets (apps.kruise.io StatefulSet):
// its controller, both versions with their conversion, its defaults and
// validation.
func StatefulSet(shared *WorkloadOptions, c *statefulsetcontroller.Options) *Feature {
	o := &statefulsetwebhook.Options{}
	return &Feature{
		Name: "statefulset",
		Flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&o.AutoDeletePVC, "statefulset-auto-delete-pvc", true,
				"Default an Advanced StatefulSet's persistentVolumeClaimRetentionPolicy to Retain/Retain (OpenKruise's StatefulSetAutoDeletePVC gate, on by default there too).")
			fs.IntVar(&c.Workers, "statefulset-workers", 3, "How many Advanced StatefulSets reconcile at once.")
			fs.BoolVar(&c.StartOrdinal, "statefulset-start-ordinal", false,
				"Honour an Advanced StatefulSet's spec.ordinals.start (OpenKruise's StatefulSetStartOrdinal gate, off by default there too).")
		},
		Controllers: func(_ context.Context, mgr ctrl.Manager, s *Shared) error {
			c.ExpectationTimeout, c.HookWaitWarning = shared.ExpectationTimeout, shared.HookWaitWarning
			r := &statefulsetcontroller.Reconciler{Client: HubClient(mgr), APIReader: HubReader(mgr), Recorder: mgr.GetEventRecorder("statefulset-controller"),
				Budgets: s.Budgets, Pods: s.Pods, Options: *c}
			return r.SetupWithManager(mgr)
		},
		AddToScheme: schemes(appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme),
		Conversions: []schema.GroupKind{conversion.StatefulSet},
		Webhooks: func(_ ctrl.Manager, _ *Shared, w Webhooks) {
			statefulsetwebhook.Register(w.Server, w.Decoder, *o)
		},
	}
}

// PodUnavailableBudget keeps budgets' status and guards every disruption
// of the pods they cover.
func PodUnavailableBudget() *Feature {
	gates := &budgetGates{}
	return &Feature{
		Name:        "podunavailablebudget",
		AddToScheme: schemes(policyv1alpha1.AddToScheme, policyv1beta1.AddToScheme),
		Conversions: []schema.GroupKind{conversion.PodUnavailableBudget},
		Flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&gates.delete, "pub-delete-gate", true,
				"Check pod deletions and evictions against PodUnavailableBudgets (OpenKruise's PodUnavailableBudgetDeleteGate, on by default there too).")
			fs.BoolVar(&gates.update, "pub-update-gate", true,
				"Check pod updates and resizes, in-place updates of CloneSets included, against PodUnavailableBudgets (OpenKruise's PodUnavailableBudgetUpdateGate, which is off by default there).")
		},
		Controllers: func(_ context.Context, mgr ctrl.Manager, s *Shared) error {
			gates.apply(s.Budgets)
			r := &budgetcontroller.Reconciler{Client: HubClient(mgr), Recorder: mgr.GetEventRecorder("podunavailablebudget-controller"), ManagerNamespace: s.Namespace}
			return r.SetupWithManager(mgr)
		},
		Webhooks: func(mgr ctrl.Manager, s *Shared, w Webhooks) {
			gates.apply(s.Budgets)
			budgetwebhook.Register(w.Server, w.Decoder, HubClient(mgr))
			w.Validating.Register("podunavailablebudget", s.Budgets, slices.Concat(podadmission.DisruptionTargets, podadmission.UpdateTargets)...)
		},
		MatchConditions: map[string][]podadmission.MatchCondition{
			// A pod update is sent only when it could take the pod out
			// of service (a change of its spec, a new
			// unavailable-pod.kruise.io/ label) or out of a budget's
			// protection (its labels, its controller, the no-protect
			// annotation: admission.Exit).
			"vpodupdate.lifeline.dev": {{Name: "may-disrupt", Expression: "object.spec != oldObject.spec || " +
				changed("labels") + " || " + changed("ownerReferences") + " || " +
				"(" + noProtect("object") + " && !" + noProtect("oldObject") + ")"}},
		},
		Protection: []protection.Source{{Kind: protection.Disruptions, Object: &policyv1beta1.PodUnavailableBudget{}, List: &policyv1alpha1.PodUnavailableBudgetList{}}},
		FailClosed: map[string]protection.Kind{
			"vpod.lifeline.dev": protection.Disruptions, "vpodeviction.lifeline.dev": protection.Disruptions, "vpodupdate.lifeline.dev": protection.Disruptions,
		},
	}
}

// changed is a CEL test that the update changes a pod's metadata.field.
func changed(field string) string {
	return fmt.Sprintf("has(object.metadata.%[1]s) != has(oldObject.metadata.%[1]s) || "+
		"(has(object.metadata.%[1]s) && object.metadata.%[1]s != oldObject.metadata.%[1]s)", field)
}

// noProtect is a CEL test that pod (object or oldObject) opts out of
// every budget.
func noProtect(pod string) string {
	return fmt.Sprintf("(has(%[1]s.metadata.annotations) && '%[2]s' in %[1]s.metadata.annotations && %[1]s.metadata.annotations['%[2]s'] == 'true')",
		pod, policyv1alpha1.PodPubNoProtectionAnnotation)
}

// schemes adds the types of every version, as one AddToScheme.
func schemes(adds ...func(*runtime.Scheme) error) func(*runtime.Scheme) error {
	b := runtime.NewSchemeBuilder(adds...)
	return b.AddToScheme
}

// budgetGates are the operations the budgets guard, as OpenKruise's two
// feature gates choose them.
type budgetGates struct{ delete, update bool }

func (g *budgetGates) apply(guard *budgetadmission.Guard) {
	guard.Unchecked = map[policyv1alpha1.PubOperation]bool{
		policyv1alpha1.PubDeleteOperation: !g.delete, policyv1alpha1.PubEvictOperation: !g.delete,
		policyv1alpha1.PubUpdateOperation: !g.update, policyv1alpha1.PubResizeOperation: !g.update,
	}
}

// CloneSet runs CloneSets: its controller, its validation and defaults,
// the binding mutator that makes scheduled pods Normal, and the hook
// guard. o receives its flags.
func CloneSet(shared *WorkloadOptions) *Feature {
	o := &clonesetcontroller.Options{}
	// The controller's expectations, which the binding mutator reads too;
	// made once the flags are parsed.
	expectations := sync.OnceValue(func() *podexec.Expectations {
		o.ExpectationTimeout, o.HookWaitWarning = shared.ExpectationTimeout, shared.HookWaitWarning
		return clonesetcontroller.NewExpectations(*o)
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
			r := &clonesetcontroller.Reconciler{
				Client: HubClient(mgr), APIReader: HubReader(mgr), Recorder: mgr.GetEventRecorder("cloneset-controller"),
				Budgets: s.Budgets, Options: *o, Expectations: exp, Pods: s.Pods,
			}
			controllerRuns.Store(true)
			return r.SetupWithManager(ctx, mgr)
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
	}
}

// PersistentPodState records where StatefulSet pods ran and places their
// successors there. Its controller and its webhooks share one whitelist
// of StatefulSet-like kinds.
func PersistentPodState(sts *statefulsetcontroller.Options) *Feature {
	configMap := "lifeline-system/kruise-configuration"
	whitelist := &ppsworkloads.Whitelist{}
	var once sync.Once
	bound := func(mgr ctrl.Manager) *ppsworkloads.Whitelist {
		once.Do(func() { whitelist.Reader = HubReader(mgr) })
		return whitelist
	}
	return &Feature{
		Name: "persistentpodstate",
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&configMap, "pps-workload-whitelist", configMap,
				"namespace/name of the ConfigMap whose "+ppsworkloads.WhitelistKey+" lists the StatefulSet-like kinds PersistentPodStates may target (OpenKruise's kruise-configuration format).")
		},
		Validate: func() error {
			ns, name, ok := strings.Cut(configMap, "/")
			if !ok {
				return fmt.Errorf("--pps-workload-whitelist %q: want namespace/name", configMap)
			}
			whitelist.ConfigMap = types.NamespacedName{Namespace: ns, Name: name}
			return nil
		},
		AddToScheme: schemes(appsv1alpha1.AddToScheme, appsv1beta1.AddToScheme),
		Conversions: []schema.GroupKind{conversion.PersistentPodState},
		Controllers: func(ctx context.Context, mgr ctrl.Manager, _ *Shared) error {
			r := &ppscontroller.Reconciler{Client: HubClient(mgr), Live: HubReader(mgr), Recorder: mgr.GetEventRecorder("persistentpodstate-controller"),
				Custom: bound(mgr), StartOrdinal: sts.StartOrdinal}
			if err := r.SetupWithManager(ctx, mgr); err != nil {
				return err
			}
			g := &ppscontroller.Generator{Client: HubClient(mgr), Recorder: mgr.GetEventRecorder("persistentpodstate-generator"),
				Custom: bound(mgr), Mapper: mgr.GetRESTMapper()}
			return g.SetupWithManager(mgr)
		},
		Webhooks: func(mgr ctrl.Manager, _ *Shared, w Webhooks) {
			ppswebhook.Register(w.Server, w.Decoder, HubClient(mgr), bound(mgr))
			w.Mutating.Register("persistentpodstate-placement", &ppswebhook.Injector{
				States: HubClient(mgr), Custom: bound(mgr), Recorder: mgr.GetEventRecorder("persistentpodstate-webhook"),
			}, ppswebhook.CreateTarget)
		},
		MatchConditions: map[string][]podadmission.MatchCondition{
			// Only pods a PersistentPodState could place: a controller
			// and a name ending in an ordinal (generated names are not
			// set yet at admission).
			"mpodcreate.lifeline.dev": {{Name: "ordinal-pod", Expression: "has(object.metadata.name) && object.metadata.name.matches('-[0-9]+$') && " +
				"has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller)"}},
		},
		Protection: []protection.Source{{Kind: protection.Placement, Object: &appsv1beta1.PersistentPodState{}, List: &appsv1alpha1.PersistentPodStateList{}}},
		FailClosed: map[string]protection.Kind{"mpodcreate.lifeline.dev": protection.Placement},
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
