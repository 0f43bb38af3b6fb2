package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

// TestPodUnavailableBudgetGuardsDeletesAndEvictions: a budget allowing one
// unavailable pod of a Deployment of four admits one delete, refuses the
// next with its numbers (403) and an eviction as the eviction API refuses
// one (429); with one disruption allowed again, an eviction of every pod at
// once, racing through the real API server, ends with exactly one admitted.
func TestPodUnavailableBudgetGuardsDeletesAndEvictions(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	deploy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](4), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "api"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}},
				Tolerations: []corev1.Toleration{{Key: "lifeline.dev/drain-test", Operator: corev1.TolerationOpExists}},
				Affinity:    onNodes([]string{"admission-a"})}}}}
	// The pods run on a node of the test's own, cordoned while the budget
	// must stay spent: a replacement that came up would rightly give it
	// room again.
	drainNodes(t, "admission-a")
	if err := k8s.Create(ctx, deploy); err != nil {
		t.Fatal(err)
	}
	maxU := intstr.FromString("25%")
	if err := k8s.Create(ctx, newBudget(ns, "api", policyv1alpha1.PodUnavailableBudgetSpec{
		TargetReference: &policyv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"}, MaxUnavailable: &maxU})); err != nil {
		t.Fatal(err)
	}
	settledBudget := policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 4, DesiredAvailable: 3, CurrentAvailable: 4, UnavailableAllowed: 1}
	waitBudget(t, ns, "api", settledBudget)
	pods := func() []corev1.Pod { return livePods(t, ns, "app=api") }
	p := pods()
	cordon := func(unschedulable bool) {
		t.Helper()
		patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, unschedulable)
		if _, err := client.CoreV1().Nodes().Patch(ctx, "admission-a", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cordon(true)
	if err := client.CoreV1().Pods(ns).Delete(ctx, p[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("the one allowed delete: %v", err)
	}
	err := client.CoreV1().Pods(ns).Delete(ctx, p[1].Name, metav1.DeleteOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodUnavailableBudget api allows no more unavailable pods") ||
		!strings.Contains(err.Error(), "3 desired, 4 total") {
		t.Errorf("a second delete: %v", err)
	}
	err = client.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p[2].Name}})
	if !apierrors.IsTooManyRequests(err) {
		t.Errorf("an eviction beyond the budget: %v, want 429", err)
	}

	// The replacement is up: one disruption allowed again, and four
	// evictions race for it.
	cordon(false)
	waitBudget(t, ns, "api", settledBudget)
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted, refused := 0, 0
	for _, pod := range pods() {
		for _, name := range []string{pod.Name} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := client.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					admitted++
				case apierrors.IsTooManyRequests(err):
					refused++
				default:
					t.Errorf("eviction of %s: %v", name, err)
				}
			}()
		}
	}
	wg.Wait()
	if admitted != 1 || refused != 3 {
		t.Errorf("racing evictions: %d admitted, %d refused; want 1 and 3", admitted, refused)
	}
}

// TestCloneSetConsultsItsBudget: a CloneSet allowed to update all four
// pods in place at once (maxUnavailable 100%) under a budget allowing one
// unavailable pod updates them one at a time, saying which budget holds
// the others; judged by a watch of the pods, never more than one is out of
// service, and the rollout finishes.
func TestCloneSetConsultsItsBudget(t *testing.T) {
	alongside(t)
	ctx := context.Background()
	ns := newNamespace(t)
	cs := newCloneSet(ns, "web", 4)
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "4 pods available", settled(4))
	one := intstr.FromInt32(1)
	if err := k8s.Create(ctx, newBudget(ns, "web", policyv1alpha1.PodUnavailableBudgetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MaxUnavailable: &one})); err != nil {
		t.Fatal(err)
	}
	waitBudget(t, ns, "web", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 4, DesiredAvailable: 3, CurrentAvailable: 4, UnavailableAllowed: 1})
	outOfService := watchOutOfService(t, ns)
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
	waitCloneSet(t, cs, "4 pods updated and available", func(c *appsv1alpha1.CloneSet) bool {
		return settled(4)(c) && c.Status.UpdatedAvailableReplicas == 4
	})
	if most := outOfService(); most != 1 {
		t.Errorf("at most %d pods out of service at once, want 1 (the budget's)", most)
	}
	events, err := client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=DisruptionNotAllowed"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) == 0 || !strings.Contains(events.Items[0].Note, "PodUnavailableBudget web") {
		t.Errorf("no DisruptionNotAllowed event naming the budget: %d events", len(events.Items))
	}
}
