package webhook

import (
	"context"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/pps/workloads"
)

func injector(objs ...client.Object) *Injector {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = appsv1alpha1.AddToScheme(scheme)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	return &Injector{States: c, Custom: &workloads.Whitelist{Reader: c}, Recorder: events.NewFakeRecorder(10)}
}

func statefulPod(name, owner string) []byte {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name, OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "apps/v1", Kind: "StatefulSet", Name: owner, UID: "uid", Controller: ptr.To(true)}}}}
	raw, _ := json.Marshal(pod)
	return raw
}

func recordedState(name string, deleting bool) *appsv1alpha1.PersistentPodState {
	pps := &appsv1alpha1.PersistentPodState{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name},
		Spec: appsv1alpha1.PersistentPodStateSpec{
			TargetReference:            appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"},
			RequiredPersistentTopology: &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{"zone"}},
		},
		Status: appsv1alpha1.PersistentPodStateStatus{PodStates: map[string]appsv1alpha1.PodState{
			"db-0": {NodeName: "n1", NodeTopologyLabels: map[string]string{"zone": "a"}},
		}},
	}
	if deleting {
		pps.DeletionTimestamp, pps.Finalizers = ptr.To(metav1.Now()), []string{"test"}
	}
	return pps
}

func mutate(t *testing.T, in *Injector, raw []byte) *corev1.Pod {
	t.Helper()
	out, err := in.Mutate(context.Background(), admission.Request{}, raw)
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(out, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

func TestInjectorSteersARecordedPodBack(t *testing.T) {
	pod := mutate(t, injector(recordedState("db", false)), statefulPod("db-0", "db"))
	if pod.Spec.NodeSelector["zone"] != "a" || pod.Annotations[appsv1alpha1.InjectedPersistentPodStateKey] != "db" {
		t.Fatalf("nodeSelector %v, annotations %v: want zone=a and the injected mark", pod.Spec.NodeSelector, pod.Annotations)
	}
}

func TestInjectorLeavesOtherPodsAlone(t *testing.T) {
	cases := map[string]struct {
		in  *Injector
		raw []byte
	}{
		"no record for the name":             {injector(recordedState("db", false)), statefulPod("db-1", "db")},
		"another StatefulSet":                {injector(recordedState("db", false)), statefulPod("db-0", "web")},
		"a PersistentPodState being deleted": {injector(recordedState("db", true)), statefulPod("db-0", "db")},
		"no PersistentPodState":              {injector(), statefulPod("db-0", "db")},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := c.in.Mutate(context.Background(), admission.Request{}, c.raw)
			if err != nil || string(out) != string(c.raw) {
				t.Fatalf("the pod was changed (%v): %s", err, out)
			}
		})
	}
}
