package controller

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/internal/cloneset/planner"
	"github.com/lifeline-k8s/lifeline/internal/podlife"
)

var update = flag.Bool("update", false, "rewrite the golden patches in testdata/render")

// renderNow is the planner's clock in every golden case, so timestamps in
// the goldens are fixed.
var renderNow = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

const (
	fromRev = "web-5d8f7c9b6"
	toRev   = "web-7f6c4d8b9"
)

// TestRenderGolden plans each case with the real planner and renders every
// write of every action: the golden files under testdata/render hold the
// exact JSON patches (and the subresource each goes to) the executor sends.
// Run with -update to rewrite them after a deliberate change, and read the
// diff.
func TestRenderGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		snap func() planner.Snapshot
	}{
		{"hold-for-delete-not-ready", holdForDelete},
		{"in-place-update", func() planner.Snapshot { return inPlace(0, nil) }},
		{"in-place-update-grace", func() planner.Snapshot { return inPlace(30, nil) }},
		{"in-place-update-first-batch", func() planner.Snapshot { return inPlace(0, map[string]string{"side": "10"}) }},
		{"in-place-next-batch", nextBatch},
		{"in-place-finish-grace", finishGrace},
		{"in-place-done-lifts-not-ready", updateDone},
		{"newer-revision-rehooks-updated", rehookUpdated},
		{"new-pod-readiness-gates", newPodGates},
		{"normal-once-scheduled", normalOnceScheduled},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan, err := planner.Compute(c.snap())
			if err != nil {
				t.Fatal(err)
			}
			got := renderPlan(t, plan)
			path := filepath.Join("testdata", "render", c.name+".json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("rendered patches differ from %s:\n%s", path, got)
			}
		})
	}
}

// renderedWrite is one rendered write as the golden files hold it.
type renderedWrite struct {
	Action      string          `json:"action"`
	Pod         string          `json:"pod"`
	Subresource string          `json:"subresource,omitempty"`
	Patch       json.RawMessage `json:"patch"`
}

func renderPlan(t *testing.T, plan planner.Plan) []byte {
	t.Helper()
	var out []renderedWrite
	for _, a := range plan.Actions {
		wa, ok := a.(podlife.Writer)
		if !ok || len(wa.PodWrites()) == 0 {
			t.Fatalf("golden cases render writes; the plan has %s", a.Kind())
		}
		for _, w := range wa.PodWrites() {
			p := w.Render(a.Target())
			data, err := p.Data()
			if err != nil {
				t.Fatal(err)
			}
			rw := renderedWrite{Action: a.Kind(), Pod: a.Target().Name, Patch: data}
			if p.Status() {
				rw.Subresource = "status"
			}
			out = append(out, rw)
		}
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(data, '\n')
}

func goldenCloneSet(replicas int32) *appsv1alpha1.CloneSet {
	cs := &appsv1alpha1.CloneSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "cs-uid"}}
	cs.Spec.Replicas = ptr.To(replicas)
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	return cs
}

// goldenPod is a Ready pod of revision rev in state, running the
// containers of tmpl, with the readiness gates listed, each True.
func goldenPod(id, rev string, state pub.LifecycleStateType, tmpl *corev1.PodTemplateSpec, gates ...corev1.PodConditionType) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-" + id, Namespace: "default", UID: k8stypes.UID("uid-" + id),
			CreationTimestamp: metav1.NewTime(renderNow.Add(-2 * time.Hour)),
			Labels: map[string]string{
				"app": "web", appsv1alpha1.CloneSetInstanceID: id,
				appsv1.ControllerRevisionHashLabelKey: rev, pub.LifecycleStateKey: string(state),
			},
			Annotations: map[string]string{pub.LifecycleTimestampKey: renderNow.Add(-time.Hour).Format(time.RFC3339)},
		},
		Spec: *tmpl.Spec.DeepCopy(),
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(renderNow.Add(-time.Hour))}},
		},
	}
	p.Spec.NodeName = "node-0"
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "sha-" + c.Image, Ready: true})
	}
	for _, g := range gates {
		p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: g})
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: g, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(renderNow.Add(-time.Hour))})
	}
	return p
}

