// Offline tests of Lifeline's kwok stage set (hack/cluster/stages): they run
// the stages through kwok's own matcher and template renderer, exactly as the
// kwok binary does, against pods in memory. The live half of these tests is
// test/e2e/stages_test.go.
package kwokstages_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/utils/gotpl"
	"sigs.k8s.io/kwok/pkg/utils/lifecycle"
)

const stagesDir = "../../cluster/stages"

// renderer stands in for the functions the kwok pod controller adds.
var renderer = gotpl.NewRenderer(gotpl.FuncMap{
	"NodeIP":     func() string { return "127.0.0.1" },
	"NodeName":   func() string { return "kwok-node-0" },
	"NodePort":   func() int { return 10247 },
	"NodeIPWith": func(string) string { return "127.0.0.1" },
	"PodIPWith": func(_ string, hostNetwork bool, _, _, _ string) string {
		if hostNetwork {
			return "127.0.0.1"
		}
		return "10.244.0.7"
	},
})

// loadStages is the stage set for objects of kind (Pod or Node), as kwok
// groups the stages by the kind they act on.
func loadStages(t *testing.T, kind string) lifecycle.Lifecycle {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(stagesDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no stage files in %s: %v", stagesDir, err)
	}
	var stages []*internalversion.Stage
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		stage, err := config.UnmarshalWithType[*internalversion.Stage](data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if stage.Spec.ResourceRef.Kind == kind {
			stages = append(stages, stage)
		}
	}
	lc, err := lifecycle.NewLifecycle(stages)
	if err != nil {
		t.Fatal(err)
	}
	return lc
}

// matching returns the names of the stages that match obj, sorted.
func matching(t *testing.T, lc lifecycle.Lifecycle, obj metav1.Object) []string {
	t.Helper()
	stages, err := lc.ListAllPossible(context.Background(), event(obj))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range stages {
		names = append(names, s.Name())
	}
	slices.Sort(names)
	return names
}

func event(obj metav1.Object) *lifecycle.Event {
	return &lifecycle.Event{Labels: obj.GetLabels(), Annotations: obj.GetAnnotations(), Data: obj}
}

// doSteps runs a stage's steps as kwok's controllers do, recording the
// patches it would send and whether it would delete the object.
func doSteps(stage *lifecycle.Stage, obj metav1.Object) (patches []*lifecycle.Patch, deleted bool, err error) {
	_, err = stage.DoSteps(0, obj.GetFinalizers(), obj, renderer,
		func(*internalversion.StageEvent) error { return nil },
		func() error { deleted = true; return nil },
		func(p *lifecycle.Patch) error { patches = append(patches, p); return nil },
		func(a *lifecycle.Apply) error { return fmt.Errorf("unexpected apply of %s", a.Data) })
	return patches, deleted, err
}

// play applies the one stage that matches obj, as kwok would, and returns the
// result; it fails unless exactly the named stage matches.
func play[T metav1.Object](t *testing.T, lc lifecycle.Lifecycle, obj T, want string) T {
	t.Helper()
	if got := matching(t, lc, obj); !slices.Equal(got, []string{want}) {
		t.Fatalf("stages matching: got %v, want [%s]", got, want)
	}
	stage, err := lc.Match(context.Background(), event(obj))
	if err != nil {
		t.Fatal(err)
	}
	patches, deleted, err := doSteps(stage, obj)
	if err != nil {
		t.Fatalf("rendering %s: %v", want, err)
	}
	if deleted {
		t.Fatalf("%s deletes the object", want)
	}
	original, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range patches {
		if p.Type != types.StrategicMergePatchType || p.Subresource != "status" {
			t.Fatalf("%s: patch %s of %q, want a strategic merge patch of status", want, p.Type, p.Subresource)
		}
		original, err = strategicpatch.StrategicMergePatch(original, p.Data, obj)
		if err != nil {
			t.Fatalf("%s: applying %s: %v", want, p.Data, err)
		}
	}
	out := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(T)
	if err := json.Unmarshal(original, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func scheduledPod(gates ...corev1.PodConditionType) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: "2f9e4b7c-0000-4000-8000-000000000001"},
		Spec: corev1.PodSpec{
			NodeName:       "kwok-node-0",
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1.36"}},
			Containers: []corev1.Container{
				{Name: "main", Image: "nginx:1.27"},
				{Name: "sidecar", Image: "envoy:1.30"},
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}},
	}
	for _, g := range gates {
		pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: g})
	}
	return pod
}

func condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func setCondition(pod *corev1.Pod, t corev1.PodConditionType, s corev1.ConditionStatus) {
	if c := condition(pod, t); c != nil {
		c.Status = s
		return
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: t, Status: s})
}

func assertReady(t *testing.T, pod *corev1.Pod, want corev1.ConditionStatus) {
	t.Helper()
	c := condition(pod, corev1.PodReady)
	if c == nil || c.Status != want {
		t.Fatalf("Ready = %+v, want %s", c, want)
	}
}

func TestPodWithoutGatesStartsReady(t *testing.T) {
	lc := loadStages(t, "Pod")
	pod := play(t, lc, scheduledPod(), "pod-start")

	if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" || pod.Status.HostIP != "127.0.0.1" || pod.Status.StartTime == nil {
		t.Fatalf("status after start: %+v", pod.Status)
	}
	assertReady(t, pod, corev1.ConditionTrue)
	if c := condition(pod, corev1.ContainersReady); c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("ContainersReady = %+v", c)
	}
	if len(pod.Status.ContainerStatuses) != 2 {
		t.Fatalf("container statuses: %+v", pod.Status.ContainerStatuses)
	}
	for i, cs := range pod.Status.ContainerStatuses {
		if cs.Name != pod.Spec.Containers[i].Name || cs.Image != pod.Spec.Containers[i].Image || !cs.Ready ||
			cs.State.Running == nil || cs.RestartCount != 0 || !strings.Contains(cs.ImageID, "@sha256:") || cs.ContainerID == "" {
			t.Fatalf("container status %d: %+v", i, cs)
		}
	}
	if got := pod.Status.InitContainerStatuses; len(got) != 1 || got[0].State.Terminated == nil || got[0].State.Terminated.ExitCode != 0 {
		t.Fatalf("init container statuses: %+v", got)
	}
	// A started pod is stable: no stage applies again.
	if got := matching(t, lc, pod); len(got) != 0 {
		t.Fatalf("stages matching a started pod: %v", got)
	}
}

func TestReadinessGatesHoldReadyUntilTheirConditionsAreTrue(t *testing.T) {
	lc := loadStages(t, "Pod")
	pod := play(t, lc, scheduledPod("InPlaceUpdateReady", "KruisePodReady"), "pod-start")

	assertReady(t, pod, corev1.ConditionFalse)
	if c := condition(pod, corev1.PodReady); c.Reason != "ReadinessGatesNotReady" || !strings.Contains(c.Message, `"InPlaceUpdateReady"`) {
		t.Fatalf("Ready reason/message: %q %q", c.Reason, c.Message)
	}
	for _, gate := range []corev1.PodConditionType{"InPlaceUpdateReady", "KruisePodReady"} {
		if condition(pod, gate) != nil {
			t.Fatalf("the stages wrote the gate condition %s; only controllers may", gate)
		}
	}
	if got := matching(t, lc, pod); len(got) != 0 {
		t.Fatalf("stages matching while gates are unset: %v", got)
	}

	// One gate True is not enough.
	setCondition(pod, "InPlaceUpdateReady", corev1.ConditionTrue)
	if got := matching(t, lc, pod); len(got) != 0 {
		t.Fatalf("stages matching with one gate of two True: %v", got)
	}
	// Both True: Ready follows, and the reason of the False state goes.
	setCondition(pod, "KruisePodReady", corev1.ConditionTrue)
	pod = play(t, lc, pod, "pod-readiness")
	assertReady(t, pod, corev1.ConditionTrue)
	if c := condition(pod, corev1.PodReady); c.Reason != "" || c.Message != "" {
		t.Fatalf("Ready keeps a stale reason: %q %q", c.Reason, c.Message)
	}
	if got := matching(t, lc, pod); len(got) != 0 {
		t.Fatalf("stages matching a Ready pod: %v", got)
	}

	// A controller turning a gate False makes the pod NotReady again.
	setCondition(pod, "KruisePodReady", corev1.ConditionFalse)
	pod = play(t, lc, pod, "pod-readiness")
	assertReady(t, pod, corev1.ConditionFalse)
	if c := condition(pod, corev1.PodReady); !strings.Contains(c.Message, `"KruisePodReady"`) {
		t.Fatalf("Ready message names the wrong gate: %q", c.Message)
	}
	// A gate condition with no status at all (OpenKruise writes one on an
	// edge path) counts as not True rather than breaking the template.
	condition(pod, "KruisePodReady").Status = ""
	if got := matching(t, lc, pod); len(got) != 0 {
		t.Fatalf("stages matching with an empty gate status: %v", got)
	}
}

