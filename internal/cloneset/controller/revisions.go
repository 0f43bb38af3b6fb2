package controller

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	"github.com/lifeline-k8s/lifeline/internal/ownerindex"
	"github.com/lifeline-k8s/lifeline/internal/podlife"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/cloneset/revision"
)

// revisions are a CloneSet's ControllerRevisions, oldest first.
type revisions struct {
	all            []*appsv1.ControllerRevision
	current        *appsv1.ControllerRevision
	update         *appsv1.ControllerRevision
	collisionCount int32
}

// syncRevisions finds or makes the revision of the current template (the
// update revision), and finds the current revision, the one status says all
// pods were at. A rollback to an earlier template reuses that revision,
// renumbered as the newest, so its name, and so its pods, stay the same.
func (r *Reconciler) syncRevisions(ctx context.Context, cs *appsv1alpha1.CloneSet) (*revisions, error) {
	list := &appsv1.ControllerRevisionList{}
	if err := r.List(ctx, list, client.InNamespace(cs.Namespace), ownerindex.Owned(string(cs.UID))); err != nil {
		return nil, err
	}
	revs := &revisions{collisionCount: ptrValue(cs.Status.CollisionCount)}
	for i := range list.Items {
		revs.all = append(revs.all, &list.Items[i])
	}
	sort.SliceStable(revs.all, func(i, j int) bool { return revs.all[i].Revision < revs.all[j].Revision })
	next := int64(1)
	if n := len(revs.all); n > 0 {
		next = revs.all[n-1].Revision + 1
	}

	data, err := revision.Data(cs)
	if err != nil {
		return nil, err
	}
	var equal *appsv1.ControllerRevision
	for _, cr := range revs.all {
		if bytes.Equal(cr.Data.Raw, data) {
			equal = cr
		}
	}
	switch {
	case equal != nil && equal == revs.all[len(revs.all)-1]:
		revs.update = equal
	case equal != nil:
		// A rollback: the old revision becomes the newest, and records
		// the volumeClaimTemplates of now, as OpenKruise's does.
		patched := equal.DeepCopy()
		patched.Revision = next
		if patched.Annotations == nil {
			patched.Annotations = map[string]string{}
		}
		patched.Annotations[appsv1alpha1.VolumeClaimTemplatesHashAnnotation] = revision.ClaimTemplatesHash(cs.Spec.VolumeClaimTemplates)
		if err := r.Patch(ctx, patched, client.MergeFrom(equal)); err != nil {
			return nil, fmt.Errorf("renumbering revision %s: %w", equal.Name, err)
		}
		revs.update = patched
	default:
		if revs.update, err = r.createRevision(ctx, cs, &revs.collisionCount, next); err != nil {
			return nil, err
		}
		revs.all = append(revs.all, revs.update)
	}
	for _, cr := range revs.all {
		if cr.Name == cs.Status.CurrentRevision {
			revs.current = cr
		}
	}
	if revs.current == nil {
		revs.current = revs.update
	}
	return revs, nil
}

// createRevision creates the revision of the current template. A name taken
// by a revision with other data is a hash collision: the collision count
// goes up and the name changes.
func (r *Reconciler) createRevision(ctx context.Context, cs *appsv1alpha1.CloneSet, collisionCount *int32, number int64) (*appsv1.ControllerRevision, error) {
	for {
		cr, err := revision.New(cs, collisionCount, number)
		if err != nil {
			return nil, err
		}
		err = r.Create(ctx, cr)
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
	}
}

// truncateHistory deletes the oldest revisions no pod uses beyond
// revisionHistoryLimit (its default when unset).
func (r *Reconciler) truncateHistory(ctx context.Context, cs *appsv1alpha1.CloneSet, revs *revisions, pods []*corev1.Pod) error {
	limit := appsv1alpha1.DefaultCloneSetRevisionHistoryLimit
	if cs.Spec.RevisionHistoryLimit != nil {
		limit = int(*cs.Spec.RevisionHistoryLimit)
	}
	live := map[string]bool{revs.current.Name: true, revs.update.Name: true}
	for _, pod := range pods {
		live[podlife.ShortHash(pod.Labels[appsv1.ControllerRevisionHashLabelKey])] = true
	}
	var dead []*appsv1.ControllerRevision
	for _, cr := range revs.all {
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

func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// claimTemplateHashes are the volumeClaimTemplates hashes the revisions
// record, by name.
func (revs *revisions) claimTemplateHashes() map[string]string {
	hashes := map[string]string{}
	for _, cr := range append(revs.all, revs.update) {
		if h, ok := cr.Annotations[appsv1alpha1.VolumeClaimTemplatesHashAnnotation]; ok {
			hashes[cr.Name] = h
		}
	}
	return hashes
}
