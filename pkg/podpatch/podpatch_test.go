package podpatch

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
)

var (
	t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Minute)
)

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-a", UID: "uid-a", ResourceVersion: "7",
			Labels: map[string]string{pub.LifecycleStateKey: "Normal", "app": "web"},
		},
		Spec: corev1.PodSpec{
			Containers:     []corev1.Container{{Name: "app", Image: "nginx:1.27"}, {Name: "sidecar", Image: "envoy:1"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}, {ConditionType: pub.KruisePodReadyConditionType}},
		},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
			{Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
		}},
	}
}

// apply applies p to pod the way the API server applies a JSON patch
// (the same library), and decodes the result.
func apply(t *testing.T, p *Patch, pod *corev1.Pod) (*corev1.Pod, error) {
	t.Helper()
	data, err := p.Data()
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(data)
	if err != nil {
		t.Fatalf("undecodable patch %s: %v", data, err)
	}
	doc, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	out, err := patch.Apply(doc)
	if err != nil {
		return nil, err
	}
	patched := &corev1.Pod{}
	if err := json.Unmarshal(out, patched); err != nil {
		t.Fatal(err)
	}
	return patched, nil
}

func condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func TestPodPatchChangesWhatItSays(t *testing.T) {
	pod := testPod()
	p := New(pod, true)
	p.SetLabels(map[string]string{pub.LifecycleStateKey: "Updating", "version": "2"}, "app")
	p.SetAnnotation("a", "1")
	p.SetAnnotation("b/c~d", "2")
	p.SetImage(1, "sidecar", "envoy:2")
	p.AddFinalizers([]string{"example.com/drain"})
	p.SetCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse, Reason: "StartInPlaceUpdate", LastTransitionTime: metav1.NewTime(t1)})
	p.SetCondition(corev1.PodCondition{Type: "Other", Status: corev1.ConditionTrue})
	if !p.status {
		t.Error("a patch that sets conditions must go to pods/status")
	}
	got, err := apply(t, p, pod)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{pub.LifecycleStateKey: "Updating", "version": "2"}
	if len(got.Labels) != len(want) || got.Labels[pub.LifecycleStateKey] != "Updating" || got.Labels["version"] != "2" {
		t.Errorf("labels = %v, want %v", got.Labels, want)
	}
	if got.Annotations["a"] != "1" || got.Annotations["b/c~d"] != "2" {
		t.Errorf("annotations = %v", got.Annotations)
	}
	if got.Spec.Containers[0].Image != "nginx:1.27" || got.Spec.Containers[1].Image != "envoy:2" {
		t.Errorf("containers = %+v", got.Spec.Containers)
	}
	if len(got.Finalizers) != 1 || got.Finalizers[0] != "example.com/drain" {
		t.Errorf("finalizers = %v", got.Finalizers)
	}
	if c := condition(got, pub.InPlaceUpdateReady); c == nil || c.Status != corev1.ConditionFalse || !c.LastTransitionTime.Time.Equal(t1) {
		t.Errorf("InPlaceUpdateReady = %+v", c)
	}
	if c := condition(got, "Other"); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("an absent condition is not appended: %+v", got.Status.Conditions)
	}
	if len(got.Status.Conditions) != 4 || got.Status.Conditions[0].Type != corev1.PodReady {
		t.Errorf("other conditions disturbed: %+v", got.Status.Conditions)
	}
}

func TestPodPatchKeepsTransitionTimeOfAnUnchangedStatus(t *testing.T) {
	pod := testPod()
	p := New(pod, false)
	p.SetCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t1)})
	got, err := apply(t, p, pod)
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(got, pub.InPlaceUpdateReady); !c.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("lastTransitionTime = %v, want the old %v", c.LastTransitionTime, t0)
	}
}

