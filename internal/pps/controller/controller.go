// Package controller keeps PersistentPodStates: it records where each
// Ready pod of the target runs (state.Status decides), and generates the
// PersistentPodState a StatefulSet's annotations ask for.
package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/ownerindex"
	"github.com/lifeline-k8s/lifeline/internal/podcache"
	"github.com/lifeline-k8s/lifeline/internal/pps/state"
	"github.com/lifeline-k8s/lifeline/internal/pps/workloads"
	"github.com/lifeline-k8s/lifeline/internal/requeue"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// +kubebuilder:rbac:groups=apps.kruise.io,resources=persistentpodstates,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps.kruise.io,resources=persistentpodstates/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// ConditionTargetReady says whether the target can be followed: False
// with reason NotFound (it does not exist yet; records wait).
const ConditionTargetReady = "TargetReady"

// resync rereads a PersistentPodState whose target Lifeline does not
// watch (a whitelisted kind): its scale-down is seen this late at most.
const resync = 30 * time.Second

var returned = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "lifeline_pps_pods_returned_total",
	Help: "Pods steered back by a PersistentPodState once Ready, by where they landed: node (the recorded node), topology (another node with the recorded required labels) or elsewhere.",
}, []string{"to"})

func init() { metrics.Registry.MustRegister(returned) }

// Reconciler records the placement of the pods of each PersistentPodState's
// target.
type Reconciler struct {
	client.Client
	// Live reads whitelisted workloads, which have no informer.
	Live     client.Reader
	Recorder events.EventRecorder
	Custom   *workloads.Whitelist
	// StartOrdinal: Advanced StatefulSets honour spec.ordinals.start
	// (--statefulset-start-ordinal).
	StartOrdinal bool
	// Pods says whether the cache holds every pod of a namespace yet
	// (internal/podcache); nil when it holds every pod of the cluster.
	Pods podcache.Syncer

	mu      sync.Mutex
	counted map[types.NamespacedName]map[types.UID]bool
}

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&appsv1beta1.PersistentPodState{}).
		Watches(&corev1.Pod{}, r.podEvents()).
		// A StatefulSet matters when it comes, goes or scales; its status
		// writes (one per pod that becomes ready) do not.
		Watches(&appsv1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(r.statesOf), builder.WithPredicates(scaledOrDeleted)).
		Watches(&appsv1beta1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(r.statesOf), builder.WithPredicates(scaledOrDeleted)).
		Named("persistentpodstate").
		WithOptions(controller.Options{RateLimiter: requeue.RateLimiter()}).
		Complete(r)
}

// scaledOrDeleted passes a StatefulSet's (native or Advanced) creation and
// deletion, and an update of its replicas, its ordinals (start, reserved)
// or its deletion timestamp.
var scaledOrDeleted = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	if old, ok := e.ObjectOld.(*appsv1beta1.StatefulSet); ok {
		sts, ok := e.ObjectNew.(*appsv1beta1.StatefulSet)
		return !ok || !apiequality.Semantic.DeepEqual(old.Spec.Replicas, sts.Spec.Replicas) ||
			!apiequality.Semantic.DeepEqual(old.Spec.ReserveOrdinals, sts.Spec.ReserveOrdinals) ||
			!apiequality.Semantic.DeepEqual(old.Spec.Ordinals, sts.Spec.Ordinals) ||
			(old.DeletionTimestamp == nil) != (sts.DeletionTimestamp == nil)
	}
	old, ok1 := e.ObjectOld.(*appsv1.StatefulSet)
	sts, ok2 := e.ObjectNew.(*appsv1.StatefulSet)
	return !ok1 || !ok2 || !apiequality.Semantic.DeepEqual(old.Spec.Replicas, sts.Spec.Replicas) ||
		!apiequality.Semantic.DeepEqual(old.Spec.Ordinals, sts.Spec.Ordinals) ||
		(old.DeletionTimestamp == nil) != (sts.DeletionTimestamp == nil)
}}

