// Package ownerindex is the one index Lifeline's controllers list owned
// objects by: the UID of an object's controller, whatever its kind. A
// workload lists what it owns, never adopting look-alikes; UIDs are unique,
// so one index serves CloneSets and StatefulSets alike.
package ownerindex

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Field is the index's name, for client.MatchingFields.
const Field = "lifeline.ownerUID"

// Register adds the index for pods, claims and revisions. The manager
// calls it once, before any feature's controllers: a cache accepts an
// index of one name only once per type.
func Register(ctx context.Context, indexer client.FieldIndexer) error {
	for _, obj := range []client.Object{&corev1.Pod{}, &corev1.PersistentVolumeClaim{}, &appsv1.ControllerRevision{}} {
		if err := indexer.IndexField(ctx, obj, Field, ControllerUID); err != nil {
			return err
		}
	}
	return nil
}

// Orphan is the index value of an object with no controller, which a
// workload that adopts by selector (the Advanced StatefulSet) looks up.
const Orphan = "orphan"

// ControllerUID is the index function (fake clients in tests take it too).
func ControllerUID(o client.Object) []string {
	if ref := metav1.GetControllerOf(o); ref != nil {
		return []string{string(ref.UID)}
	}
	return []string{Orphan}
}

// Owned selects, for a List, the objects whose controller has uid.
func Owned(uid string) client.MatchingFields {
	return client.MatchingFields{Field: uid}
}
