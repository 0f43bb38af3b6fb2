package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

// TestTargetBudgetCountsByOwner: a budget targeting a Deployment counts
// the Deployment's pods only, not another Deployment's whose pods carry
// the same labels (its scale selector matches both): 3 available of 3,
// not 5.
func TestTargetBudgetCountsByOwner(t *testing.T) {
	ns := newNamespace(t)
	deployment := func(name string, replicas int32, labels map[string]string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}}}}}
	}
	create(t, deployment("owned", 3, map[string]string{"app": "shared"}))
	create(t, deployment("other", 2, map[string]string{"app": "shared", "variant": "b"}))
	// The budget comes after every pod is Ready, so its first status
	// already sees the other Deployment's pods.
	eventually(t, time.Minute, "5 Ready pods", func(context.Context) (bool, string, error) {
		ready := 0
		for _, p := range livePods(t, ns, "app=shared") {
			if podCondition(&p, corev1.PodReady) == corev1.ConditionTrue {
				ready++
			}
		}
		return ready == 5, fmt.Sprintf("%d Ready", ready), nil
	})
	create(t, newBudget(ns, "owned", policyv1alpha1.PodUnavailableBudgetSpec{
		TargetReference: &policyv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "owned"},
		MaxUnavailable:  ptr.To(intstr.FromInt32(1))}))
	waitBudget(t, ns, "owned", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 3, DesiredAvailable: 2, CurrentAvailable: 3, UnavailableAllowed: 1})
}