func goldenTemplate(main, side string, labels map[string]string, priorities map[string]string) *corev1.PodTemplateSpec {
	container := func(name, image string) corev1.Container {
		c := corev1.Container{Name: name, Image: image}
		if p, ok := priorities[name]; ok {
			c.Env = []corev1.EnvVar{{Name: podlife.ContainerPriorityEnv, Value: p}}
		}
		return c
	}
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{container("main", main), container("side", side)}},
	}
}

func goldenSnapshot(cs *appsv1alpha1.CloneSet, pods ...*corev1.Pod) planner.Snapshot {
	return planner.Snapshot{
		CloneSet: cs, Pods: pods, UpdateRevision: toRev, CurrentRevision: fromRev, Now: renderNow,
		NewInstanceID: func() string { return "new01" },
	}
}

func holdForDelete() planner.Snapshot {
	cs := goldenCloneSet(1)
	cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"example.com/drain": "true"}, MarkPodNotReady: true}}
	tmpl := goldenTemplate("nginx:1", "envoy:1", nil, nil)
	a := goldenPod("a", toRev, pub.LifecycleStateNormal, tmpl, pub.KruisePodReadyConditionType)
	b := goldenPod("b", toRev, pub.LifecycleStateNormal, tmpl, pub.KruisePodReadyConditionType)
	b.Labels["example.com/drain"] = "true"
	a.Labels["example.com/drain"] = "true"
	a.Annotations["controller.kubernetes.io/pod-deletion-cost"] = "-5"
	return goldenSnapshot(cs, a, b)
}

// inPlace is one pod picked for an in-place update from nginx:1/envoy:1 to
// nginx:2/envoy:2, with a template label changed and one dropped.
func inPlace(graceSeconds int32, priorities map[string]string) planner.Snapshot {
	cs := goldenCloneSet(1)
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	if graceSeconds > 0 {
		cs.Spec.UpdateStrategy.InPlaceUpdateStrategy = &pub.InPlaceUpdateStrategy{GracePeriodSeconds: graceSeconds}
	}
	from := goldenTemplate("nginx:1", "envoy:1", map[string]string{"app": "web", "tier": "a", "old": "x"}, priorities)
	to := goldenTemplate("nginx:2", "envoy:2", map[string]string{"app": "web", "tier": "b"}, priorities)
	pod := goldenPod("a", fromRev, pub.LifecycleStateNormal, from, pub.InPlaceUpdateReady)
	pod.Labels["tier"], pod.Labels["old"] = "a", "x"
	s := goldenSnapshot(cs, pod)
	s.Templates = map[string]*corev1.PodTemplateSpec{fromRev: from, toRev: to}
	return s
}

// nextBatch is the pod of in-place-update-first-batch once side runs its
// new image and is Ready.
func nextBatch() planner.Snapshot {
	s := inPlace(0, map[string]string{"side": "10"})
	pod := s.Pods[0]
	pod.Labels[appsv1.ControllerRevisionHashLabelKey] = toRev
	pod.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStateUpdating)
	pod.Spec.Containers[1].Image = "envoy:2"
	pod.Status.ContainerStatuses[1] = corev1.ContainerStatus{Name: "side", Image: "envoy:2", ImageID: "sha-envoy:2", Ready: true}
	pod.Status.Conditions[1].Status = corev1.ConditionFalse
	pod.Annotations[pub.InPlaceUpdateStateKey] = fmt.Sprintf(`{"revision":%q,"updateTimestamp":"2026-11-23T11:59:00Z","lastContainerStatuses":{"side":{"imageID":"sha-envoy:1"}},`+
		`"updateImages":true,"nextContainerImages":{"main":"nginx:2"},"preCheckBeforeNext":{"containersRequiredReady":["side"]},`+
		`"containerBatchesRecord":[{"timestamp":"2026-11-23T11:59:00Z","containers":["side"]}]}`, toRev)
	s.CurrentRevision = toRev
	return s
}

