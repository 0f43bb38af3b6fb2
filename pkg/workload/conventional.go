package workload

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

// Conventional is a kind of custom workload shaped as OpenKruise's are,
// read as unstructured objects: spec.replicas, spec.selector,
// spec.template, spec.lifecycle, spec.minReadySeconds,
// spec.updateStrategy.rollingUpdate.{partition,maxUnavailable,paused}, and
// a status with replicas, readyReplicas, availableReplicas,
// updatedReplicas, updatedReadyReplicas, updatedAvailableReplicas,
// updateRevision, currentRevision and conditions. It has the scale
// subresource and owns its pods. Registering it is all a custom kind of
// that shape needs.
func Conventional(gvk schema.GroupVersionKind, resource, short string) Kind {
	return Kind{Group: gvk.Group, Name: gvk.Kind, Resource: resource, Short: short, Version: gvk.Version, Served: []string{gvk.Version},
		Scale: true, OwnsPods: true, PausedPath: []string{"spec", "updateStrategy", "rollingUpdate", "paused"},
		New: func() client.Object {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			return u
		},
		NewList: func() client.ObjectList {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
			return l
		},
		Read: func(o client.Object) View { return fromConventional(o.(*unstructured.Unstructured)) }}
}

func fromConventional(u *unstructured.Unstructured) View {
	var spec struct {
		Replicas        *int32                  `json:"replicas"`
		Selector        *metav1.LabelSelector   `json:"selector"`
		Template        *corev1.PodTemplateSpec `json:"template"`
		Lifecycle       *pub.Lifecycle          `json:"lifecycle"`
		MinReadySeconds int32                   `json:"minReadySeconds"`
		UpdateStrategy  struct {
			Type          string `json:"type"`
			RollingUpdate *struct {
				Partition      *intstr.IntOrString `json:"partition"`
				MaxUnavailable *intstr.IntOrString `json:"maxUnavailable"`
				Paused         bool                `json:"paused"`
			} `json:"rollingUpdate"`
		} `json:"updateStrategy"`
	}
	var status struct {
		ObservedGeneration       int64  `json:"observedGeneration"`
		Replicas                 int32  `json:"replicas"`
		ReadyReplicas            int32  `json:"readyReplicas"`
		AvailableReplicas        int32  `json:"availableReplicas"`
		UpdatedReplicas          int32  `json:"updatedReplicas"`
		UpdatedReadyReplicas     int32  `json:"updatedReadyReplicas"`
		UpdatedAvailableReplicas int32  `json:"updatedAvailableReplicas"`
		UpdateRevision           string `json:"updateRevision"`
		CurrentRevision          string `json:"currentRevision"`
		Conditions               []struct {
			Type               string      `json:"type"`
			Status             string      `json:"status"`
			Reason             string      `json:"reason"`
			Message            string      `json:"message"`
			LastTransitionTime metav1.Time `json:"lastTransitionTime"`
		} `json:"conditions"`
	}
	// A field of another shape is left out of the view, not an error: a
	// view need not fail where the kind's own validation would.
	if m, ok := u.Object["spec"].(map[string]any); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(m, &spec)
	}
	if m, ok := u.Object["status"].(map[string]any); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(m, &status)
	}
	v := newView(u, spec.Replicas, spec.Selector)
	v.Template, v.Lifecycle, v.MinReadySeconds = spec.Template, spec.Lifecycle, spec.MinReadySeconds
	v.Strategy, v.MaxUnavailable = spec.UpdateStrategy.Type, 1
	if v.Strategy == "" {
		v.Strategy = "RollingUpdate"
	}
	if ru := spec.UpdateStrategy.RollingUpdate; ru != nil {
		v.Partition, v.Paused = scaled(ru.Partition, v.Replicas, true, 0), ru.Paused
		v.MaxUnavailable = max(scaled(ru.MaxUnavailable, v.Replicas, false, 1), 1)
	}
	v.Status = Status{ObservedGeneration: status.ObservedGeneration, Replicas: status.Replicas, Ready: status.ReadyReplicas,
		Available: status.AvailableReplicas, Updated: status.UpdatedReplicas, UpdatedReady: status.UpdatedReadyReplicas,
		UpdatedAvailable: status.UpdatedAvailableReplicas, UpdateRevision: status.UpdateRevision, CurrentRevision: status.CurrentRevision}
	for _, c := range status.Conditions {
		v.Conditions = append(v.Conditions, Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message, LastTransition: c.LastTransitionTime})
	}
	return v
}
