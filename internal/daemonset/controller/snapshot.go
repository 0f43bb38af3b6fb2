package controller

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/daemonset/planner"
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

// readSnapshot reads what the planner needs. It returns no cycle, with
// when to look again, while the cache does not show this controller's own
// writes yet, and none for a set that is gone.
func (r *Reconciler) readSnapshot(ctx context.Context, req ctrl.Request) (*cycle, ctrl.Result, error) {
	set := &appsv1beta1.DaemonSet{}
	read, wait, err := r.Read(ctx, req, set, nil)
	if read == nil {
		return nil, wait, err
	}
	pods, now := read.Pods, read.Now
	// The planner only reads the nodes: no copy of every node per reconcile.
	nodes := &corev1.NodeList{}
	if err := r.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return nil, ctrl.Result{}, err
	}
	existing, err := r.RevisionStore().List(ctx, set.Namespace, string(set.UID))
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	src := revision.Source{Owner: set, Kind: kind, Template: &set.Spec.Template, Annotations: set.Annotations,
		CollisionCount: set.Status.CollisionCount, Naming: revision.TemplateNaming}
	revs, err := revision.Plan(src, existing)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	disruptions, err := r.Disruptions(ctx, set, kind, now)
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
