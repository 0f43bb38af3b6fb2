// Package controller runs CloneSets: it reads a snapshot of a CloneSet and its
// pods, asks the planner what to do, and executes the plan with
// expectations, so a stale cache or a restart never acts twice.
package controller

import (
	"context"
	"sync"
	"time"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/lifeline-k8s/lifeline/internal/ownerindex"
	"github.com/lifeline-k8s/lifeline/internal/phases"
	budgetadmission "github.com/lifeline-k8s/lifeline/internal/podbudget/admission"
	"github.com/lifeline-k8s/lifeline/internal/podexec"
	"github.com/lifeline-k8s/lifeline/internal/requeue"
)

// Options tune the controller.
type Options struct {
	// Workers is how many CloneSets reconcile at once.
	Workers int
	// ExpectationTimeout bounds how long a write the cache never shows
	// holds a CloneSet back.
	ExpectationTimeout time.Duration
	// ExcludePreparingDelete leaves PreparingDelete pods out of every
	// CloneSet's replica count.
	ExcludePreparingDelete bool
	// HookWaitWarning is how long a pod may wait on a lifecycle hook
	// before a Warning event on its CloneSet says so; 0 turns it off.
	HookWaitWarning time.Duration
	// CreatePodsNormal creates pods without a preNormal hook in Normal, as
	// OpenKruise up to v1.8, instead of PreparingNormal until scheduled.
	CreatePodsNormal bool
	// RecreatePodsWhenVCTChanges recreates pods of InPlaceIfPossible
	// CloneSets whose volumeClaimTemplates changed since their revision,
	// so they get claims of the new templates (OpenKruise's
	// RecreatePodWhenChangeVCTInCloneSetGate).
	RecreatePodsWhenVCTChanges bool
}

// Reconciler reconciles CloneSets.
type Reconciler struct {
	client.Client
	// APIReader reads around the cache, for the rare checks that must see
	// the latest state.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Clock     clock.Clock
	Options   Options
	// Budgets are the PodUnavailableBudgets a plan consults before it
	// deletes a pod or updates it in place, and that an in-place update
	// takes its budget from; nil: no budgets.
	Budgets *budgetadmission.Guard
	// Expectations are the controller's writes its cache does not show
	// yet; nil: its own. The pod binding webhook reads the pods it created
	// from them.
	Expectations *podexec.Expectations
	// Pods lists each CloneSet's pods; nil: through the client, which
	// copies every pod struct on each call (the manager passes the pod
	// informer's index).
	Pods ownerindex.PodLister

	exec *podexec.Executor
	// parsed caches, per CloneSet, the pod template of each live revision
	// by UID: revision data never changes, and parsing it on every
	// reconcile is wasted work.
	parsed sync.Map // types.NamespacedName → map[types.UID]*corev1.PodTemplateSpec
}

// +kubebuilder:rbac:groups=apps.kruise.io,resources=clonesets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=clonesets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=clonesets/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.kruise.io,resources=podunavailablebudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy.kruise.io,resources=podunavailablebudgets/status,verbs=get;update

// NewExpectations returns the expectations a controller with o keeps.
func NewExpectations(o Options) *podexec.Expectations {
	if o.ExpectationTimeout == 0 {
		o.ExpectationTimeout = 5 * time.Minute
	}
	return podexec.NewExpectations(o.ExpectationTimeout)
}

// SetupWithManager registers the controller; it lists what it owns by
// ownerindex, which the manager registers.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Options.Workers == 0 {
		r.Options.Workers = 3
	}
	if r.Expectations == nil {
		r.Expectations = NewExpectations(r.Options)
	}
	if r.Pods == nil {
		r.Pods = ownerindex.ListedPods{Reader: r.Client}
	}
	r.exec = &podexec.Executor{
		Client: r.Client, Live: r.APIReader, Recorder: r.Recorder, Clock: r.Clock, Budgets: r.Budgets, BudgetUser: budgetUser,
		Expectations: r.Expectations,
		Metrics:      podexec.Metrics{Created: podsCreated, Deleted: podsDeleted, Failures: actionFailures, Stale: stalePatches, Durations: stateDuration},
	}
	owned := handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &appsv1beta1.CloneSet{}, handler.OnlyControllerOwner())
	return ctrl.NewControllerManagedBy(mgr).
		For(&appsv1beta1.CloneSet{}).
		Watches(&corev1.Pod{}, owned).
		Watches(&corev1.PersistentVolumeClaim{}, owned).
		Watches(&appsv1.ControllerRevision{}, owned).
		// A budget that frees up lets held pods go at once, not at the
		// next retry.
		Watches(&policyv1beta1.PodUnavailableBudget{}, phases.WakeNamespace(r.Client, func() client.ObjectList { return &appsv1beta1.CloneSetList{} })).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.Workers, RateLimiter: requeue.RateLimiter()}).
		Complete(r)
}

// Reconcile moves one CloneSet one step towards its spec: it reads a
// snapshot (only once the cache shows our own writes; reading writes
// nothing) and runs the phases every workload shares (internal/phases:
// revisions, plan, status, execute, tidy; why the status goes before the
// step is said there), filled in by step.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c, wait, err := r.readSnapshot(ctx, req)
	if c == nil || err != nil {
		return wait, err
	}
	return phases.Run(ctx, &step{r: r, c: c})
}

// tidy drops names of gone pods from podsToDelete, truncates the revision
// history, and warns about pods waiting on a hook too long; it returns when
// the next pod will cross that limit.
func (r *Reconciler) tidy(ctx context.Context, c *cycle) (time.Duration, error) {
	if err := r.prunePodsToDelete(ctx, c.cs, c.all); err != nil {
		return 0, err
	}
	if err := r.truncateHistory(ctx, c.cs, c.revs, c.snap.Pods); err != nil {
		return 0, err
	}
	return r.exec.WarnHookWaits(c.cs, c.snap.Pods, r.Options.HookWaitWarning, c.snap.Now), nil
}

// staleRetry is when a CloneSet whose pod changed under a write is planned
// again at the latest.
const staleRetry = time.Second
