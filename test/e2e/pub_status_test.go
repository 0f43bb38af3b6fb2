package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

// waitBudget polls the budget until its status is want (records aside).
func waitBudget(t *testing.T, ns, name string, want policyv1alpha1.PodUnavailableBudgetStatus) {
	t.Helper()
	waitBudgetWithin(t, time.Minute, ns, name, want)
}

// waitBudgetWithin is waitBudget with another deadline, for big workloads.
func waitBudgetWithin(t *testing.T, timeout time.Duration, ns, name string, want policyv1alpha1.PodUnavailableBudgetStatus) {
	t.Helper()
	eventually(t, timeout, "budget "+name+" status", func(ctx context.Context) (bool, string, error) {
		b := &policyv1alpha1.PodUnavailableBudget{}
		if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
			return false, err.Error(), nil
		}
		got := b.Status
		ok := got.TotalReplicas == want.TotalReplicas && got.DesiredAvailable == want.DesiredAvailable &&
			got.CurrentAvailable == want.CurrentAvailable && got.UnavailableAllowed == want.UnavailableAllowed &&
			got.ObservedGeneration == b.Generation
		return ok, fmt.Sprintf("%+v", got), nil
	})
}

func newBudget(ns, name string, spec policyv1alpha1.PodUnavailableBudgetSpec) *policyv1alpha1.PodUnavailableBudget {
	return &policyv1alpha1.PodUnavailableBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
}

// newDeployment is a Deployment of replicas nginx pods labelled app=name.
func newDeployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}}}}}
}

// budgetedDeployment creates newDeployment and a budget of the same name
// over its pods that allows no disruption, and waits until the budget
// counts every pod available.
func budgetedDeployment(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	create(t, newDeployment(ns, name, replicas))
	create(t, newBudget(ns, name, policyv1alpha1.PodUnavailableBudgetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, MaxUnavailable: ptr.To(intstr.FromInt32(0))}))
	waitBudget(t, ns, name, policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: replicas, DesiredAvailable: replicas, CurrentAvailable: replicas})
}

// TestPodUnavailableBudgetStatus: the controller computes a budget's
// status for a Deployment by targetRef, a CloneSet by selector, and a
// custom workload the test defines (a CRD with a scale subresource) and
// drives, whose budget exists before any of its pods does (OpenKruise's
// budget would never pick them up).
func TestPodUnavailableBudgetStatus(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	maxU := intstr.FromString("25%")
	minA := intstr.FromInt32(2)

	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](4), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "api"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}}}}}
	if err := k8s.Create(ctx, deploy); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, newBudget(ns, "api", policyv1alpha1.PodUnavailableBudgetSpec{
		TargetReference: &policyv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"}, MaxUnavailable: &maxU})); err != nil {
		t.Fatal(err)
	}
	waitBudget(t, ns, "api", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 4, DesiredAvailable: 3, CurrentAvailable: 4, UnavailableAllowed: 1})

	cs := newCloneSet(ns, "web", 3)
	createCloneSet(t, cs)
	if err := k8s.Create(ctx, newBudget(ns, "web", policyv1alpha1.PodUnavailableBudgetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MinAvailable: &minA})); err != nil {
		t.Fatal(err)
	}
	waitBudget(t, ns, "web", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 3, DesiredAvailable: 2, CurrentAvailable: 3, UnavailableAllowed: 1})

	// A custom workload: the budget first, then the workload, then its
	// pods, made by the test as its controller would.
	fleetCRD(t)
	if err := k8s.Create(ctx, newBudget(ns, "fleet", policyv1alpha1.PodUnavailableBudgetSpec{
		TargetReference: &policyv1alpha1.TargetReference{APIVersion: "example.lifeline.dev/v1", Kind: "Fleet", Name: "f"}, MaxUnavailable: &maxU})); err != nil {
		t.Fatal(err)
	}
	fleet := &unstructured.Unstructured{}
	fleet.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.lifeline.dev", Version: "v1", Kind: "Fleet"})
	fleet.SetNamespace(ns)
	fleet.SetName("f")
	_ = unstructured.SetNestedField(fleet.Object, int64(3), "spec", "replicas")
	if err := k8s.Create(ctx, fleet); err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(fleet.Object, "app=fleet", "status", "selector")
	_ = unstructured.SetNestedField(fleet.Object, int64(3), "status", "replicas")
	if err := k8s.Status().Update(ctx, fleet); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("f-%d", i), Labels: map[string]string{"app": "fleet"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.lifeline.dev/v1", Kind: "Fleet", Name: "f", UID: fleet.GetUID(), Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}}}
		if err := k8s.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	waitBudget(t, ns, "fleet", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 3, DesiredAvailable: 2, CurrentAvailable: 3, UnavailableAllowed: 1})
}

// fleetCRD installs Fleet (example.lifeline.dev/v1), a workload with a
// scale subresource and no controller: the tests drive it.
func fleetCRD(t *testing.T) { installCRD(t, "Fleet", "fleets", true) }

// installCRD installs a namespaced kind of example.lifeline.dev/v1 with
// any fields, a status subresource, and a scale subresource when scale.
func installCRD(t *testing.T, kind, plural string, scale bool) {
	t.Helper()
	preserve := true
	version := apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true,
		Schema:       &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}},
		Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}}
	if scale {
		version.Subresources.Scale = &apiextensionsv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas",
			LabelSelectorPath: ptr.To(".status.selector")}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".example.lifeline.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.lifeline.dev", Scope: apiextensionsv1.NamespaceScoped,
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{version},
		},
	}
	if _, err := envtest.InstallCRDs(local.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}}); err != nil {
		t.Fatal(err)
	}
}

// waitRelatedPub waits until every live pod the selector picks carries
// both related-pub annotations naming the budget, as OpenKruise writes
// them (tools read them, and OpenKruise guards only pods that carry one).
func waitRelatedPub(t *testing.T, ns, selector, name string) {
	t.Helper()
	eventually(t, time.Minute, "pods annotated with budget "+name, func(ctx context.Context) (bool, string, error) {
		pods := livePods(t, ns, selector)
		for _, p := range pods {
			if p.Annotations["pub.kruise.io/related-pub"] != name || p.Annotations["kruise.io/related-pub"] != name {
				return false, fmt.Sprintf("%s: %v", p.Name, p.Annotations), nil
			}
		}
		return len(pods) > 0, "no pods", nil
	})
}
