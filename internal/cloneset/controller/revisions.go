package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/cloneset/planner"
	"github.com/lifeline-k8s/lifeline/internal/revision"
)

// revisions are a CloneSet's ControllerRevisions as planned
// (planner.PlanRevisions), once written.
type revisions = planner.Revisions

func (r *Reconciler) revisionStore() revision.Store {
	return revision.Store{Client: r.Client, Live: r.APIReader}
}

// listRevisions reads the CloneSet's revisions.
func (r *Reconciler) listRevisions(ctx context.Context, cs *appsv1alpha1.CloneSet) ([]*appsv1.ControllerRevision, error) {
	return r.revisionStore().List(ctx, cs.Namespace, string(cs.UID))
}

// writeRevisions makes the planned revision write, before any pod is
// planned against the update revision.
func (r *Reconciler) writeRevisions(ctx context.Context, cs *appsv1alpha1.CloneSet, revs *revisions) error {
	return r.revisionStore().Write(ctx, revision.CloneSetSource(cs), revs)
}

// truncateHistory deletes the oldest revisions no pod uses beyond
// revisionHistoryLimit (its default when unset).
func (r *Reconciler) truncateHistory(ctx context.Context, cs *appsv1alpha1.CloneSet, revs *revisions, pods []*corev1.Pod) error {
	limit := appsv1alpha1.DefaultCloneSetRevisionHistoryLimit
	if cs.Spec.RevisionHistoryLimit != nil {
		limit = int(*cs.Spec.RevisionHistoryLimit)
	}
	return r.revisionStore().Truncate(ctx, revs, pods, limit)
}

// claimTemplateHashes are the volumeClaimTemplates hashes the revisions
// record, by name.
func claimTemplateHashes(revs *revisions) map[string]string {
	hashes := map[string]string{}
	for _, cr := range append(revs.All, revs.Update) {
		if h, ok := cr.Annotations[appsv1alpha1.VolumeClaimTemplatesHashAnnotation]; ok {
			hashes[cr.Name] = h
		}
	}
	return hashes
}
