package e2e

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

// A PodUnavailableBudget is validated by the shipped manager's webhook:
// a bad one is refused with every error at once, each with its field path
// and OpenKruise's message; a good one, and a second one in conflict with
// it, are told apart.
func TestPodUnavailableBudgetValidation(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	bad := &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad",
		Annotations: map[string]string{policyv1alpha1.PubProtectOperationAnnotation: "DELETE,REBOOT"}}}
	err := k8s.Create(ctx, bad)
	if !apierrors.IsInvalid(err) {
		t.Fatalf("a budget with neither selector nor numbers: %v, want 422", err)
	}
	for _, want := range []string{"spec.selector: Required value: no selector or targetRef defined in PodUnavailableBudget",
		"spec.maxUnavailable: Required value: no maxUnavailable or minAvailable defined in PodUnavailableBudget",
		`metadata.annotations[kruise.io/pub-protect-operations]: Unsupported value: "REBOOT"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v\ndoes not say %q", err, want)
		}
	}
	maxU := intstr.FromString("25%")
	good := &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MaxUnavailable: &maxU}}
	if err := k8s.Create(ctx, good); err != nil {
		t.Fatal(err)
	}
	// Once its controller wrote its status, the manager's cache, which the
	// webhook reads other budgets from, has it.
	waitBudget(t, ns, "web", policyv1alpha1.PodUnavailableBudgetStatus{})
	twin := good.DeepCopy()
	twin.Name, twin.ResourceVersion = "web-twin", ""
	if err := k8s.Create(ctx, twin); err == nil || !strings.Contains(err.Error(), "pub.spec.selector is in conflict with other PodUnavailableBudget web") {
		t.Errorf("a budget over the same pods: %v", err)
	}
}
