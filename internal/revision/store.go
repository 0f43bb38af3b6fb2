package revision

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/internal/ownerindex"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// Store reads and writes a workload's ControllerRevisions: the one place
// every workload controller makes the writes Plan asks for.
type Store struct {
	Client client.Client
	// Live reads around the cache, to tell a revision an earlier reconcile
	// created from a hash collision.
	Live client.Reader
}

// List reads the revisions the owner (by UID) controls.
func (s Store) List(ctx context.Context, namespace, ownerUID string) ([]*appsv1.ControllerRevision, error) {
	list := &appsv1.ControllerRevisionList{}
	if err := s.Client.List(ctx, list, client.InNamespace(namespace), ownerindex.Owned(ownerUID)); err != nil {
		return nil, err
	}
	out := make([]*appsv1.ControllerRevision, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// Write makes the planned revision write, before any pod is planned
// against the update revision: the renumbering of a rollback, or the
// creation of the template's revision.
func (s Store) Write(ctx context.Context, src Source, revs *Revisions) error {
	switch {
	case revs.Renumber:
		i := slices.IndexFunc(revs.All, func(cr *appsv1.ControllerRevision) bool { return cr.Name == revs.Update.Name })
		if err := s.Client.Patch(ctx, revs.Update, client.MergeFrom(revs.All[i])); err != nil {
			return fmt.Errorf("renumbering revision %s: %w", revs.Update.Name, err)
		}
	case revs.Create:
		created, err := s.Create(ctx, src, revs.Update, &revs.CollisionCount)
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

// Create creates the planned revision. A name taken by a revision with
// other data is a hash collision: the collision count goes up and the
// revision is named anew.
func (s Store) Create(ctx context.Context, src Source, cr *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	for {
		err := s.Client.Create(ctx, cr)
		if err == nil {
			return cr, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating revision %s: %w", cr.Name, err)
		}
		existing := &appsv1.ControllerRevision{}
		if err := s.Live.Get(ctx, client.ObjectKeyFromObject(cr), existing); err != nil {
			return nil, err
		}
		if bytes.Equal(existing.Data.Raw, cr.Data.Raw) && metav1.IsControlledBy(existing, src.Owner) {
			return existing, nil // created by an earlier reconcile the cache has not shown yet
		}
		*collisionCount++
		if cr, err = NewFor(src, collisionCount, cr.Revision); err != nil {
			return nil, err
		}
	}
}

// Truncate deletes the oldest revisions no pod uses beyond limit.
func (s Store) Truncate(ctx context.Context, revs *Revisions, pods []*corev1.Pod, limit int) error {
	live := map[string]bool{podfacts.ShortHash(revs.Current.Name): true, podfacts.ShortHash(revs.Update.Name): true}
	for _, pod := range pods {
		live[podfacts.ShortHash(pod.Labels[appsv1.ControllerRevisionHashLabelKey])] = true
	}
	var dead []*appsv1.ControllerRevision
	for _, cr := range revs.All {
		if !live[podfacts.ShortHash(cr.Name)] {
			dead = append(dead, cr)
		}
	}
	for i := 0; i < len(dead)-limit; i++ {
		if err := s.Client.Delete(ctx, dead[i]); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}
