package planner

import (
	appsv1 "k8s.io/api/apps/v1"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/revision"
)

// Revisions is what the CloneSet's revisions are and what to write (see
// revision.Revisions).
type Revisions = revision.Revisions

// PlanRevisions finds the update and current revisions among existing and
// says what to write. A rollback's renumbered revision also records the
// volumeClaimTemplates hash of now, as OpenKruise's does.
func PlanRevisions(cs *appsv1alpha1.CloneSet, existing []*appsv1.ControllerRevision) (Revisions, error) {
	revs, err := revision.Plan(revision.CloneSetSource(cs), existing)
	if err == nil && revs.Renumber {
		if revs.Update.Annotations == nil {
			revs.Update.Annotations = map[string]string{}
		}
		revs.Update.Annotations[appsv1alpha1.VolumeClaimTemplatesHashAnnotation] = revision.ClaimTemplatesHash(cs.Spec.VolumeClaimTemplates)
	}
	return revs, err
}