func TestInPlaceImageChangeRestartsOnlyThatContainer(t *testing.T) {
	lc := loadStages(t, "Pod")
	pod := play(t, lc, scheduledPod(), "pod-start")
	before := pod.Status.ContainerStatuses

	pod.Spec.Containers[0].Image = "nginx:1.28"
	pod = play(t, lc, pod, "pod-inplace-update")

	main, sidecar := pod.Status.ContainerStatuses[0], pod.Status.ContainerStatuses[1]
	if main.Image != "nginx:1.28" || main.ImageID == before[0].ImageID || main.RestartCount != 1 ||
		main.ContainerID == before[0].ContainerID || !main.Ready || main.State.Running == nil {
		t.Fatalf("updated container status: %+v", main)
	}
	if main.LastTerminationState.Terminated == nil || main.LastTerminationState.Terminated.ContainerID != before[0].ContainerID {
		t.Fatalf("last state of the updated container: %+v", main.LastTerminationState)
	}
	if !equalJSON(sidecar, before[1]) {
		t.Fatalf("untouched container changed:\n%+v\n%+v", sidecar, before[1])
	}
	if got := matching(t, lc, pod); len(got) != 0 {
		t.Fatalf("stages matching after the restart: %v", got)
	}

	// A second change restarts it again, counting up.
	pod.Spec.Containers[0].Image = "nginx:1.29"
	pod = play(t, lc, pod, "pod-inplace-update")
	if got := pod.Status.ContainerStatuses[0]; got.RestartCount != 2 || got.Image != "nginx:1.29" {
		t.Fatalf("second update: %+v", got)
	}
}

func TestDeletingPodGoesAwayKeepingFinalizers(t *testing.T) {
	lc := loadStages(t, "Pod")
	pod := play(t, lc, scheduledPod(), "pod-start")
	now := metav1.Now()
	pod.DeletionTimestamp = &now
	pod.Finalizers = []string{"example.com/hold"}

	if got := matching(t, lc, pod); !slices.Equal(got, []string{"pod-delete"}) {
		t.Fatalf("stages matching a deleting pod: %v", got)
	}
	stage, err := lc.Match(context.Background(), event(pod))
	if err != nil {
		t.Fatal(err)
	}
	patches, deleted, err := doSteps(stage, pod)
	if err != nil || !deleted {
		t.Fatalf("pod-delete does not delete: %v", err)
	}
	if len(patches) != 0 {
		t.Fatalf("pod-delete patches the pod (its finalizers?): %s", patches[0].Data)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func nodeCondition(node *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}

// kwok v0.8 has no node stages of its own once a config names any stage: a
// registered node must become Ready from Lifeline's, then only heartbeat.
func TestRegisteredNodeBecomesReadyThenOnlyHeartbeats(t *testing.T) {
	lc := loadStages(t, "Node")
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "kwok-node-0", Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"}}}
	node = play(t, lc, node, "node-initialize")

	if c := nodeCondition(node, corev1.NodeReady); c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("Ready after initialize = %+v", c)
	}
	for _, ct := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeNetworkUnavailable} {
		if c := nodeCondition(node, ct); c == nil || c.Status != corev1.ConditionFalse {
			t.Fatalf("%s after initialize = %+v", ct, c)
		}
	}
	if node.Status.Phase != corev1.NodeRunning || len(node.Status.Addresses) != 2 || node.Status.Allocatable.Pods().IsZero() || node.Status.Capacity.Cpu().IsZero() {
		t.Fatalf("status after initialize: %+v", node.Status)
	}
	was := nodeCondition(node, corev1.NodeReady).LastHeartbeatTime
	node = play(t, lc, node, "node-heartbeat")
	if c := nodeCondition(node, corev1.NodeReady); c.Status != corev1.ConditionTrue || c.LastHeartbeatTime.Before(&was) {
		t.Fatalf("Ready after heartbeat = %+v (heartbeat before %s)", c, was)
	}
}
