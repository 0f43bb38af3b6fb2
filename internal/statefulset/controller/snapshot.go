package controller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/ownerindex"
	"github.com/lifeline-k8s/lifeline/internal/revision"
	"github.com/lifeline-k8s/lifeline/internal/statefulset/planner"
)

var kind = appsv1beta1.GroupVersion.WithKind("StatefulSet")

// cycle is what one reconcile read.
type cycle struct {
	set      *appsv1beta1.StatefulSet
	snap     planner.Snapshot
	source   revision.Source
	revs     revision.Revisions
	selector string
}

// readSnapshot reads what the planner needs. It returns no cycle, with
// when to look again, while the cache does not show this controller's own
// writes yet, and none for a set that is gone.
func (r *Reconciler) readSnapshot(ctx context.Context, req ctrl.Request) (*cycle, ctrl.Result, error) {
	set := &appsv1beta1.StatefulSet{}
	read, wait, err := r.Read(ctx, req, set, nil)
	if read == nil {
		return nil, wait, err
	}
	pods, now := read.Pods, read.Now
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	orphans, err := r.orphans(ctx, set, selector)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	claims, err := r.claims(ctx, set)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	existing, err := r.RevisionStore().List(ctx, set.Namespace, string(set.UID))
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	src := revision.Source{Owner: set, Kind: kind, Template: &set.Spec.Template, Annotations: set.Annotations,
		CurrentRevision: set.Status.CurrentRevision, CollisionCount: set.Status.CollisionCount}
	revs, err := revision.Plan(src, existing)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	disruptions, err := r.Disruptions(ctx, set, kind, now)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	snap := planner.Snapshot{Set: set, Pods: pods, Orphans: orphans, Claims: claims, StartOrdinal: r.Options.StartOrdinal, Disruptions: disruptions, Now: now}
	return &cycle{set: set, snap: snap, source: src, revs: revs, selector: selector.String()}, ctrl.Result{}, nil
}

// useRevisions completes the snapshot once the planned revision write is
// made.
func (c *cycle) useRevisions() {
	c.snap.UpdateRevision, c.snap.CurrentRevision = c.revs.Update.Name, c.revs.Current.Name
	c.snap.Templates = c.revs.Templates(func(cr *appsv1.ControllerRevision) string { return cr.Name })
}

// orphans are the live pods of the set's namespace with no controller, one
// of its ordinal names and labels its selector matches. When there are
// any, the set is read again from the API server: adopting a pod for a set
// that is gone, or is being deleted, would have the garbage collector
// delete the pod (OpenKruise's canAdopt).
func (r *Reconciler) orphans(ctx context.Context, set *appsv1beta1.StatefulSet, selector labels.Selector) ([]*corev1.Pod, error) {
	if set.DeletionTimestamp != nil || selector.Empty() {
		return nil, nil
	}
	list := &corev1.PodList{}
	if err := r.List(ctx, list, client.InNamespace(set.Namespace), ownerindex.Owned(ownerindex.Orphan)); err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for i := range list.Items {
		pod := &list.Items[i]
		if _, ok := planner.Ordinal(set.Name, pod.Name); ok && pod.DeletionTimestamp == nil && selector.Matches(labels.Set(pod.Labels)) {
			out = append(out, pod)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	live := &appsv1beta1.StatefulSet{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(set), live); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if live.UID != set.UID || live.DeletionTimestamp != nil {
		return nil, nil
	}
	return out, nil
}

// claims are the claims of the set's volumeClaimTemplates, by name.
func (r *Reconciler) claims(ctx context.Context, set *appsv1beta1.StatefulSet) (map[string]*corev1.PersistentVolumeClaim, error) {
	if len(set.Spec.VolumeClaimTemplates) == 0 {
		return nil, nil
	}
	list := &corev1.PersistentVolumeClaimList{}
	if err := r.List(ctx, list, client.InNamespace(set.Namespace), client.MatchingLabels(set.Spec.Selector.MatchLabels)); err != nil {
		return nil, err
	}
	out := map[string]*corev1.PersistentVolumeClaim{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}
