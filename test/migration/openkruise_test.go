package migration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/test/testenv"
)

// TestOpenKruiseRunsOnTheLocalCluster is the ground the migration tests
// stand on: OpenKruise v1.9.0's manager, built from its module and
// installed from its module's config, makes the pods of a v1alpha1
// CloneSet, as a user's cluster has them before the swap.
func TestOpenKruiseRunsOnTheLocalCluster(t *testing.T) {
	ctx := context.Background()
	ensureOpenKruise(t)
	t.Logf("OpenKruise installed %d objects from its module's config", len(kruise.Manifests))
	ns := newNamespace(t)
	labels := map[string]string{"app": "demo"}
	cs := &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "demo"}, Spec: appsv1alpha1.CloneSetSpec{
		Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}}}}}
	if err := k8s.Create(ctx, cs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "3 pods of OpenKruise's Ready", func(ctx context.Context) (bool, string, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=demo"})
		if err != nil {
			return false, "", err
		}
		ready := 0
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == 3, fmt.Sprintf("%d pods, %d ready", len(pods.Items), ready), nil
	})
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=demo"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		owner := metav1.GetControllerOf(&p)
		if owner == nil || owner.Kind != "CloneSet" || owner.Name != "demo" {
			t.Errorf("pod %s is controlled by %+v, want CloneSet demo", p.Name, owner)
		}
		if p.Labels[appsv1alpha1.CloneSetInstanceID] == "" || p.Labels["controller-revision-hash"] == "" {
			t.Errorf("pod %s lacks OpenKruise's labels: %v", p.Name, p.Labels)
		}
		t.Logf("pod %s: owner %s, labels %v", p.Name, owner.APIVersion, p.Labels)
	}
}

// TestOpenKruiseNamesTheRecordedRevisions: OpenKruise's manager on the
// cluster names every set of the golden corpora as its code did when the
// vectors were recorded (hack/kruisevectors), which is what Lifeline's
// revision tests compare with (test/e2e runs the same check on Lifeline).
func TestOpenKruiseNamesTheRecordedRevisions(t *testing.T) {
	ensureOpenKruise(t)
	testenv.CheckRevisions(t, &testenv.Kit{Cluster: local, K8s: k8s, Client: client})
}
