package webhook

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
)

func TestGateOpensInTheKubeletsReport(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	m := &podadmission.Mutating{}
	m.Register("gate", &gateMutator{decoder: admission.NewDecoder(scheme), now: func() time.Time { return now }}, GateStatusTarget)
	cs := &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "cs-uid"}}
	pod := func(mutate ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-a",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cs, appsv1alpha1.GroupVersion.WithKind("CloneSet"))}},
			Spec:   corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}}}
		for _, f := range mutate {
			f(p)
		}
		return p
	}
	review := func(ns string, p *corev1.Pod) admission.Response {
		raw, _ := json.Marshal(p)
		return m.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Update, SubResource: "status", Namespace: ns, Name: p.Name, Object: runtime.RawExtension{Raw: raw}}})
	}

	resp := review("ns", pod())
	if !resp.Allowed || len(resp.Patches) != 1 {
		t.Fatalf("a CloneSet pod's first report: %+v, want one patch adding the condition", resp)
	}
	raw, _ := json.Marshal(resp.Patches[0].Value)
	var added corev1.PodCondition
	_ = json.Unmarshal(raw, &added)
	want := corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}
	if resp.Patches[0].Operation != "add" || resp.Patches[0].Path != "/status/conditions/1" || !equality.Semantic.DeepEqual(added, want) {
		t.Errorf("patch = %s %s %+v, want add /status/conditions/1 %+v", resp.Patches[0].Operation, resp.Patches[0].Path, added, want)
	}

	asts := pod(func(p *corev1.Pod) {
		p.OwnerReferences[0].Kind, p.OwnerReferences[0].APIVersion = "StatefulSet", "apps.kruise.io/v1beta1"
	})
	if resp := review("ns", asts); !resp.Allowed || len(resp.Patches) != 1 {
		t.Errorf("an Advanced StatefulSet pod's first report: %+v, want the condition added", resp)
	}
	for name, p := range map[string]*corev1.Pod{
		"a native StatefulSet's pod": pod(func(p *corev1.Pod) {
			p.OwnerReferences[0].Kind, p.OwnerReferences[0].APIVersion = "StatefulSet", "apps/v1"
		}),
		"condition False (an in-place update under way)": pod(func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse})
		}),
		"no gate":           pod(func(p *corev1.Pod) { p.Spec.ReadinessGates = nil }),
		"another gate only": pod(func(p *corev1.Pod) { p.Spec.ReadinessGates[0].ConditionType = "example.com/ready" }),
		"not a CloneSet's pod": pod(func(p *corev1.Pod) {
			p.OwnerReferences[0].Kind = "ReplicaSet"
			p.OwnerReferences[0].APIVersion = "apps/v1"
		}),
		"not the controller":    pod(func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil }),
		"another group's Clone": pod(func(p *corev1.Pod) { p.OwnerReferences[0].APIVersion = "example.com/v1" }),
	} {
		if resp := review("ns", p); !resp.Allowed || len(resp.Patches) != 0 {
			t.Errorf("%s: %+v, want the report unchanged", name, resp)
		}
	}
	if resp := review("kube-system", pod()); !resp.Allowed || len(resp.Patches) != 0 {
		t.Errorf("system namespace: %+v, want the report unchanged", resp)
	}
}
