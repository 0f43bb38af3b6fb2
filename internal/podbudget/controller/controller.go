// Package controller keeps each PodUnavailableBudget's status: it finds
// the budget's pods and how many it expects, through the scale subresource
// of the workloads involved (so any workload that declares one is covered,
// custom ones included), and writes the status internal/podbudget/budget
// computes.
package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
	"github.com/lifeline-k8s/lifeline/internal/podbudget/budget"
	"github.com/lifeline-k8s/lifeline/internal/podbudget/workload"
	"github.com/lifeline-k8s/lifeline/internal/protection"
	"github.com/lifeline-k8s/lifeline/internal/requeue"
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
	return ctrl.NewControllerManagedBy(mgr).
		For(&policyv1beta1.PodUnavailableBudget{}).
		Watches(&corev1.Pod{}, r.podEvents()).
		// A workload scaled changes what its budgets expect (a scale-down
		// must not wait for the resync to be let through).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.budgetsOf), builder.WithPredicates(replicasChanged)).
		Watches(&appsv1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(r.budgetsOf), builder.WithPredicates(replicasChanged)).
		Watches(&appsv1beta1.CloneSet{}, handler.EnqueueRequestsFromMapFunc(r.budgetsOf), builder.WithPredicates(replicasChanged)).
		Watches(&appsv1.DaemonSet{}, handler.EnqueueRequestsFromMapFunc(r.budgetsOf), builder.WithPredicates(replicasChanged)).
		Watches(&appsv1beta1.DaemonSet{}, handler.EnqueueRequestsFromMapFunc(r.budgetsOf), builder.WithPredicates(replicasChanged)).
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
		case *appsv1beta1.CloneSet:
			return w.Spec.Replicas
		case *appsv1.DaemonSet:
			return w.Status.DesiredNumberScheduled
		case *appsv1beta1.DaemonSet:
			return w.Status.DesiredNumberScheduled
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

// podsOf returns the budget's active pods and how many it expects: the
// target's scale (replicas and selector read through its scale
// subresource), or, for a selector, the scales of the distinct workloads
// controlling the selected pods; pub.kruise.io/protect-total-replicas
// overrides the count either way.
func (r *Reconciler) podsOf(ctx context.Context, pub *policyv1alpha1.PodUnavailableBudget) ([]*corev1.Pod, int32, error) {
	var selector labels.Selector
	var expected int32
	if t := pub.Spec.TargetReference; t != nil {
		gv, err := schema.ParseGroupVersion(t.APIVersion)
		if err != nil {
			return nil, 0, err
		}
		s, err := r.scaleOf(ctx, gv.WithKind(t.Kind).GroupKind(), pub.Namespace, t.Name)
		if err != nil || s == nil {
			return nil, 0, err
		}
		if selector, err = labels.Parse(s.Status.Selector); err != nil {
			return nil, 0, fmt.Errorf("the scale selector of %s %s: %w", t.Kind, t.Name, err)
		}
		expected = s.Spec.Replicas
	} else if pub.Spec.Selector != nil {
		var err error
		if selector, err = metav1.LabelSelectorAsSelector(pub.Spec.Selector); err != nil {
			return nil, 0, err
		}
	}
	if selector == nil || selector.Empty() {
		return nil, 0, nil
	}
	list := &corev1.PodList{}
	// The pods are only read: a budget over 10,000 pods must not copy
	// them all on every recomputation.
	if err := r.List(ctx, list, client.InNamespace(pub.Namespace), client.MatchingLabelsSelector{Selector: selector}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, 0, err
	}
	var pods []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if podfacts.IsActive(p) {
			pods = append(pods, p)
		}
	}
	var err error
	if t := pub.Spec.TargetReference; t != nil {
		if pods, err = workload.Members(ctx, r.Client, t.APIVersion, t.Kind, t.Name, pods); err != nil {
			return nil, 0, err
		}
	} else if expected, err = r.expectedFor(ctx, pub.Namespace, selector, pods); err != nil {
		return nil, 0, err
	}
	if v, ok := pub.Annotations[policyv1alpha1.PubProtectTotalReplicasAnnotation]; ok {
		if n, err := strconv.ParseInt(v, 10, 32); err == nil {
			expected = int32(n)
		}
	}
	return pods, expected, nil
}

// expectedFor sums the replicas of the distinct workloads controlling the
// pods (a ReplicaSet of a Deployment counts as its Deployment), and of the
// Deployments, StatefulSets and CloneSets whose pod template the selector
// matches. Pods without a workload count nothing: protect-total-replicas
// covers them.
//
// The templates count because the pods alone miss a workload that has no
// active pod at the moment: a Deployment rolled with maxUnavailable 100%
// has none between its old pods' deletion and its new pods' creation. A
// budget over two such Deployments then expected one Deployment's
// replicas and, for that moment, admitted deletions down to that one's
// desired count (3 of 10 pods available where 7 were promised). OpenKruise
// counts from the pods alone, and has the same hole.
func (r *Reconciler) expectedFor(ctx context.Context, namespace string, selector labels.Selector, pods []*corev1.Pod) (int32, error) {
	tops, err := r.templateWorkloads(ctx, namespace, selector)
	if err != nil {
		return 0, err
	}
	owners := map[types.UID]bool{}
	for _, pod := range pods {
		ref := metav1.GetControllerOf(pod)
		if ref == nil || owners[ref.UID] {
			continue
		}
		owners[ref.UID] = true
		top, err := workload.Top(ctx, r.Client, namespace, *ref)
		if err != nil {
			return 0, err
		}
		if _, ok := tops[top.UID]; !ok {
			tops[top.UID] = top
		}
	}
	var total int32
	for _, top := range tops {
		gv, err := schema.ParseGroupVersion(top.APIVersion)
		if err != nil {
			return 0, err
		}
		s, err := r.scaleOf(ctx, gv.WithKind(top.Kind).GroupKind(), namespace, top.Name)
		if err != nil {
			return 0, err
		}
		if s != nil {
			total += s.Spec.Replicas
		}
	}
	return total, nil
}

