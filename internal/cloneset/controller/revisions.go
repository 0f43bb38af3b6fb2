package controller

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/lifeline-k8s/lifeline/internal/ownerindex"
	"github.com/lifeline-k8s/lifeline/internal/podlife"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/cloneset/planner"
	"github.com/lifeline-k8s/lifeline/internal/revision"
)

// revisions are a CloneSet's ControllerRevisions as planned
// (planner.PlanRevisions), once written.
type revisions = planner.Revisions

// listRevisions reads the CloneSet's revisions.
func (r *Reconciler) listRevisions(ctx context.Context, cs *appsv1alpha1.CloneSet) ([]*appsv1.ControllerRevision, error) {
	list := &appsv1.ControllerRevisionList{}
	if err := r.List(ctx, list, client.InNamespace(cs.Namespace), ownerindex.Owned(string(cs.UID))); err != nil {
		return nil, err
	}
	out := make([]*appsv1.ControllerRevision, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// writeRevisions makes the planned revision write, before any pod is
// planned against the update revision: the renumbering of a rollback, or
// the creation of the template's revision.
func (r *Reconciler) writeRevisions(ctx context.Context, cs *appsv1alpha1.CloneSet, revs *revisions) error {
	switch {
	case revs.Renumber:
		i := slices.IndexFunc(revs.All, func(cr *appsv1.ControllerRevision) bool { return cr.Name == revs.Update.Name })
		if err := r.Patch(ctx, revs.Update, client.MergeFrom(revs.All[i])); err != nil {
			return fmt.Errorf("renumbering revision %s: %w", revs.Update.Name, err)
		}
	case revs.Create:
		created, err := r.createRevision(ctx, cs, revs.Update, &revs.CollisionCount)
		if err != nil {
			return err
		}
		if revs.Current == revs.Update {
			revs.Current = created
		}
		revs.All[len(revs.All)-1], revs.Update = created, created
	}
	revs.Create, revs.Renumber = false, false
	return nil
}

// createRevision creates the planned revision. A name taken by a revision
// with other data is a hash collision: the collision count goes up and the
// revision is named anew.
func (r *Reconciler) createRevision(ctx context.Context, cs *appsv1alpha1.CloneSet, cr *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	for {
		err := r.Create(ctx, cr)
		if err == nil {
			return cr, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating revision %s: %w", cr.Name, err)
		}
		existing := &appsv1.ControllerRevision{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cr), existing); err != nil {
			return nil, err
		}
		if bytes.Equal(existing.Data.Raw, cr.Data.Raw) && metav1.IsControlledBy(existing, cs) {
			return existing, nil // created by an earlier reconcile the cache has not shown yet
		}
		*collisionCount++
		if cr, err = revision.New(cs, collisionCount, cr.Revision); err != nil {
			return nil, err
		}
	}
}

// truncateHistory deletes the oldest revisions no pod uses beyond
// revisionHistoryLimit (its default when unset).
func (r *Reconciler) truncateHistory(ctx context.Context, cs *appsv1alpha1.CloneSet, revs *revisions, pods []*corev1.Pod) error {
	limit := appsv1alpha1.DefaultCloneSetRevisionHistoryLimit
	if cs.Spec.RevisionHistoryLimit != nil {
		limit = int(*cs.Spec.RevisionHistoryLimit)
	}
	live := map[string]bool{revs.Current.Name: true, revs.Update.Name: true}
	for _, pod := range pods {
		live[podlife.ShortHash(pod.Labels[appsv1.ControllerRevisionHashLabelKey])] = true
	}
	var dead []*appsv1.ControllerRevision
	for _, cr := range revs.All {
		if !live[cr.Name] && !live[podlife.ShortHash(cr.Name)] {
			dead = append(dead, cr)
		}
	}
	for i := 0; i < len(dead)-limit; i++ {
		if err := r.Delete(ctx, dead[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
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
