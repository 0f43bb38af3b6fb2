// Package controller keeps each PodUnavailableBudget's status: it finds
// the budget's pods and how many it expects, through the scale subresource
// of the workloads involved (so any workload that declares one is covered,
// custom ones included), and writes the status internal/podbudget/budget
// computes.
package controller

import (
	"context"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	"github.com/lifeline-k8s/lifeline/internal/podbudget/budget"
	"github.com/lifeline-k8s/lifeline/internal/podcache"
	"github.com/lifeline-k8s/lifeline/internal/protection"
	"github.com/lifeline-k8s/lifeline/internal/requeue"
	lifelineworkload "github.com/lifeline-k8s/lifeline/pkg/workload"
)

// resync bounds how long a budget goes unchecked: a workload's replicas
// can change without any event on the budget or its pods.
const resync = 30 * time.Second

// +kubebuilder:rbac:groups=policy.kruise.io,resources=podunavailablebudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.kruise.io,resources=podunavailablebudgets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=*,resources=*/scale,verbs=get
// +kubebuilder:rbac:groups=apps,resources=deployments;statefulsets;daemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=daemonsets,verbs=get;list;watch

// Reconciler writes PodUnavailableBudget status.
type Reconciler struct {
	client.Client
	Recorder events.EventRecorder
	Clock    clock.Clock
	// Scales reads workloads' scale subresources; Mapper maps their kinds
	// to resources.
	Scales scale.ScalesGetter
	Mapper meta.RESTMapper
	// UnservedNamespaces are the namespaces the pod webhooks leave out
	// (podadmission.SystemNamespaces when nil).
	UnservedNamespaces []string
	// ManagerNamespace is never protected (internal/protection).
	ManagerNamespace string
	// Pods says whether the cache holds every pod of a namespace yet
	// (internal/podcache); nil when it holds every pod of the cluster.
	Pods podcache.Syncer
}

// SetupWithManager registers the controller: budgets, and their pods'
// changes, which requeue every budget of the pod's namespace.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Scales == nil {
		dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
		if err != nil {
			return err
		}
		r.Mapper = mgr.GetRESTMapper()
		if r.Scales, err = scale.NewForConfig(mgr.GetConfig(), exactGroup{r.Mapper}, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(dc)); err != nil {
			return err
		}
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&policyv1beta1.PodUnavailableBudget{}).
		Watches(&corev1.Pod{}, r.podEvents())
	// A workload scaled changes what its budgets expect (a scale-down must
	// not wait for the resync to be let through): the native kinds and
	// every registered one.
	for _, obj := range append([]client.Object{&appsv1.Deployment{}, &appsv1.StatefulSet{}, &appsv1.DaemonSet{}}, registeredKinds()...) {
		b = b.Watches(obj, handler.EnqueueRequestsFromMapFunc(r.budgetsOf), builder.WithPredicates(replicasChanged))
	}
	return b.
		// A namespace's protection label turns the Protecting condition.
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.budgetsIn)).
		Named("podunavailablebudget").
		WithOptions(controller.Options{RateLimiter: requeue.RateLimiter()}).
		Complete(r)
}

// replicasChanged passes a workload's creation, deletion and a change of
// its spec.replicas (a DaemonSet's: status.desiredNumberScheduled).
var replicasChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	replicas := func(obj client.Object) any {
		switch w := obj.(type) {
		case *appsv1.Deployment:
			return w.Spec.Replicas
		case *appsv1.StatefulSet:
			return w.Spec.Replicas
		case *appsv1.DaemonSet:
			return w.Status.DesiredNumberScheduled
		}
		if v, ok := lifelineworkload.ReadObject(obj); ok {
			return v.Replicas
		}
		return nil
	}
	return !apiequality.Semantic.DeepEqual(replicas(e.ObjectOld), replicas(e.ObjectNew))
}}

// deletionDelay is how long after a pod starts terminating (or goes) its
// budgets are recomputed. The pod was recorded when its deletion was
// admitted, so nothing is gained by recomputing at once, and during a
// storm of deletions the delay lets one recomputation cover many pods
// instead of each conflicting with the admissions' writes. OpenKruise
// waits 5 s; Lifeline waits 1 s, because until the recomputation the
// deleted pods' records stay in the status, and every admission's write
// carries them (at 2,000 records a write is ~100 KB).
const deletionDelay = time.Second

// podEvents requeues the budgets of a pod's namespace when the pod could
// change their numbers: created, its availability or labels changed
// (at once), or terminating or gone (after deletionDelay).
func (r *Reconciler) podEvents() handler.TypedEventHandler[client.Object, reconcile.Request] {
	enqueue := func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request], after time.Duration) {
		for _, req := range r.budgetsOf(ctx, obj) {
			if after > 0 {
				q.AddAfter(req, after)
			} else {
				q.Add(req)
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q, 0)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, updated, ok := pods(e.ObjectOld, e.ObjectNew)
			if ok {
				if matters, after := PodChange(old, updated); matters {
					enqueue(ctx, updated, q, after)
				}
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q, deletionDelay)
		},
	}
}

func pods(a, b client.Object) (*corev1.Pod, *corev1.Pod, bool) {
	old, ok1 := a.(*corev1.Pod)
	updated, ok2 := b.(*corev1.Pod)
	return old, updated, ok1 && ok2
}

