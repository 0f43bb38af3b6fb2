package conversion

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestHubPaths(t *testing.T) {
	for _, tc := range []struct {
		gk         schema.GroupKind
		alpha, hub string
	}{
		{CloneSet, "spec.updateStrategy.partition", "spec.updateStrategy.rollingUpdate.partition"},
		{CloneSet, "spec.updateStrategy.priorityStrategy.weightPriority[0].weight", "spec.updateStrategy.rollingUpdate.priorityStrategy.weightPriority[0].weight"},
		{CloneSet, "spec.updateStrategy.maxUnavailableX", "spec.updateStrategy.maxUnavailableX"},
		{CloneSet, "spec.scaleStrategy.disablePVCReuse", "spec.scaleStrategy.enablePVCReuse"},
		{CloneSet, "spec.replicas", "spec.replicas"},
		{PodUnavailableBudget, "metadata.annotations[pub.kruise.io/protect-operations]", "spec.protectOperations"},
		{PodUnavailableBudget, "spec.updateStrategy.partition", "spec.updateStrategy.partition"},
	} {
		in := field.ErrorList{field.Invalid(field.NewPath(""), 1, "x")}
		in[0].Field = tc.alpha
		got := HubPaths(tc.gk, in)
		if got[0].Field != tc.hub {
			t.Errorf("%s %s: got %s, want %s", tc.gk.Kind, tc.alpha, got[0].Field, tc.hub)
		}
		if in[0].Field != tc.alpha {
			t.Errorf("%s: the input was changed", tc.alpha)
		}
	}
}
