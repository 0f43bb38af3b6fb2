package revision

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Source is a workload as its revisions need it: the owner (a revision is
// named after it and owned by it), its pod template, the annotations a
// new revision carries, and what its status records.
type Source struct {
	Owner       metav1.Object
	Kind        schema.GroupVersionKind
	Template    *corev1.PodTemplateSpec
	Annotations map[string]string
	// CurrentRevision is status.currentRevision, CollisionCount
	// status.collisionCount.
	CurrentRevision string
	CollisionCount  *int32
	// Naming is how its revisions are named.
	Naming Naming
}

// Naming is a workload kind's way of naming its revisions.
type Naming int

const (
	// HistoryNaming is Kubernetes' controller history's, which CloneSet
	// and StatefulSet use: the hash of the revision data and the decimal
	// collision count, labelled controller.kubernetes.io/hash.
	HistoryNaming Naming = iota
	// TemplateNaming is the native DaemonSet's: PodTemplateHash of the
	// template and the collision count (none until a collision), labelled
	// controller-revision-hash.
	TemplateNaming
)

// Revisions is what a workload's revisions are and what to write so that
// its template has one: All (oldest first), the update revision (the
// current template's) and the current one (status.currentRevision's, else
// the update revision).
type Revisions struct {
	All             []*appsv1.ControllerRevision
	Update, Current *appsv1.ControllerRevision
	CollisionCount  int32
	// Create says Update does not exist yet: create it (a name taken by
	// other data is a hash collision; count it and name it anew with
	// NewFor). Renumber says Update is an older revision the template went
	// back to: write its new number, so its name, and its pods, stay.
	Create, Renumber bool
}

// Plan finds the update and current revisions among existing and says
// what to write, as OpenKruise (and Kubernetes' StatefulSet) do.
func Plan(src Source, existing []*appsv1.ControllerRevision) (Revisions, error) {
	revs := Revisions{All: append([]*appsv1.ControllerRevision(nil), existing...)}
	if src.CollisionCount != nil {
		revs.CollisionCount = *src.CollisionCount
	}
	sort.SliceStable(revs.All, func(i, j int) bool { return revs.All[i].Revision < revs.All[j].Revision })
	next := int64(1)
	if n := len(revs.All); n > 0 {
		next = revs.All[n-1].Revision + 1
	}
	data, err := TemplateData(src.Template)
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
		revs.Update, revs.Renumber = renumbered, true
	default:
		cr, err := NewFor(src, &revs.CollisionCount, next)
		if err != nil {
			return revs, err
		}
		revs.Update, revs.Create = cr, true
		revs.All = append(revs.All, cr)
	}
	for _, cr := range revs.All {
		if cr.Name == src.CurrentRevision {
			revs.Current = cr
		}
	}
	if revs.Current == nil {
		revs.Current = revs.Update
	}
	return revs, nil
}

// NewFor builds a workload's ControllerRevision at the given collision
// count and revision number, as OpenKruise builds it: labelled with the
// template labels and the hash, owned by the workload, carrying the
// source's annotations.
func NewFor(src Source, collisionCount *int32, number int64) (*appsv1.ControllerRevision, error) {
	data, err := TemplateData(src.Template)
	if err != nil {
		return nil, err
	}
	hash, label := Hash(data, collisionCount), HashLabel
	if src.Naming == TemplateNaming {
		if collisionCount != nil && *collisionCount == 0 && src.CollisionCount == nil {
			collisionCount = nil // a set that never collided hashes without a count
		}
		hash, label = PodTemplateHash(src.Template, collisionCount), appsv1.ControllerRevisionHashLabelKey
	}
	labels := map[string]string{}
	for k, v := range src.Template.Labels {
		labels[k] = v
	}
	labels[label] = hash
	annotations := map[string]string{}
	for k, v := range src.Annotations {
		annotations[k] = v
	}
	cr := &appsv1.ControllerRevision{}
	cr.Name = Name(src.Owner.GetName(), hash)
	cr.Namespace = src.Owner.GetNamespace()
	cr.Labels = labels
	cr.Annotations = annotations
	cr.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(src.Owner, src.Kind)}
	cr.Data.Raw = data
	cr.Revision = number
	return cr, nil
}

// TemplateOf reads the pod template a ControllerRevision stores.
func TemplateOf(cr *appsv1.ControllerRevision) (*corev1.PodTemplateSpec, error) {
	var data struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(cr.Data.Raw, &data); err != nil {
		return nil, fmt.Errorf("revision %s: %w", cr.Name, err)
	}
	return &data.Spec.Template, nil
}

// Templates are the pod templates of every revision and of the update
// revision, by key (a revision's name, or its hash); a revision whose data
// does not hold one is left out.
func (r Revisions) Templates(key func(*appsv1.ControllerRevision) string) map[string]*corev1.PodTemplateSpec {
	out := map[string]*corev1.PodTemplateSpec{}
	for _, cr := range append(slices.Clip(r.All), r.Update) {
		if cr == nil {
			continue
		}
		if t, err := TemplateOf(cr); err == nil {
			out[key(cr)] = t
		}
	}
	return out
}