// PodChange says whether a pod update can change its budgets' numbers,
// and how soon to recompute them.
func PodChange(old, updated *corev1.Pod) (bool, time.Duration) {
	switch {
	case old.ResourceVersion == updated.ResourceVersion, old.DeletionTimestamp != nil:
		return false, 0
	case updated.DeletionTimestamp != nil:
		return true, deletionDelay
	case budget.Ready(old) != budget.Ready(updated), !maps.Equal(old.Labels, updated.Labels):
		return true, 0
	}
	return false, 0
}

// budgetsOf maps a pod to the budgets of its namespace.
func (r *Reconciler) budgetsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &policyv1alpha1.PodUnavailableBudgetList{}
	if err := r.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, b := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}})
	}
	return out
}

// budgetsIn requeues every budget of a namespace.
func (r *Reconciler) budgetsIn(ctx context.Context, ns client.Object) []reconcile.Request {
	return r.budgetsOf(ctx, &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns.GetName()}})
}

// Reconcile recomputes one budget's status and writes it if it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pub := &policyv1alpha1.PodUnavailableBudget{}
	if err := r.Get(ctx, req.NamespacedName, pub); err != nil || pub.DeletionTimestamp != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if podcache.Waiting(r.Pods, pub.Namespace) {
		// A budget new to its namespace: counted from half its pods, it
		// could allow a disruption the whole would refuse.
		return reconcile.Result{RequeueAfter: podcache.Recheck}, nil
	}
	pods, expected, err := r.podsOf(ctx, pub)
	if err != nil {
		r.Recorder.Eventf(pub, nil, corev1.EventTypeWarning, "CalculateExpectedPodCountFailed", "Reconcile", "Failed to calculate the number of expected pods: %v", err)
		return reconcile.Result{}, err
	}
	if len(pods) == 0 {
		r.Recorder.Eventf(pub, nil, corev1.EventTypeNormal, "NoPods", "Reconcile", "No matching pods found")
	}
	computed, err := budget.Status(budget.Snapshot{Spec: pub.Spec, Generation: pub.Generation, Status: pub.Status, Pods: pods, Expected: expected, Now: r.Clock.Now()})
	if err != nil {
		r.Recorder.Eventf(pub, nil, corev1.EventTypeWarning, "CalculateExpectedPodCountFailed", "Reconcile", "Failed to calculate the number of expected pods: %v", err)
		return reconcile.Result{}, err
	}
	computed.Status.Conditions = slices.Clone(pub.Status.Conditions)
	ns := &corev1.Namespace{}
	if err := r.Get(ctx, types.NamespacedName{Name: pub.Namespace}, ns); err != nil {
		return reconcile.Result{}, err
	}
	if r.protecting(pub, ns, &computed.Status) {
		in := meta.FindStatusCondition(computed.Status.Conditions, policyv1alpha1.ConditionProtecting)
		r.Recorder.Eventf(pub, nil, eventType(in.Status), in.Reason, "Reconcile", "%s", in.Message)
	}
	for _, name := range computed.NotDeleted {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pub.Namespace, Name: name}}
		r.Recorder.Eventf(pod, pub, corev1.EventTypeWarning, "NotDeleted", "Reconcile", "Pod was expected by PUB %s/%s to be deleted but it wasn't", pub.Namespace, pub.Name)
	}
	if !apiequality.Semantic.DeepEqual(pub.Status, computed.Status) {
		updated := pub.DeepCopy()
		updated.Status = computed.Status
		// Conditional on the version read: an admission that took budget
		// meanwhile wins, and this status is computed again.
		if err := r.Status().Update(ctx, updated); err != nil {
			if apierrors.IsConflict(err) {
				return reconcile.Result{Requeue: true}, nil
			}
			return reconcile.Result{}, err
		}
	}
	if err := r.annotateRelated(ctx, pub, pods); err != nil {
		return reconcile.Result{}, err
	}
	after := resync
	if computed.RecheckAfter > 0 && computed.RecheckAfter < after {
		after = computed.RecheckAfter
	}
	return reconcile.Result{RequeueAfter: after}, nil
}

// protecting sets the Protecting condition from the budget's namespace:
// True only where the disruption webhooks fail closed. It reports
// whether the condition changed.
func (r *Reconciler) protecting(pub *policyv1alpha1.PodUnavailableBudget, ns *corev1.Namespace, status *policyv1alpha1.PodUnavailableBudgetStatus) bool {
	state := protection.StateOf(pub.Namespace, ns.Labels, protection.Disruptions, r.unserved(), r.ManagerNamespace)
	c := metav1.Condition{Type: policyv1alpha1.ConditionProtecting, Status: metav1.ConditionFalse, Reason: state.Reason,
		Message: state.Message, ObservedGeneration: pub.Generation}
	if state.InForce {
		c.Status = metav1.ConditionTrue
	}
	old := meta.FindStatusCondition(status.Conditions, c.Type)
	meta.SetStatusCondition(&status.Conditions, c)
	return old == nil || old.Status != c.Status || old.Reason != c.Reason
}

// unserved are the namespaces the pod webhooks leave out.
func (r *Reconciler) unserved() []string {
	if r.UnservedNamespaces != nil {
		return r.UnservedNamespaces
	}
	return podadmission.SystemNamespaces
}

func eventType(s metav1.ConditionStatus) string {
	if s == metav1.ConditionTrue {
		return corev1.EventTypeNormal
	}
	return corev1.EventTypeWarning
}

// registeredKinds are an object of each kind registered in pkg/workload.
func registeredKinds() []client.Object {
	var out []client.Object
	for _, k := range lifelineworkload.Kinds() {
		out = append(out, k.New())
	}
	return out
}
