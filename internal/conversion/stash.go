package conversion

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

// StashAnnotation holds, in a v1alpha1 object, the v1beta1 fields v1alpha1
// cannot express, so that a v1alpha1 client's read-modify-write keeps them.
// Only v1alpha1 forms ever carry it: converting to v1beta1 consumes it.
const StashAnnotation = "conversion.lifeline.dev/v1beta1"

// stash is what StashAnnotation holds, per kind. Empty fields are omitted so
// that an object with nothing to keep carries no annotation.
type stash struct {
	ExcludePreparingDelete bool                  `json:"excludePreparingDelete,omitempty"`
	IgnoredPodSelector     *metav1.LabelSelector `json:"ignoredPodSelector,omitempty"`
	StatefulSet            *statefulSetStash     `json:"statefulSet,omitempty"`
	DaemonSet              *daemonSetStash       `json:"daemonSet,omitempty"`
}

func (s stash) empty() bool {
	return !s.ExcludePreparingDelete && s.IgnoredPodSelector == nil && s.StatefulSet == nil && s.DaemonSet == nil
}

// statefulSetStash holds an Advanced StatefulSet's v1beta1-only spec
// fields, the ones OpenKruise's conversion erases (#2102).
type statefulSetStash struct {
	VolumeClaimUpdateStrategy            appsv1beta1.VolumeClaimUpdateStrategy                        `json:"volumeClaimUpdateStrategy,omitzero"`
	ReserveOrdinals                      []intstr.IntOrString                                         `json:"reserveOrdinals,omitempty"`
	Lifecycle                            *pub.Lifecycle                                               `json:"lifecycle,omitempty"`
	ScaleStrategy                        *appsv1beta1.StatefulSetScaleStrategy                        `json:"scaleStrategy,omitempty"`
	PersistentVolumeClaimRetentionPolicy *appsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
	Ordinals                             *appsv1beta1.StatefulSetOrdinals                             `json:"ordinals,omitempty"`
}

func (k *statefulSetStash) empty() bool {
	return k.VolumeClaimUpdateStrategy == (appsv1beta1.VolumeClaimUpdateStrategy{}) && k.ReserveOrdinals == nil &&
		k.Lifecycle == nil && k.ScaleStrategy == nil && k.PersistentVolumeClaimRetentionPolicy == nil && k.Ordinals == nil
}

// daemonSetStash holds an Advanced DaemonSet's scaleStrategy when
// v1alpha1's annotation does not say it, with the annotation's value (nil:
// absent) when it was read: a v1alpha1 client that changes the annotation
// means it, and then the annotation decides.
type daemonSetStash struct {
	ScaleStrategy        *appsv1beta1.DaemonSetScaleStrategy `json:"scaleStrategy,omitempty"`
	ProgressiveCreatePod *string                             `json:"progressiveCreatePod,omitempty"`
}

func (k *daemonSetStash) progressiveUnchanged(annotations map[string]string) bool {
	v, ok := annotations[appsv1alpha1.ProgressiveCreatePodAnnotation]
	if k.ProgressiveCreatePod == nil {
		return !ok
	}
	return ok && v == *k.ProgressiveCreatePod
}

// writeStash records s in meta, or removes the annotation when s is empty.
func writeStash(meta *metav1.ObjectMeta, s stash) error {
	if s.empty() {
		deleteAnnotation(meta, StashAnnotation)
		return nil
	}
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	setAnnotation(meta, StashAnnotation, string(data))
	return nil
}

// takeStash reads and removes the annotation from meta. An annotation that
// does not parse is an error: dropping it would lose a field silently.
func takeStash(meta *metav1.ObjectMeta) (stash, error) {
	var s stash
	data, ok := meta.Annotations[StashAnnotation]
	if !ok {
		return s, nil
	}
	if err := json.Unmarshal([]byte(data), &s); err != nil {
		return s, fmt.Errorf("metadata.annotations[%s]: %w", StashAnnotation, err)
	}
	deleteAnnotation(meta, StashAnnotation)
	return s, nil
}

func setAnnotation(meta *metav1.ObjectMeta, key, value string) {
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[key] = value
}

// deleteAnnotation removes key, and the map with it when it was the last,
// so that a round trip leaves an object without annotations as it was.
func deleteAnnotation(meta *metav1.ObjectMeta, key string) {
	delete(meta.Annotations, key)
	if len(meta.Annotations) == 0 {
		meta.Annotations = nil
	}
}