// templateWorkloads are the Deployments, StatefulSets and CloneSets of the
// namespace, not being deleted, whose pod template labels the selector
// matches, by UID.
func (r *Reconciler) templateWorkloads(ctx context.Context, namespace string, selector labels.Selector) (map[types.UID]metav1.OwnerReference, error) {
	tops := map[types.UID]metav1.OwnerReference{}
	add := func(obj client.Object, template map[string]string, kind schema.GroupVersionKind) {
		if obj.GetDeletionTimestamp() == nil && selector.Matches(labels.Set(template)) {
			tops[obj.GetUID()] = metav1.OwnerReference{APIVersion: kind.GroupVersion().String(), Kind: kind.Kind, Name: obj.GetName(), UID: obj.GetUID()}
		}
	}
	deployments := &appsv1.DeploymentList{}
	if err := r.List(ctx, deployments, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for i := range deployments.Items {
		add(&deployments.Items[i], deployments.Items[i].Spec.Template.Labels, appsv1.SchemeGroupVersion.WithKind("Deployment"))
	}
	statefulSets := &appsv1.StatefulSetList{}
	if err := r.List(ctx, statefulSets, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for i := range statefulSets.Items {
		add(&statefulSets.Items[i], statefulSets.Items[i].Spec.Template.Labels, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
	}
	cloneSets := &appsv1alpha1.CloneSetList{}
	if err := r.List(ctx, cloneSets, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for i := range cloneSets.Items {
		add(&cloneSets.Items[i], cloneSets.Items[i].Spec.Template.Labels, appsv1alpha1.GroupVersion.WithKind("CloneSet"))
	}
	return tops, nil
}

// exactGroup is the RESTMapper the scale client resolves resources with:
// it answers ResourceFor with a resource of the very group asked for. The
// manager's mapper answers a group-qualified resource with those of every
// group whose name begins with it too, apps.kruise.io's first: the scale of the
// StatefulSet "db" (apps) was read from the Advanced StatefulSet "db"
// (apps.kruise.io), found missing, and its budget expected no pod. The
// PodUnavailableBudget e2e matrix fails without it.
type exactGroup struct{ meta.RESTMapper }

func (m exactGroup) ResourceFor(in schema.GroupVersionResource) (schema.GroupVersionResource, error) {
	all, err := m.RESTMapper.ResourcesFor(in)
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	for _, r := range all {
		if r.Group == in.Group && (in.Version == "" || r.Version == in.Version) {
			return r, nil
		}
	}
	return schema.GroupVersionResource{}, &meta.NoResourceMatchError{PartialResource: in}
}

// scaleOf reads a workload's scale subresource; nil when the workload is
// gone or has none.
func (r *Reconciler) scaleOf(ctx context.Context, gk schema.GroupKind, namespace, name string) (*autoscalingv1.Scale, error) {
	if s, ok, err := r.daemonScale(ctx, gk, types.NamespacedName{Namespace: namespace, Name: name}); ok {
		return s, err
	}
	mapping, err := r.Mapper.RESTMapping(gk)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gk, err)
	}
	s, err := r.Scales.Scales(namespace).Get(ctx, mapping.Resource.GroupResource(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return s, err
}

// daemonScale stands in for the scale subresource a DaemonSet (native or
// Advanced) does not have: it expects a pod on each node that should run
// one, status.desiredNumberScheduled, selected by its selector. OpenKruise
// finds no scale there and leaves such a budget expecting nothing, so it
// protects no pod. ok is false for other kinds.
func (r *Reconciler) daemonScale(ctx context.Context, gk schema.GroupKind, key types.NamespacedName) (s *autoscalingv1.Scale, ok bool, err error) {
	var desired int32
	var selector *metav1.LabelSelector
	switch gk {
	case schema.GroupKind{Group: "apps", Kind: "DaemonSet"}:
		ds := &appsv1.DaemonSet{}
		if err := r.Get(ctx, key, ds); err != nil {
			return nil, true, client.IgnoreNotFound(err)
		}
		desired, selector = ds.Status.DesiredNumberScheduled, ds.Spec.Selector
	case schema.GroupKind{Group: "apps.kruise.io", Kind: "DaemonSet"}:
		ds := &appsv1beta1.DaemonSet{}
		if err := r.Get(ctx, key, ds); err != nil {
			return nil, true, client.IgnoreNotFound(err)
		}
		desired, selector = ds.Status.DesiredNumberScheduled, ds.Spec.Selector
	default:
		return nil, false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, true, err
	}
	s = &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: desired}, Status: autoscalingv1.ScaleStatus{Replicas: desired, Selector: sel.String()}}
	return s, true, nil
}