// podEvents requeues a pod's PersistentPodState when the pod becomes
// Ready, starts terminating or goes.
func (r *Reconciler) podEvents() handler.TypedEventHandler[client.Object, reconcile.Request] {
	enqueue := func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range r.statesOf(ctx, obj) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, ok1 := e.ObjectOld.(*corev1.Pod)
			pod, ok2 := e.ObjectNew.(*corev1.Pod)
			if ok1 && ok2 && old.ResourceVersion != pod.ResourceVersion &&
				((old.DeletionTimestamp == nil && pod.DeletionTimestamp != nil) || (!podfacts.HasReadyCondition(old) && podfacts.HasReadyCondition(pod))) {
				enqueue(ctx, pod, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, q)
		},
	}
}

// statesOf maps a pod (by its controller) or a workload to the
// PersistentPodStates targeting that workload.
func (r *Reconciler) statesOf(ctx context.Context, obj client.Object) []reconcile.Request {
	gk, name := schema.GroupKind{}, ""
	if pod, ok := obj.(*corev1.Pod); ok {
		owner := metav1.GetControllerOf(pod)
		if owner == nil {
			return nil
		}
		gv, _ := schema.ParseGroupVersion(owner.APIVersion)
		gk, name = gv.WithKind(owner.Kind).GroupKind(), owner.Name
	} else if _, advanced := obj.(*appsv1beta1.StatefulSet); advanced {
		gk, name = appsv1beta1.GroupVersion.WithKind("StatefulSet").GroupKind(), obj.GetName()
	} else {
		gk, name = schema.GroupKind{Group: appsv1.GroupName, Kind: "StatefulSet"}, obj.GetName()
	}
	list := &appsv1alpha1.PersistentPodStateList{}
	if err := r.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, pps := range list.Items {
		if workloads.Target(pps.Spec.TargetReference).Is(gk, name) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: pps.Namespace, Name: pps.Name}})
		}
	}
	return out
}

// Reconcile records the target's pods and writes the status if it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pps := &appsv1alpha1.PersistentPodState{}
	if err := r.Get(ctx, req.NamespacedName, pps); err != nil || pps.DeletionTimestamp != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if podcache.Waiting(r.Pods, pps.Namespace) {
		// Records follow the pods the cache shows: half a namespace
		// would drop the records of the other half.
		return reconcile.Result{RequeueAfter: podcache.Recheck}, nil
	}
	t := pps.Spec.TargetReference
	gv, err := schema.ParseGroupVersion(t.APIVersion)
	if err != nil {
		return reconcile.Result{}, nil // validation refuses it; nothing to follow
	}
	gk := gv.WithKind(t.Kind).GroupKind()
	status := pps.Status.DeepCopy()
	w, err := workloads.Resolve(ctx, r.Client, r.Live, pps.Namespace, t, r.StartOrdinal)
	if err != nil {
		return reconcile.Result{}, err
	}
	snapshot := state.Snapshot{Spec: pps.Spec, Status: pps.Status, Generation: pps.Generation, WorkloadGone: w.Gone, Replicas: w.Replicas, Start: w.Start, Reserved: w.Reserved}
	if !w.Gone {
		if snapshot.Pods, snapshot.Nodes, err = r.podsAndNodes(ctx, pps.Namespace, w.UID); err != nil {
			return reconcile.Result{}, err
		}
	}
	computed, changes := state.Status(snapshot)
	computed.Conditions = status.Conditions
	if w.Gone {
		setCondition(&computed, pps.Generation, metav1.ConditionFalse, "NotFound",
			fmt.Sprintf("%s %s does not exist (or is being deleted); records wait for it", t.Kind, t.Name))
	} else {
		setCondition(&computed, pps.Generation, metav1.ConditionTrue, "Found", fmt.Sprintf("following %s %s", t.Kind, t.Name))
	}
	r.countReturns(pps, snapshot)
	if err := r.write(ctx, pps, &computed); err != nil {
		return reconcile.Result{}, err
	}
	for _, c := range changes {
		if c.Recorded != nil {
			r.Recorder.Eventf(pps, nil, corev1.EventTypeNormal, "PodStateRecorded", "Record", "pod %s runs on node %s %v", c.Pod, c.Recorded.NodeName, c.Recorded.NodeTopologyLabels)
		} else {
			r.Recorder.Eventf(pps, nil, corev1.EventTypeNormal, "PodStateDropped", "Record", "pod %s's record dropped", c.Pod)
		}
	}
	if !workloads.IsStatefulSet(gk) {
		return reconcile.Result{RequeueAfter: resync}, nil
	}
	return reconcile.Result{}, nil
}

