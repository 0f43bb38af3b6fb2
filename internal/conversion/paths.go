package conversion

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The webhooks that validate these kinds are registered for v1alpha1; the
// API server sends them a v1beta1 request converted (matchPolicy
// Equivalent), so the errors name v1alpha1's fields. hubPaths maps each
// v1alpha1 field to where a v1beta1 client wrote it.
var hubPaths = map[schema.GroupKind][][2]string{
	CloneSet: {
		{"spec.updateStrategy.partition", "spec.updateStrategy.rollingUpdate.partition"},
		{"spec.updateStrategy.maxUnavailable", "spec.updateStrategy.rollingUpdate.maxUnavailable"},
		{"spec.updateStrategy.maxSurge", "spec.updateStrategy.rollingUpdate.maxSurge"},
		{"spec.updateStrategy.paused", "spec.updateStrategy.rollingUpdate.paused"},
		{"spec.updateStrategy.priorityStrategy", "spec.updateStrategy.rollingUpdate.priorityStrategy"},
		{"spec.updateStrategy.scatterStrategy", "spec.updateStrategy.rollingUpdate.scatterStrategy"},
		{"spec.updateStrategy.inPlaceUpdateStrategy", "spec.updateStrategy.rollingUpdate.inPlaceUpdateStrategy"},
		{"spec.scaleStrategy.disablePVCReuse", "spec.scaleStrategy.enablePVCReuse"},
	},
	PodUnavailableBudget: {
		{"metadata.annotations[pub.kruise.io/protect-operations]", "spec.protectOperations"},
		{"metadata.annotations[pub.kruise.io/protect-total-replicas]", "spec.protectTotalReplicas"},
	},
}

// HubPaths rewrites the field paths of errs, found on the v1alpha1 form of
// an object of kind gk, to the v1beta1 fields. The errors are copied.
func HubPaths(gk schema.GroupKind, errs field.ErrorList) field.ErrorList {
	out := make(field.ErrorList, 0, len(errs))
	for _, e := range errs {
		c := *e
		for _, m := range hubPaths[gk] {
			if rest, ok := strings.CutPrefix(c.Field, m[0]); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
				c.Field = m[1] + rest
				break
			}
		}
		out = append(out, &c)
	}
	return out
}

// RequestedInHub reports whether an admission request's object was sent as
// v1beta1 (requestKind), whatever version the webhook received it in.
func RequestedInHub(requestKind *metav1.GroupVersionKind) bool {
	return requestKind != nil && requestKind.Version == "v1beta1"
}
