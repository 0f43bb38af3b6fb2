package controller

import (
	"context"
	"crypto/rand"
	"math/big"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/cloneset/planner"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// cycle is what one reconcile read: the CloneSet, every pod it owns, and
// the planner's snapshot.
type cycle struct {
	cs       *appsv1alpha1.CloneSet
	all      []*corev1.Pod
	snap     planner.Snapshot
	revs     *revisions
	selector labels.Selector
}

// readSnapshot reads what the planner needs. It returns no cycle, with
// when to look again, while the cache does not show this controller's own
// writes yet, and none for a CloneSet that is gone.
func (r *Reconciler) readSnapshot(ctx context.Context, req ctrl.Request) (*cycle, ctrl.Result, error) {
	cs := &appsv1alpha1.CloneSet{}
	read, wait, err := r.Read(ctx, req, cs, func(key types.NamespacedName) { r.parsed.Delete(key) })
	if read == nil {
		return nil, wait, err
	}
	all, now := read.Pods, read.Now
	selector, err := metav1.LabelSelectorAsSelector(cs.Spec.Selector)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	active, unselected, inactive := sortPods(all, selector)
	pvcs, err := r.ownedPVCs(ctx, cs)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	existing, err := r.RevisionStore().List(ctx, cs.Namespace, string(cs.UID))
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	revs, err := planner.PlanRevisions(cs, existing)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	nodeLabels, err := r.nodeLabels(ctx, cs, active)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	disruptions, err := r.Disruptions(ctx, cs, cloneSetKind, now)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	snap := planner.Snapshot{
		CloneSet: cs, Pods: active, Unselected: unselected, Inactive: inactive, PVCs: pvcs, NodeLabels: nodeLabels,
		ExcludePreparingDelete:     r.Options.ExcludePreparingDelete || cs.Labels[appsv1alpha1.CloneSetScalingExcludePreparingDeleteKey] == "true",
		CreateNormal:               r.Options.CreatePodsNormal,
		RecreatePodsWhenVCTChanges: r.Options.RecreatePodsWhenVCTChanges,
		Disruptions:                disruptions,
		NewInstanceID:              randomID, Now: now,
	}
	return &cycle{cs: cs, all: all, snap: snap, revs: &revs, selector: selector}, ctrl.Result{}, nil
}

// useRevisions completes the snapshot once the planned revision write is
// made: the revisions' names, templates and claim template hashes.
func (r *Reconciler) useRevisions(c *cycle) {
	c.snap.UpdateRevision, c.snap.CurrentRevision = c.revs.Update.Name, c.revs.Current.Name
	c.snap.ClaimTemplateHashes = claimTemplateHashes(c.revs)
	if planner.UpdatesInPlace(c.cs) {
		c.snap.Templates = r.templates(client.ObjectKeyFromObject(c.cs), c.revs)
	}
}

// sortPods divides the owned pods: active ones the selector matches (they
// count), ones it no longer matches (to release), and terminating or
// finished ones.
func sortPods(all []*corev1.Pod, selector labels.Selector) (active, unselected, inactive []*corev1.Pod) {
	for _, pod := range all {
		switch {
		case !selector.Matches(labels.Set(pod.Labels)):
			unselected = append(unselected, pod)
		case podfacts.IsActive(pod):
			active = append(active, pod)
		default:
			inactive = append(inactive, pod)
		}
	}
	return active, unselected, inactive
}

// randomID is a new instance id: five characters of Kubernetes' safe
// alphabet, as OpenKruise's, so pod names look alike.
func randomID() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for i := range b {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		b[i] = alphabet[n.Int64()]
	}
	return string(b)
}
