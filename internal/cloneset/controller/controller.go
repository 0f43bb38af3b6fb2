// Package controller runs CloneSets: it reads a snapshot of a CloneSet and its
// pods, asks the planner what to do, and executes the plan with
// expectations, so a stale cache or a restart never acts twice.
package controller

import (
	"context"
	"sync"
	"time"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"github.com/lifeline-k8s/lifeline/internal/phases"
	"github.com/lifeline-k8s/lifeline/internal/podexec"
)

// Options tune the controller.
type Options struct {
	phases.Options
	// ExcludePreparingDelete leaves PreparingDelete pods out of every
	// CloneSet's replica count.
	ExcludePreparingDelete bool
	// CreatePodsNormal creates pods without a preNormal hook in Normal, as
	// OpenKruise up to v1.8, instead of PreparingNormal until scheduled.
	CreatePodsNormal bool
	// RecreatePodsWhenVCTChanges recreates pods of InPlaceIfPossible
	// CloneSets whose volumeClaimTemplates changed since their revision,
	// so they get claims of the new templates (OpenKruise's
	// RecreatePodWhenChangeVCTInCloneSetGate).
	RecreatePodsWhenVCTChanges bool
}

// Reconciler reconciles CloneSets. Its Expectations are read by the pod
// binding webhook too (the pods it created).
type Reconciler struct {
	phases.Shell
	Options Options
	// parsed caches, per CloneSet, the pod template of each live revision
	// by UID: revision data never changes, and parsing it on every
	// reconcile is wasted work.
	parsed sync.Map // types.NamespacedName → map[types.UID]*corev1.PodTemplateSpec
}

// budgetUser is who the budget's events and counters name for the
// controller's in-place updates (OpenKruise names kruise-manager).
const budgetUser = "lifeline-manager"

var metrics = podexec.NewMetrics(podexec.MetricNames{Kind: "cloneset", Title: "CloneSet", Counts: "replicas",
	CountsHelp: "A CloneSet's pods by kind: desired, current, updated, ready, available, expected_updated. updated/expected_updated is the rollout's progress."})

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

// SetupWithManager registers the controller; it lists what it owns by
// ownerindex, which the manager registers.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	k := phases.Kind{Name: "cloneset", For: &appsv1beta1.CloneSet{}, BudgetUser: budgetUser, Metrics: metrics}
	return r.Setup(mgr, k, &r.Options.Options).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), k.For, handler.OnlyControllerOwner())).
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

// tidy drops names of gone pods from podsToDelete, then tidies as every
// kind does (phases.Shell.Tidy).
func (r *Reconciler) tidy(ctx context.Context, c *cycle) (time.Duration, error) {
	if err := r.prunePodsToDelete(ctx, c.cs, c.all); err != nil {
		return 0, err
	}
	return r.Tidy(ctx, c.cs, c.revs, c.snap.Pods, historyLimit(c.cs), c.snap.Now)
}
