package integration

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// testCloneSetV1beta1: a v1beta1 CloneSet gets the defaults and the
// validation of a v1alpha1 one (the API server converts it for the
// webhooks), and the errors name the fields the client wrote.
func testCloneSetV1beta1(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	beta := func(name, patch string) *unstructured.Unstructured {
		obj := minimalCloneSet(name)
		obj.SetAPIVersion("apps.kruise.io/v1beta1")
		obj.SetNamespace(ns)
		merged, err := mergePatch(obj, patch)
		if err != nil {
			t.Fatal(err)
		}
		return merged
	}
	err := k8s.Create(ctx, beta("bad", `{"spec":{"template":{"spec":{"restartPolicy":"Never"}},"updateStrategy":{"rollingUpdate":{"partition":"half","maxUnavailable":"x"}}}}`))
	for _, want := range []struct{ field, message string }{
		{"spec.template.spec.restartPolicy", "Unsupported value"},
		{"spec.updateStrategy.rollingUpdate.partition", "failed GetScaledValueFromIntOrPercent"},
		{"spec.updateStrategy.rollingUpdate.maxUnavailable", "failed GetScaledValueFromIntOrPercent for maxUnavailable"},
	} {
		requireInvalid(t, err, want.field, want.message)
	}

	if err := k8s.Create(ctx, beta("web", `{}`)); err != nil {
		t.Fatal(err)
	}
	cs := &appsv1alpha1.CloneSet{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, cs); err != nil {
		t.Fatal(err)
	}
	us, c := cs.Spec.UpdateStrategy, cs.Spec.Template.Spec.Containers[0]
	if *cs.Spec.RevisionHistoryLimit != 10 || us.MaxUnavailable.String() != "20%" || us.MaxSurge.String() != "0" ||
		c.TerminationMessagePath != "/dev/termination-log" || cs.Spec.Template.Spec.TerminationGracePeriodSeconds == nil {
		t.Errorf("a v1beta1 CloneSet was not defaulted as a v1alpha1 one: history %v strategy %+v container %+v", cs.Spec.RevisionHistoryLimit, us, c)
	}
	// v1beta1's enablePVCReuse defaults to false (its CRD default), which
	// v1alpha1 reads as disablePVCReuse, as in OpenKruise.
	if !cs.Spec.ScaleStrategy.DisablePVCReuse {
		t.Error("a v1beta1 CloneSet without enablePVCReuse reuses PVCs")
	}
}
