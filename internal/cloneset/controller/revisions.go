package controller

import (
	"context"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/cloneset/planner"
	"github.com/lifeline-k8s/lifeline/internal/phases"
	"github.com/lifeline-k8s/lifeline/internal/revision"
)

// revisions are a CloneSet's ControllerRevisions as planned
// (planner.PlanRevisions), once written.
type revisions = planner.Revisions

// writeRevisions makes the planned revision write, before any pod is
// planned against the update revision.
func (r *Reconciler) writeRevisions(ctx context.Context, cs *appsv1alpha1.CloneSet, revs *revisions) error {
	return r.RevisionStore().Write(ctx, revision.CloneSetSource(cs), revs)
}

// historyLimit is how many revisions no pod uses are kept.
func historyLimit(cs *appsv1alpha1.CloneSet) int {
	return phases.HistoryLimit(cs.Spec.RevisionHistoryLimit, appsv1alpha1.DefaultCloneSetRevisionHistoryLimit)
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
