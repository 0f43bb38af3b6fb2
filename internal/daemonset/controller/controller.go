// Package controller runs Advanced DaemonSets: it reads a snapshot of a
// set, the nodes, its pods and revisions, asks the planner what to do, and
// has the shared executor (podexec) carry the plan out with expectations,
// so a stale cache or a restart never acts twice.
package controller

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

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
	// holds a set back.
	ExpectationTimeout time.Duration
	// HookWaitWarning is how long a pod may wait on a lifecycle hook
	// before a Warning event on its set says so; 0 turns it off.
	HookWaitWarning time.Duration
	// ReplaceUnavailableAtOnce is OpenKruise v1.9's rule for old pods
	// that are not available: replaced whatever maxUnavailable says
	// (openkruise/kruise#1323). Off by default.
	ReplaceUnavailableAtOnce bool
}

// Reconciler reconciles Advanced DaemonSets.
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
	// failed backs off the replacement of a node's failed pod, as the
	// native DaemonSet does (1 s, doubling to 15 min).
	failed *flowcontrol.Backoff
}

// +kubebuilder:rbac:groups=apps.kruise.io,resources=daemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=daemonsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=daemonsets/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

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
	r.failed = flowcontrol.NewBackOff(time.Second, 15*time.Minute)
	r.exec = &podexec.Executor{
		Client: r.Client, Live: r.APIReader, Recorder: r.Recorder, Clock: r.Clock, Budgets: r.Budgets, BudgetUser: "daemonset-controller",
		Expectations: podexec.NewExpectations(r.Options.ExpectationTimeout),
		Metrics:      podexec.Metrics{Created: podsCreated, Deleted: podsDeleted, Failures: actionFailures, Stale: stalePatches, Durations: stateDuration},
	}
	// Pods are matched to their set by the owner's group and kind, so
	// pods made by OpenKruise up to v1.8 (apps.kruise.io/v1alpha1
	// references) are seen too (#2517, #2520).
	owned := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &appsv1beta1.DaemonSet{}, handler.OnlyControllerOwner())
	return ctrl.NewControllerManagedBy(mgr).
		Named("advanced-daemonset").
		For(&appsv1beta1.DaemonSet{}).
		Watches(&corev1.Pod{}, owned).
		Watches(&appsv1.ControllerRevision{}, owned).
		Watches(&policyv1beta1.PodUnavailableBudget{}, phases.WakeNamespace(r.Client, func() client.ObjectList { return &appsv1beta1.DaemonSetList{} })).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.allSets), builder.WithPredicates(nodeChanges())).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.Workers, RateLimiter: requeue.RateLimiter()}).
		Complete(r)
}

// staleRetry is when a set whose pod changed under a write is planned
// again at the latest.
const staleRetry = time.Second

// Reconcile moves one set one step towards its spec: it reads a snapshot
// (once the cache shows our own writes) and, for a set that selects pods,
// runs the phases every workload shares (internal/phases: revisions, plan,
// status, execute, tidy), filled in by step.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c, wait, err := r.readSnapshot(ctx, req)
	if c == nil || err != nil {
		return wait, err
	}
	if sel := c.set.Spec.Selector; sel == nil || len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		r.Recorder.Eventf(c.set, nil, corev1.EventTypeWarning, "SelectingAll", "Select", "This DaemonSet is selecting all pods. A non-empty selector is required.")
		return ctrl.Result{}, nil
	}
	return phases.Run(ctx, &step{r: r, c: c})
}

// failedBackoff is how long the failed pod of node still waits before it
// is replaced; once the wait is over, the next one doubles.
func (r *Reconciler) failedBackoff(set *appsv1beta1.DaemonSet, node string, now time.Time) time.Duration {
	key := string(set.UID) + "/" + node
	if r.failed.IsInBackOffSinceUpdate(key, now) {
		return max(r.failed.Get(key), time.Second)
	}
	r.failed.Next(key, now)
	return 0
}

func historyLimit(set *appsv1beta1.DaemonSet) int {
	if set.Spec.RevisionHistoryLimit != nil && *set.Spec.RevisionHistoryLimit >= 0 {
		return int(*set.Spec.RevisionHistoryLimit)
	}
	return 10
}