// finishGrace is the pod of in-place-update-grace once its grace period
// is over.
func finishGrace() planner.Snapshot {
	s := inPlace(30, nil)
	pod := s.Pods[0]
	pod.Labels[appsv1.ControllerRevisionHashLabelKey] = toRev
	pod.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStateUpdating)
	pod.Status.Conditions[1].Status = corev1.ConditionFalse
	pod.Annotations[pub.InPlaceUpdateStateKey] = fmt.Sprintf(`{"revision":%q,"updateTimestamp":"2026-11-23T11:59:00Z","lastContainerStatuses":{"main":{"imageID":"sha-nginx:1"},"side":{"imageID":"sha-envoy:1"}},"updateImages":true,"containerBatchesRecord":[{"timestamp":"2026-11-23T11:59:00Z","containers":["main","side"]}]}`, toRev)
	pod.Annotations[pub.InPlaceUpdateGraceKey] = fmt.Sprintf(`{"revision":%q,"containerImages":{"main":"nginx:2","side":"envoy:2"},"graceSeconds":30}`, toRev)
	s.CurrentRevision = toRev
	return s
}

// updateDone is a pod whose in-place update finished while its handlers
// were already back: it goes Updating → Normal, Ready again on both gates.
func updateDone() planner.Snapshot {
	cs := goldenCloneSet(1)
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{"example.com/registered": "true"}, MarkPodNotReady: true}}
	tmpl := goldenTemplate("nginx:2", "envoy:1", nil, nil)
	pod := goldenPod("a", toRev, pub.LifecycleStateUpdating, tmpl, pub.InPlaceUpdateReady, pub.KruisePodReadyConditionType)
	pod.Labels["example.com/registered"] = "true"
	pod.Status.Conditions[1].Status = corev1.ConditionFalse
	pod.Status.Conditions[2].Status = corev1.ConditionFalse
	pod.Status.Conditions[2].Message = `[{"userAgent":"Lifecycle","key":"preUpdateHook"}]`
	pod.Annotations[pub.InPlaceUpdateStateKey] = fmt.Sprintf(`{"revision":%q,"updateTimestamp":"2026-11-23T11:59:00Z","lastContainerStatuses":{"main":{"imageID":"sha-nginx:1"}},"updateImages":true}`, toRev)
	s := goldenSnapshot(cs, pod)
	s.CurrentRevision = toRev
	return s
}

// rehookUpdated is a pod waiting in Updated for its handlers when a newer
// revision arrives: they are put back with the move to PreparingUpdate.
func rehookUpdated() planner.Snapshot {
	cs := goldenCloneSet(1)
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{
		LabelsHandler: map[string]string{"example.com/registered": "true"}, FinalizersHandler: []string{"example.com/deregister"}, MarkPodNotReady: true}}
	from, to := goldenTemplate("nginx:1", "envoy:1", nil, nil), goldenTemplate("nginx:2", "envoy:1", nil, nil)
	pod := goldenPod("a", fromRev, pub.LifecycleStateUpdated, from, pub.KruisePodReadyConditionType)
	pod.Labels["example.com/registered"] = "false"
	s := goldenSnapshot(cs, pod)
	s.Templates = map[string]*corev1.PodTemplateSpec{fromRev: from, toRev: to}
	return s
}

// newPodGates is a pod made Normal in its bind whose readiness-gate
// conditions are not set yet.
func newPodGates() planner.Snapshot {
	cs := goldenCloneSet(1)
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{FinalizersHandler: []string{"example.com/drain"}, MarkPodNotReady: true}}
	pod := goldenPod("a", toRev, pub.LifecycleStateNormal, goldenTemplate("nginx:2", "envoy:1", nil, nil))
	pod.Finalizers = []string{"example.com/drain"}
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}, {ConditionType: pub.KruisePodReadyConditionType}}
	s := goldenSnapshot(cs, pod)
	s.CurrentRevision = toRev
	return s
}

// normalOnceScheduled is a scheduled pod still PreparingNormal (no binding
// webhook): the controller makes it Normal, with its new pod's readiness
// gate condition in the same write.
func normalOnceScheduled() planner.Snapshot {
	s := newPodGates()
	s.CloneSet.Spec.Lifecycle = nil
	pod := s.Pods[0]
	pod.Finalizers = nil
	pod.Labels[pub.LifecycleStateKey] = string(pub.LifecycleStatePreparingNormal)
	pod.Spec.ReadinessGates = pod.Spec.ReadinessGates[:1]
	return s
}
