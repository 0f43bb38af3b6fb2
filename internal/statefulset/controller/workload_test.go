package controller

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
)

func TestNewPodAndClaims(t *testing.T) {
	set := &appsv1beta1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "uid-1"},
		Spec: appsv1beta1.StatefulSetSpec{
			ServiceName:          "db-headless",
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"tier": "disk", "app": "other"}}}},
			Lifecycle:            &pub.Lifecycle{PreDelete: &pub.LifecycleHook{FinalizersHandler: []string{"example.com/drain"}, MarkPodNotReady: true}},
			PersistentVolumeClaimRetentionPolicy: &appsv1beta1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1beta1.DeletePersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1beta1.RetainPersistentVolumeClaimRetentionPolicyType},
		},
	}
	tmpl := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}, Finalizers: []string{"example.com/drain"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "db:1"}},
			Volumes: []corev1.Volume{{Name: "data"}, {Name: "config"}}},
	}
	pod := NewPod(set, tmpl, "db-abc", 4, pub.LifecycleStateNormal, time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	if pod.Name != "db-4" || pod.Labels[PodNameLabel] != "db-4" || pod.Labels[PodIndexLabel] != "4" ||
		pod.Labels[appsv1.ControllerRevisionHashLabelKey] != "db-abc" || pod.Labels[pub.LifecycleStateKey] != "Normal" ||
		pod.Annotations[pub.LifecycleTimestampKey] != "2026-11-26T12:00:00Z" {
		t.Errorf("identity: %s %v %v", pod.Name, pod.Labels, pod.Annotations)
	}
	if pod.Spec.Hostname != "db-4" || pod.Spec.Subdomain != "db-headless" {
		t.Errorf("hostname %q subdomain %q", pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.APIVersion != "apps.kruise.io/v1beta1" || ref.Kind != "StatefulSet" || ref.UID != "uid-1" {
		t.Errorf("owner %+v", ref)
	}
	if len(pod.Spec.Volumes) != 2 || pod.Spec.Volumes[0].PersistentVolumeClaim == nil || pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-db-4" ||
		pod.Spec.Volumes[1].Name != "config" {
		t.Errorf("volumes %+v: the claim template's volume replaces the template's of the same name, others stay after it", pod.Spec.Volumes)
	}
	if len(pod.Spec.ReadinessGates) != 1 || pod.Spec.ReadinessGates[0].ConditionType != pub.KruisePodReadyConditionType {
		t.Errorf("readiness gates %+v, want KruisePodReady (markPodNotReady)", pod.Spec.ReadinessGates)
	}
	pod.Finalizers[0] = "changed"
	if tmpl.Finalizers[0] != "example.com/drain" {
		t.Error("the pod shares the template's finalizers")
	}
	claims := NewClaims(set, 4)
	if len(claims) != 1 || claims[0].Name != "data-db-4" || claims[0].Labels["app"] != "db" || claims[0].Labels["tier"] != "disk" {
		t.Fatalf("claims %+v: the selector's labels win over the template's", claims)
	}
	if refs := claims[0].OwnerReferences; len(refs) != 1 || refs[0].UID != "uid-1" || refs[0].Controller != nil {
		t.Errorf("whenDeleted: Delete makes the set the claim's owner, not its controller: %+v", refs)
	}
}
