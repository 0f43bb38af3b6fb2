package controller

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/revision"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

func TestNewPodAndPVCs(t *testing.T) {
	cs := &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "cs-uid"}}
	cs.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	cs.Spec.Template = corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "b"}, Finalizers: []string{"example.com/f"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "nginx"}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
	cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"disk": "ssd"}},
		Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}}
	cr, err := revision.New(cs, ptr.To[int32](0), 1)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	pod, err := newPod(cs, cr, "x7k2p", pub.LifecycleStatePreparingNormal, now)
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "web-x7k2p" || pod.Namespace != "ns" || metav1.GetControllerOf(pod).UID != "cs-uid" {
		t.Errorf("identity: %s/%s owner %+v", pod.Namespace, pod.Name, metav1.GetControllerOf(pod))
	}
	want := map[string]string{
		"app":                                  "web",
		appsv1alpha1.CloneSetInstanceID:        "x7k2p",
		appsv1.ControllerRevisionHashLabelKey:  cr.Name,
		appsv1.DefaultDeploymentUniqueLabelKey: podfacts.ShortHash(cr.Name),
		pub.LifecycleStateKey:                  "PreparingNormal",
	}
	for k, v := range want {
		if pod.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, pod.Labels[k], v)
		}
	}
	if pod.Annotations["a"] != "b" || pod.Annotations[pub.LifecycleTimestampKey] != "2026-11-21T12:00:00Z" || pod.Finalizers[0] != "example.com/f" {
		t.Errorf("annotations %v finalizers %v", pod.Annotations, pod.Finalizers)
	}
	// The claim replaces the template volume of the same name; other
	// volumes follow.
	if len(pod.Spec.Volumes) != 2 || pod.Spec.Volumes[0].PersistentVolumeClaim == nil ||
		pod.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data-web-x7k2p" || pod.Spec.Volumes[1].Name != "cache" {
		t.Errorf("volumes: %+v", pod.Spec.Volumes)
	}

	if len(pod.Spec.ReadinessGates) != 0 {
		t.Errorf("readiness gates without markPodNotReady: %v", pod.Spec.ReadinessGates)
	}
	cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{MarkPodNotReady: true}}
	if gated, _ := newPod(cs, cr, "x7k2p", pub.LifecycleStateNormal, now); len(gated.Spec.ReadinessGates) != 1 ||
		gated.Spec.ReadinessGates[0].ConditionType != pub.KruisePodReadyConditionType {
		t.Errorf("readiness gates with markPodNotReady: %v", gated.Spec.ReadinessGates)
	}
	// Declared in the template: kept once, not added again.
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}, {ConditionType: pub.KruisePodReadyConditionType}}
	declared, err := revision.New(cs, ptr.To[int32](0), 1)
	if err != nil {
		t.Fatal(err)
	}
	if gated, _ := newPod(cs, declared, "x7k2p", pub.LifecycleStateNormal, now); len(gated.Spec.ReadinessGates) != 2 {
		t.Errorf("readiness gates declared by the template: %v", gated.Spec.ReadinessGates)
	}
	cs.Spec.Template.Spec.ReadinessGates = nil
	cs.Spec.UpdateStrategy.Type = ""

	pvcs := newPVCs(cs, "x7k2p")
	if len(pvcs) != 1 || pvcs[0].Name != "data-web-x7k2p" || pvcs[0].Labels["disk"] != "ssd" || pvcs[0].Labels["app"] != "web" ||
		pvcs[0].Labels[appsv1alpha1.CloneSetInstanceID] != "x7k2p" || metav1.GetControllerOf(pvcs[0]).UID != "cs-uid" {
		t.Errorf("pvc: %+v", pvcs)
	}
	if cs.Spec.VolumeClaimTemplates[0].Labels[appsv1alpha1.CloneSetInstanceID] != "" {
		t.Error("building a PVC changed the template")
	}
}
