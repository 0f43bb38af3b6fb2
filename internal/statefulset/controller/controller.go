// Package controller runs Advanced StatefulSets: it reads a snapshot of a
// set, its pods, claims and revisions, asks the planner what to do, and
// has the shared executor (podexec) carry the plan out with expectations,
// so a stale cache or a restart never acts twice.
package controller

import (
	"context"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/ownerindex"
	"github.com/lifeline-k8s/lifeline/internal/phases"
	budgetadmission "github.com/lifeline-k8s/lifeline/internal/podbudget/admission"
	"github.com/lifeline-k8s/lifeline/internal/podexec"
	"github.com/lifeline-k8s/lifeline/internal/requeue"
)

// Options tune the controller.
type Options struct {
	// Workers is how many sets reconcile at once.
	Workers int
	// ExpectationTimeout bounds how long a write the cache never shows
	// holds a set back (OpenKruise's update expectations never time out,
	// and stall a set until its manager restarts).
	ExpectationTimeout time.Duration
	// HookWaitWarning is how long a pod may wait on a lifecycle hook
	// before a Warning event on its set says so; 0 turns it off.
	HookWaitWarning time.Duration
	// StartOrdinal honours spec.ordinals.start (OpenKruise's
	// StatefulSetStartOrdinal gate, off by default there).
	StartOrdinal bool
}

// Reconciler reconciles Advanced StatefulSets.
type Reconciler struct {
	client.Client
	// APIReader reads around the cache.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.Clock
	Options   Options
	// Budgets are the PodUnavailableBudgets a plan consults before it
	// deletes a pod or updates it in place; nil: none.
	Budgets *budgetadmission.Guard
	// Pods lists each set's pods; nil: through the client.
	Pods ownerindex.PodLister

	exec      *podexec.Executor
	ownWrites podexec.OwnWrites
}

// +kubebuilder:rbac:groups=apps.kruise.io,resources=statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=statefulsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=statefulsets/finalizers,verbs=update

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Options.Workers == 0 {
		r.Options.Workers = 3
	}
	if r.Options.ExpectationTimeout == 0 {
		r.Options.ExpectationTimeout = 5 * time.Minute
	}
	if r.Pods == nil {
		r.Pods = ownerindex.ListedPods{Reader: r.Client}
	}
	r.exec = &podexec.Executor{
		Client: r.Client, Live: r.APIReader, Recorder: r.Recorder, Clock: r.Clock, Budgets: r.Budgets, BudgetUser: "statefulset-controller",
		Expectations: podexec.NewExpectations(r.Options.ExpectationTimeout),
		Metrics:      podexec.Metrics{Created: podsCreated, Deleted: podsDeleted, Failures: actionFailures, Stale: stalePatches, Durations: stateDuration},
	}
	// Pods are matched to their set by the owner's group and kind, so
	// pods whose reference names apps.kruise.io/v1alpha1 are seen too.
	owned := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &appsv1beta1.StatefulSet{}, handler.OnlyControllerOwner())
	return ctrl.NewControllerManagedBy(mgr).
		Named("advanced-statefulset").
		For(&appsv1beta1.StatefulSet{}).
		Watches(&corev1.Pod{}, owned).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.setOfOrphan)).
		Watches(&appsv1.ControllerRevision{}, owned).
		Watches(&policyv1beta1.PodUnavailableBudget{}, phases.WakeNamespace(r.Client, func() client.ObjectList { return &appsv1beta1.StatefulSetList{} })).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.Workers, RateLimiter: requeue.RateLimiter()}).
		Complete(r)
}

// setOfOrphan maps a pod with no controller to the set its name says it
// could belong to, if that set exists and its selector matches the pod.
func (r *Reconciler) setOfOrphan(ctx context.Context, obj client.Object) []reconcile.Request {
	if metav1.GetControllerOf(obj) != nil {
		return nil
	}
	i := strings.LastIndex(obj.GetName(), "-")
	if i <= 0 {
		return nil
	}
	set := &appsv1beta1.StatefulSet{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: obj.GetName()[:i]}, set); err != nil || set.Spec.Selector == nil {
		return nil
	}
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || selector.Empty() || !selector.Matches(labels.Set(obj.GetLabels())) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(set)}}
}

// Reconcile moves one set one step towards its spec: it reads a snapshot
// (once the cache shows our own writes) and runs the phases every workload
// shares (internal/phases: revisions, plan, status, execute, tidy),
// filled in by step.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c, wait, err := r.readSnapshot(ctx, req)
	if c == nil || err != nil {
		return wait, err
	}
	return phases.Run(ctx, &step{r: r, c: c})
}

// staleRetry is when a set whose pod changed under a write is planned
// again at the latest.
const staleRetry = time.Second

func historyLimit(set *appsv1beta1.StatefulSet) int {
	if set.Spec.RevisionHistoryLimit != nil && *set.Spec.RevisionHistoryLimit >= 0 {
		return int(*set.Spec.RevisionHistoryLimit)
	}
	return 10
}