func TestPodPatchOnABarePod(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", UID: "uid-b"}}
	p := New(pod, true)
	p.SetLabels(map[string]string{pub.LifecycleStateKey: "Normal"})
	p.SetAnnotation(pub.LifecycleTimestampKey, "now")
	p.SetAnnotation("second", "x")
	p.SetCondition(corev1.PodCondition{Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionTrue})
	p.SetCondition(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue})
	got, err := apply(t, p, pod)
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels[pub.LifecycleStateKey] != "Normal" || got.Annotations["second"] != "x" || len(got.Status.Conditions) != 2 {
		t.Errorf("got %+v", got)
	}
}

// What the patch must refuse (the decision rested on it) and what it must
// ride over (the kubelet's own writes, other annotations).
func TestPodPatchGuards(t *testing.T) {
	build := func(pod *corev1.Pod) *Patch {
		p := New(pod, true)
		p.SetLabels(map[string]string{pub.LifecycleStateKey: "PreparingUpdate"})
		// markPodNotReady's condition as the CloneSet controller writes it.
		p.SetCondition(corev1.PodCondition{Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionFalse,
			Message: `[{"userAgent":"Lifecycle","key":"preUpdateHook"}]`, LastTransitionTime: metav1.NewTime(t1)})
		return p
	}
	for _, c := range []struct {
		name    string
		change  func(*corev1.Pod)
		refused bool
	}{
		{"unchanged", func(*corev1.Pod) {}, false},
		{"the kubelet wrote Ready and container statuses", func(p *corev1.Pod) {
			p.ResourceVersion = "8"
			p.Status.Conditions[0].Status = corev1.ConditionFalse
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", RestartCount: 1}}
		}, false},
		{"someone annotated the pod", func(p *corev1.Pod) { p.Annotations = map[string]string{"note": "x"} }, false},
		{"an operator added a hook label", func(p *corev1.Pod) { p.Labels["example.com/hold"] = "true" }, true},
		{"another controller moved the state", func(p *corev1.Pod) { p.Labels[pub.LifecycleStateKey] = "PreparingDelete" }, true},
		{"an operator added a hook finalizer", func(p *corev1.Pod) { p.Finalizers = []string{"example.com/hold"} }, true},
		{"another writer holds the pod NotReady", func(p *corev1.Pod) {
			p.Status.Conditions[2].Status = corev1.ConditionFalse
			p.Status.Conditions[2].Message = `[{"userAgent":"ContainerRecreateRequest","key":"x"}]`
		}, true},
		{"the pod was recreated under the same name", func(p *corev1.Pod) { p.UID = "uid-new" }, true},
		{"the conditions were reordered", func(p *corev1.Pod) {
			c := p.Status.Conditions
			c[0], c[2] = c[2], c[0]
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			planned := testPod()
			p := build(planned)
			live := testPod()
			c.change(live)
			got, err := apply(t, p, live)
			if c.refused {
				if err == nil {
					t.Fatalf("applied to a pod that changed what the decision rested on: %+v", got.ObjectMeta)
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got.Labels[pub.LifecycleStateKey] != "PreparingUpdate" {
				t.Errorf("state = %q", got.Labels[pub.LifecycleStateKey])
			}
			if kc := condition(got, pub.KruisePodReadyConditionType); kc.Status != corev1.ConditionFalse || kc.Message != `[{"userAgent":"Lifecycle","key":"preUpdateHook"}]` {
				t.Errorf("KruisePodReady = %+v", kc)
			}
		})
	}
}

func TestIsStale(t *testing.T) {
	// The API server answers a JSON patch it cannot apply exactly so
	// (k8s.io/apiserver's patcher); the test in test/integration checks it
	// against a real one.
	refused := apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "",
		"testing value /metadata/labels failed: test failed", 0, false)
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "web-a", field.ErrorList{field.Invalid(field.NewPath("metadata", "labels"), "x", "bad")})
	for _, c := range []struct {
		err  error
		want bool
	}{
		{refused, true},
		{apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web-a", errors.New("changed")), true},
		{invalid, false},
		{apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "web-a"), false},
		{errors.New("connection refused"), false},
	} {
		if got := IsStale(c.err); got != c.want {
			t.Errorf("IsStale(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
