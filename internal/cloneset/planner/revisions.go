package planner

import (
	"bytes"
	"sort"

	appsv1 "k8s.io/api/apps/v1"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/revision"
)

// Revisions is what the CloneSet's revisions are and what to write so that
// its template has one: All (oldest first), the update revision (the
// current template's) and the current one (status.currentRevision's, else
// the update revision).
type Revisions struct {
	All             []*appsv1.ControllerRevision
	Update, Current *appsv1.ControllerRevision
	CollisionCount  int32
	// Create says Update does not exist yet: create it (a name taken by
	// other data is a hash collision; the executor counts it and names it
	// anew). Renumber says Update is an older revision the template went
	// back to: write its new number and the volumeClaimTemplates hash of
	// now, as OpenKruise's rollback does, so its name, and its pods, stay.
	Create, Renumber bool
}

// PlanRevisions finds the update and current revisions among existing and
// says what to write.
func PlanRevisions(cs *appsv1alpha1.CloneSet, existing []*appsv1.ControllerRevision) (Revisions, error) {
	revs := Revisions{All: append([]*appsv1.ControllerRevision(nil), existing...)}
	if cs.Status.CollisionCount != nil {
		revs.CollisionCount = *cs.Status.CollisionCount
	}
	sort.SliceStable(revs.All, func(i, j int) bool { return revs.All[i].Revision < revs.All[j].Revision })
	next := int64(1)
	if n := len(revs.All); n > 0 {
		next = revs.All[n-1].Revision + 1
	}
	data, err := revision.Data(cs)
	if err != nil {
		return revs, err
	}
	var equal *appsv1.ControllerRevision
	for _, cr := range revs.All {
		if bytes.Equal(cr.Data.Raw, data) {
			equal = cr
		}
	}
	switch {
	case equal != nil && equal == revs.All[len(revs.All)-1]:
		revs.Update = equal
	case equal != nil:
		renumbered := equal.DeepCopy()
		renumbered.Revision = next
		if renumbered.Annotations == nil {
			renumbered.Annotations = map[string]string{}
		}
		renumbered.Annotations[appsv1alpha1.VolumeClaimTemplatesHashAnnotation] = revision.ClaimTemplatesHash(cs.Spec.VolumeClaimTemplates)
		revs.Update, revs.Renumber = renumbered, true
	default:
		cr, err := revision.New(cs, &revs.CollisionCount, next)
		if err != nil {
			return revs, err
		}
		revs.Update, revs.Create = cr, true
		revs.All = append(revs.All, cr)
	}
	for _, cr := range revs.All {
		if cr.Name == cs.Status.CurrentRevision {
			revs.Current = cr
		}
	}
	if revs.Current == nil {
		revs.Current = revs.Update
	}
	return revs, nil
}
