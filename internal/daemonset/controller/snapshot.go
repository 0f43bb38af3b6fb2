package controller

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/daemonset/planner"
	budgetadmission "github.com/lifeline-k8s/lifeline/internal/podbudget/admission"
	"github.com/lifeline-k8s/lifeline/internal/revision"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

var kind = appsv1beta1.GroupVersion.WithKind("DaemonSet")

// cycle is what one reconcile read.
type cycle struct {
	set    *appsv1beta1.DaemonSet
	snap   planner.Snapshot
	source revision.Source
	revs   revision.Revisions
}

func (r *Reconciler) revisionStore() revision.Store {
	return revision.Store{Client: r.Client, Live: r.APIReader}
}

// readSnapshot reads what the planner needs. It returns no cycle, with
// when to look again, while the cache does not show this controller's own
// writes yet, and none for a set that is gone.
func (r *Reconciler) readSnapshot(ctx context.Context, req ctrl.Request) (*cycle, ctrl.Result, error) {
	set := &appsv1beta1.DaemonSet{}
	if err := r.Get(ctx, req.NamespacedName, set); err != nil {
		if apierrors.IsNotFound(err) {
			r.exec.Expectations.Forget(req.NamespacedName)
			r.ownWrites.Forget(req.NamespacedName)
			deleteGauges(req.Namespace, req.Name)
		}
		return nil, ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !r.ownWrites.Seen(req.NamespacedName, set.ResourceVersion) {
		return nil, ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	now := r.Clock.Now()
	pods, err := r.Pods.OwnedPods(ctx, set.Namespace, string(set.UID))
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	if wait, err := r.waitForCache(ctx, set, pods, now); wait > 0 || err != nil {
		return nil, ctrl.Result{RequeueAfter: wait}, err
	}
	// The planner only reads the nodes: no copy of every node per reconcile.
	nodes := &corev1.NodeList{}
	if err := r.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, ctrl.Result{}, err
	}
	existing, err := r.revisionStore().List(ctx, set.Namespace, string(set.UID))
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	src := revision.Source{Owner: set, Kind: kind, Template: &set.Spec.Template, Annotations: set.Annotations,
		CollisionCount: set.Status.CollisionCount, Naming: revision.TemplateNaming}
	revs, err := revision.Plan(src, existing)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	owner := metav1.OwnerReference{APIVersion: kind.GroupVersion().String(), Kind: kind.Kind, Name: set.Name, UID: set.UID}
	disruptions, err := budgetadmission.ChecksFor(ctx, r.Budgets, r.Client, set.Namespace, owner, now)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	snap := planner.Snapshot{Set: set, Pods: pods, Disruptions: disruptions, Now: now,
		ReplaceUnavailableAtOnce: r.Options.ReplaceUnavailableAtOnce,
		FailedBackoff:            func(node string) time.Duration { return r.failedBackoff(set, node, now) }}
	for i := range nodes.Items {
		snap.Nodes = append(snap.Nodes, &nodes.Items[i])
	}
	return &cycle{set: set, snap: snap, source: src, revs: revs}, ctrl.Result{}, nil
}

// useRevisions completes the snapshot once the planned revision write is
// made: revisions are known by their short hash, which pods carry.
func (c *cycle) useRevisions() {
	c.snap.UpdateHash = hashOf(c.revs.Update)
	c.snap.Templates = c.revs.Templates(hashOf)
}

// hashOf is a revision's short hash: its controller-revision-hash label,
// or for a revision without one (an old native one) the end of its name.
func hashOf(cr *appsv1.ControllerRevision) string {
	if h := cr.Labels[appsv1.ControllerRevisionHashLabelKey]; h != "" {
		return h
	}
	return podfacts.ShortHash(cr.Name)
}

// waitForCache waits while the cache does not show this controller's own
// pod writes (podexec's CacheWait).
func (r *Reconciler) waitForCache(ctx context.Context, set *appsv1beta1.DaemonSet, pods []*corev1.Pod, now time.Time) (time.Duration, error) {
	return r.exec.CacheWait(ctx, set, pods, now, expectationsExpired)
}
