// Package controller runs Advanced StatefulSets: it reads a snapshot of a
// set, its pods, claims and revisions, asks the planner what to do, and
// has the shared executor (podexec) carry the plan out with expectations,
// so a stale cache or a restart never acts twice.
package controller

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/phases"
	"github.com/lifeline-k8s/lifeline/internal/podexec"
)

// Options tune the controller.
type Options struct {
	phases.Options
	// StartOrdinal honours spec.ordinals.start (OpenKruise's
	// StatefulSetStartOrdinal gate, off by default there).
	StartOrdinal bool
}

// Reconciler reconciles Advanced StatefulSets.
type Reconciler struct {
	phases.Shell
	Options Options
}

var metrics = podexec.NewMetrics(podexec.MetricNames{Kind: "statefulset", Title: "Advanced StatefulSet", Counts: "replicas",
	CountsHelp: "An Advanced StatefulSet's pods by kind: desired, current, updated, ready, available. updated/desired is the rollout's progress."})

// shellKind is what the shell knows of Advanced StatefulSets.
var shellKind = phases.Kind{Name: "advanced-statefulset", For: &appsv1beta1.StatefulSet{}, BudgetUser: "statefulset-controller", Metrics: metrics}

// +kubebuilder:rbac:groups=apps.kruise.io,resources=statefulsets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=statefulsets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=apps.kruise.io,resources=statefulsets/finalizers,verbs=update

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return r.Setup(mgr, shellKind, &r.Options.Options).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.setOfOrphan)).
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
