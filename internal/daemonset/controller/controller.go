// Package controller runs Advanced DaemonSets: it reads a snapshot of a
// set, the nodes, its pods and revisions, asks the planner what to do, and
// has the shared executor (podexec) carry the plan out with expectations,
// so a stale cache or a restart never acts twice.
package controller

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/phases"
	"github.com/lifeline-k8s/lifeline/internal/podexec"
)

// Options tune the controller.
type Options struct {
	phases.Options
	// ReplaceUnavailableAtOnce is OpenKruise v1.9's rule for old pods
	// that are not available: replaced whatever maxUnavailable says
	// (openkruise/kruise#1323). Off by default.
	ReplaceUnavailableAtOnce bool
}

// Reconciler reconciles Advanced DaemonSets.
type Reconciler struct {
	phases.Shell
	Options Options
	// failed backs off the replacement of a node's failed pod, as the
	// native DaemonSet does (1 s, doubling to 15 min).
	failed *flowcontrol.Backoff
}

var metrics = podexec.NewMetrics(podexec.MetricNames{Kind: "daemonset", Title: "Advanced DaemonSet", Counts: "nodes",
	CountsHelp: "An Advanced DaemonSet's nodes by kind: desired, current, updated, ready, available, misscheduled. updated/desired is the rollout's progress."})

// shellKind is what the shell knows of Advanced DaemonSets.
var shellKind = phases.Kind{Name: "advanced-daemonset", For: &appsv1beta1.DaemonSet{}, BudgetUser: "daemonset-controller", Metrics: metrics,
	// About as often as Kubernetes' DaemonSet controller writes it (at each
	// sync that changes it, a sync per batch of node and pod events its
	// queue collects); Progressing "Complete" is written at once, and so is
	// the number of nodes that should run the pod, which a budget over the
	// set reads as its expected count.
	StatusEvery: time.Second, StatusAtOnce: []string{"DesiredNumberScheduled"}}

// +kubebuilder:rbac:groups=apps.kruise.io,resources=daemonsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=daemonsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=daemonsets/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.failed = flowcontrol.NewBackOff(time.Second, 15*time.Minute)
	return r.Setup(mgr, shellKind, &r.Options.Options).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.allSets), builder.WithPredicates(nodeChanges())).
		Complete(r)
}

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