// podsAndNodes reads the workload's active pods and the nodes they run
// on (from the cache; a node not there yet defers its pods' records).
func (r *Reconciler) podsAndNodes(ctx context.Context, namespace string, owner types.UID) (map[string]*corev1.Pod, map[string]*corev1.Node, error) {
	list := &corev1.PodList{}
	if err := r.List(ctx, list, client.InNamespace(namespace), ownerindex.Owned(string(owner))); err != nil {
		return nil, nil, err
	}
	pods, nodes := map[string]*corev1.Pod{}, map[string]*corev1.Node{}
	for i := range list.Items {
		p := &list.Items[i]
		if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != owner || !podfacts.IsActive(p) {
			continue
		}
		pods[p.Name] = p
		if p.Spec.NodeName == "" || nodes[p.Spec.NodeName] != nil {
			continue
		}
		node := &corev1.Node{}
		if err := r.Get(ctx, types.NamespacedName{Name: p.Spec.NodeName}, node); err == nil {
			nodes[node.Name] = node
		}
	}
	return pods, nodes, nil
}

// countReturns counts, once per pod, where each Ready pod steered back by
// this PersistentPodState landed against its record.
func (r *Reconciler) countReturns(pps *appsv1alpha1.PersistentPodState, s state.Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counted == nil {
		r.counted = map[types.NamespacedName]map[types.UID]bool{}
	}
	key := client.ObjectKeyFromObject(pps)
	before, now := r.counted[key], map[types.UID]bool{}
	r.counted[key] = now
	for name, pod := range s.Pods {
		recorded, ok := pps.Status.PodStates[name]
		if !ok || pod.Annotations[appsv1alpha1.InjectedPersistentPodStateKey] != pps.Name || !podfacts.HasReadyCondition(pod) {
			continue
		}
		now[pod.UID] = true
		if before[pod.UID] {
			continue
		}
		to := "elsewhere"
		switch node := s.Nodes[pod.Spec.NodeName]; {
		case pod.Spec.NodeName == recorded.NodeName:
			to = "node"
		case node != nil && pps.Spec.RequiredPersistentTopology != nil && sameLabels(node, recorded, pps.Spec.RequiredPersistentTopology.NodeTopologyKeys):
			to = "topology"
		}
		returned.WithLabelValues(to).Inc()
	}
}

func sameLabels(node *corev1.Node, recorded appsv1alpha1.PodState, keys []string) bool {
	for _, k := range keys {
		if v, ok := recorded.NodeTopologyLabels[k]; ok && node.Labels[k] != v {
			return false
		}
	}
	return true
}

func (r *Reconciler) write(ctx context.Context, pps *appsv1alpha1.PersistentPodState, status *appsv1alpha1.PersistentPodStateStatus) error {
	if apiequality.Semantic.DeepEqual(&pps.Status, status) {
		return nil
	}
	updated := pps.DeepCopy()
	updated.Status = *status
	return r.Status().Update(ctx, updated)
}

func setCondition(status *appsv1alpha1.PersistentPodStateStatus, generation int64, s metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: ConditionTargetReady, Status: s, Reason: reason, Message: message, ObservedGeneration: generation})
}
