package webhook

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/podadmission"
)

func TestBindingWebhook(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = appsv1alpha1.AddToScheme(scheme)
	cs := &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "cs-uid"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-a", UID: "pod-uid",
		Labels:          map[string]string{pub.LifecycleStateKey: string(pub.LifecycleStatePreparingNormal)},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cs, appsv1alpha1.GroupVersion.WithKind("CloneSet"))}}}
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	handler := func(objs ...client.Object) *bindingDefaulter {
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
		return &bindingDefaulter{decoder: admission.NewDecoder(scheme), cache: c, now: func() time.Time { return now }}
	}
	request := func(ns string, b *corev1.Binding) admission.Request {
		raw, _ := json.Marshal(b)
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, SubResource: "binding", Namespace: ns, Name: "web-a", Object: runtime.RawExtension{Raw: raw}}}
	}
	// Through the pod admission entry point, as the manager serves it.
	handle := func(h *bindingDefaulter, req admission.Request) admission.Response {
		m := &podadmission.Mutating{}
		m.Register("binding", h, BindingTarget)
		return m.Handle(context.Background(), req)
	}
	binding := &corev1.Binding{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Binding"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-a", UID: "pod-uid"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n"}}

	h := handler(cs.DeepCopy(), pod.DeepCopy())
	stored := &corev1.Pod{}
	_ = h.cache.Get(context.Background(), client.ObjectKeyFromObject(pod), stored)
	resp := handle(h, request("ns", binding))
	if !resp.Allowed || len(resp.Patches) == 0 {
		t.Fatalf("want an allowed, patched bind: %+v", resp)
	}
	ops := map[string]any{}
	for _, p := range resp.Patches {
		ops[p.Path] = p.Value
	}
	want := map[string]any{
		"/metadata/labels":          map[string]any{pub.LifecycleStateKey: "Normal"},
		"/metadata/annotations":     map[string]any{pub.LifecycleTimestampKey: now.Format(time.RFC3339)},
		"/metadata/resourceVersion": stored.ResourceVersion,
	}
	for path, v := range want {
		got, _ := json.Marshal(ops[path])
		exp, _ := json.Marshal(v)
		if string(got) != string(exp) {
			t.Errorf("patch at %s = %s, want %s (all: %+v)", path, got, exp, resp.Patches)
		}
	}

	// A pod OpenKruise v1.9 made names its CloneSet by v1beta1.
	migrated := pod.DeepCopy()
	migrated.OwnerReferences[0].APIVersion = "apps.kruise.io/v1beta1"
	if resp := handle(handler(cs.DeepCopy(), migrated), request("ns", binding)); len(resp.Patches) == 0 {
		t.Errorf("a pod owned through apps.kruise.io/v1beta1 was left alone: %+v", resp)
	}

	withHook := cs.DeepCopy()
	withHook.Spec.Lifecycle = &pub.Lifecycle{PreNormal: &pub.LifecycleHook{LabelsHandler: map[string]string{"online": "true"}}}
	for name, tc := range map[string]struct {
		h  *bindingDefaulter
		ns string
		b  *corev1.Binding
	}{
		"a preNormal hook holds the pod": {handler(withHook, pod.DeepCopy()), "ns", binding},
		"the pod is unknown":             {handler(cs.DeepCopy()), "ns", binding},
		"another pod of that name":       {handler(cs.DeepCopy(), pod.DeepCopy()), "ns", func() *corev1.Binding { b := binding.DeepCopy(); b.UID = "other"; return b }()},
		"a system namespace":             {handler(), "kube-system", binding},
		"a Deployment's pod": {handler(cs.DeepCopy(), func() *corev1.Pod {
			p := pod.DeepCopy()
			p.OwnerReferences[0].APIVersion, p.OwnerReferences[0].Kind = "apps/v1", "ReplicaSet"
			return p
		}()), "ns", binding},
	} {
		if resp := handle(tc.h, request(tc.ns, tc.b)); !resp.Allowed || len(resp.Patches) != 0 {
			t.Errorf("%s: %+v, want allowed unchanged", name, resp)
		}
	}
}
