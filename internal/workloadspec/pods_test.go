package workloadspec

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

var owner = &metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "web-uid"}

// A new pod is the template's, owned by its workload, with the kind's
// labels over the template's, its starting state, and each gate once, in
// the order given, after the template's own; the template is not changed.
func TestNewPodBuild(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "rev": "template's"}, Annotations: map[string]string{"a": "1"}, Finalizers: []string{"example.com/f"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}},
	}
	before := tmpl.DeepCopy()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	pod := NewPod{Owner: owner, Kind: schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "CloneSet"},
		Name: "web-abcde", GenerateName: "web-", Labels: map[string]string{"rev": "r2"}, State: pub.LifecycleStatePreparingNormal, Now: now,
		Gates: []corev1.PodConditionType{pub.KruisePodReadyConditionType, pub.InPlaceUpdateReady}}.Build(tmpl)

	if pod.Namespace != "ns" || pod.Name != "web-abcde" || pod.GenerateName != "web-" {
		t.Errorf("named %s/%s (%s)", pod.Namespace, pod.Name, pod.GenerateName)
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != "web-uid" || ref.Kind != "CloneSet" || ref.APIVersion != "apps.kruise.io/v1beta1" {
		t.Errorf("controller %+v", ref)
	}
	wantLabels := map[string]string{"app": "web", "rev": "r2", pub.LifecycleStateKey: "PreparingNormal"}
	if !reflect.DeepEqual(pod.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", pod.Labels, wantLabels)
	}
	if pod.Annotations["a"] != "1" || pod.Annotations[pub.LifecycleTimestampKey] != "2026-11-28T12:00:00Z" {
		t.Errorf("annotations %v", pod.Annotations)
	}
	var gates []corev1.PodConditionType
	for _, g := range pod.Spec.ReadinessGates {
		gates = append(gates, g.ConditionType)
	}
	if want := []corev1.PodConditionType{pub.InPlaceUpdateReady, pub.KruisePodReadyConditionType}; !reflect.DeepEqual(gates, want) {
		t.Errorf("gates %v, want %v", gates, want)
	}
	pod.Finalizers[0], pod.Spec.Containers[0].Image = "changed", "changed"
	if !reflect.DeepEqual(tmpl, before) {
		t.Error("building a pod changed its template")
	}
}

// A new pod's claims: named by the kind, labelled with the template's,
// the selector's and the kind's labels, owned when an owner is given; the
// templates are not changed.
func TestNewClaims(t *testing.T) {
	templates := []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "data", Labels: map[string]string{"tier": "db"}, ResourceVersion: "7", UID: "t-uid"}}}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	name := func(vct string) string { return vct + "-web-0" }
	ref := metav1.NewControllerRef(owner, schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "StatefulSet"})

	claims := NewClaims("ns", templates, selector, name, map[string]string{"id": "0"}, ref)
	if len(claims) != 1 {
		t.Fatalf("%d claims", len(claims))
	}
	c := claims[0]
	if c.Name != "data-web-0" || c.Namespace != "ns" || c.ResourceVersion != "" || c.UID != "" {
		t.Errorf("claim %s/%s rv %q uid %q", c.Namespace, c.Name, c.ResourceVersion, c.UID)
	}
	if want := map[string]string{"tier": "db", "app": "web", "id": "0"}; !reflect.DeepEqual(c.Labels, want) {
		t.Errorf("labels %v, want %v", c.Labels, want)
	}
	if len(c.OwnerReferences) != 1 || c.OwnerReferences[0].UID != "web-uid" {
		t.Errorf("owners %+v", c.OwnerReferences)
	}
	if templates[0].Name != "data" || len(templates[0].Labels) != 1 {
		t.Errorf("template changed: %+v", templates[0].ObjectMeta)
	}
	if unowned := NewClaims("ns", templates, nil, name, nil, nil); len(unowned[0].OwnerReferences) != 0 {
		t.Errorf("owners without an owner: %+v", unowned[0].OwnerReferences)
	}
}
