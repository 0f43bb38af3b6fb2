package controller

import (
	"reflect"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	"github.com/lifeline-k8s/lifeline/internal/daemonset/planner"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// TestNewPod: a node's pod is the template's, named after the set, owned
// by it, placed by the scheduler through a node-name term in place of the
// template's required node affinity, with the daemon tolerations, its
// revision, generation and state, and the gates its hooks and update
// strategy need.
func TestNewPod(t *testing.T) {
	set := &appsv1beta1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent", UID: "ds-uid",
		Annotations: map[string]string{planner.TemplateGenerationAnnotation: "4"}}}
	set.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{MarkPodNotReady: true, LabelsHandler: map[string]string{"example.com/drain": "true"}}}
	set.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateDaemonSet{Type: appsv1beta1.InplaceRollingUpdateType}
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}}}}}
	pod := NewPod(set, tmpl, "abc123", "node-7", pub.LifecycleStateNormal, time.Now())
	if len(pod.Name) != len("agent-")+5 || pod.Name[:6] != "agent-" {
		t.Errorf("name %q", pod.Name)
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.APIVersion != "apps.kruise.io/v1beta1" || ref.Kind != "DaemonSet" || ref.UID != "ds-uid" {
		t.Errorf("owner %+v", ref)
	}
	if pod.Labels[appsv1.ControllerRevisionHashLabelKey] != "abc123" || pod.Labels[planner.TemplateGenerationLabel] != "4" ||
		pod.Labels[pub.LifecycleStateKey] != "Normal" || pod.Labels["app"] != "agent" {
		t.Errorf("labels %v", pod.Labels)
	}
	if planner.NodeOf(pod) != "node-7" || pod.Spec.NodeName != "" {
		t.Errorf("meant for %q, nodeName %q", planner.NodeOf(pod), pod.Spec.NodeName)
	}
	terms := pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchExpressions) != 0 {
		t.Errorf("node affinity %+v: the node-name term replaces the template's", terms)
	}
	tolerated := map[string]bool{}
	for _, tol := range pod.Spec.Tolerations {
		tolerated[tol.Key] = true
	}
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, corev1.TaintNodeUnschedulable, corev1.TaintNodeDiskPressure} {
		if !tolerated[key] {
			t.Errorf("no toleration of %s: %v", key, pod.Spec.Tolerations)
		}
	}
	if !podfacts.HasReadinessGate(pod, pub.KruisePodReadyConditionType) || !podfacts.HasReadinessGate(pod, pub.InPlaceUpdateReady) {
		t.Errorf("readiness gates %v", pod.Spec.ReadinessGates)
	}
}

// The counts the shell writes at once name int32 fields of the status (a
// misspelt name would pace the count silently), and the budget's expected
// count is among them.
func TestStatusAtOnceNamesCounts(t *testing.T) {
	status := reflect.TypeOf(appsv1beta1.DaemonSetStatus{})
	for _, name := range shellKind.StatusAtOnce {
		if f, ok := status.FieldByName(name); !ok || f.Type.Kind() != reflect.Int32 {
			t.Errorf("StatusAtOnce names %q, no int32 field of DaemonSetStatus", name)
		}
	}
	if !slices.Contains(shellKind.StatusAtOnce, "DesiredNumberScheduled") {
		t.Error("desiredNumberScheduled, a budget's expected count, would wait for the pace")
	}
}
