package nodeagent

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// agentPod is a pod whose container app reads label color (now green)
// from its env and runs container a; st is its in-place record, if any.
func agentPod(state pub.LifecycleStateType, st *pub.InPlaceUpdateState, annotations map[string]string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"color": "green", pub.LifecycleStateKey: string(state)}, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:v2", Env: []corev1.EnvVar{
			{Name: "COLOR", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['color']"}}}}}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "app", ContainerID: "containerd://a", ImageID: "sha256:one", RestartCount: 2,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
	if st != nil {
		raw, _ := json.Marshal(st)
		p.Annotations[pub.InPlaceUpdateStateKey] = string(raw)
	}
	for k, v := range annotations {
		p.Annotations[k] = v
	}
	return p
}

func TestPlanPodStopsStaleContainersOnlyDuringTheirUpdate(t *testing.T) {
	envUpdate := &pub.InPlaceUpdateState{Revision: "r2", UpdateEnvFromMetadata: true}
	imageToo := &pub.InPlaceUpdateState{Revision: "r2", UpdateEnvFromMetadata: true, LastContainerStatuses: map[string]pub.InPlaceUpdateContainerStatus{
		"app": {ImageID: "sha256:one", ContainerID: "containerd://a"}}}
	imageDone := &pub.InPlaceUpdateState{Revision: "r2", UpdateEnvFromMetadata: true, LastContainerStatuses: map[string]pub.InPlaceUpdateContainerStatus{
		"app": {ImageID: "sha256:zero", ContainerID: "containerd://before"}}}
	nextBatch := &pub.InPlaceUpdateState{Revision: "r2", UpdateEnvFromMetadata: true, NextContainerImages: map[string]string{"app": "app:v3"}}
	grace := map[string]string{pub.InPlaceUpdateGraceKey: `{"revision":"r2","containerImages":{"app":"app:v3"},"graceSeconds":5}`}
	stale := map[string]Container{"containerd://a": {Env: map[string]string{"COLOR": "blue", "OTHER": "x"}}}
	fresh := map[string]Container{"containerd://a": {Env: map[string]string{"COLOR": "green"}}}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		runtime map[string]Container
		stop    bool
	}{
		{"metadata changed, env stale", agentPod(pub.LifecycleStateUpdating, envUpdate, nil), stale, true},
		{"the kubelet has applied the new image, env stale", agentPod(pub.LifecycleStateUpdating, imageDone, nil), stale, true},
		{"env already fresh", agentPod(pub.LifecycleStateUpdating, envUpdate, nil), fresh, false},
		{"a new image is written, the kubelet will restart it", agentPod(pub.LifecycleStateUpdating, imageToo, nil), stale, false},
		{"a new image waits for a later batch", agentPod(pub.LifecycleStateUpdating, nextBatch, nil), stale, false},
		{"a new image waits for the grace period", agentPod(pub.LifecycleStateUpdating, envUpdate, grace), stale, false},
		{"the update is over (a label edited by hand)", agentPod(pub.LifecycleStateNormal, envUpdate, nil), stale, false},
		{"the update changed no metadata env reads", agentPod(pub.LifecycleStateUpdating, &pub.InPlaceUpdateState{Revision: "r2"}, nil), stale, false},
		{"no in-place record", agentPod(pub.LifecycleStateUpdating, nil, nil), stale, false},
	} {
		plan := PlanPod(tc.pod, tc.runtime)
		if got := len(plan.Stops) == 1 && plan.Stops[0].ContainerID == "containerd://a"; got != tc.stop || len(plan.Stops) > 1 {
			t.Errorf("%s: stops %+v, want a stop: %v", tc.name, plan.Stops, tc.stop)
		}
		want := podfacts.EnvHash(map[string]string{"COLOR": tc.runtime["containerd://a"].Env["COLOR"]})
		if plan.Report == nil || len(plan.Report.Containers) != 1 || plan.Report.Containers[0].Hashes.ExtractedEnvFromMetadataHash != want ||
			plan.Report.Containers[0].RestartCount != 2 {
			t.Errorf("%s: report %+v, want app's running values", tc.name, plan.Report)
		}
	}
}

func TestPlanPodWritesAReportOnlyWhenItChanges(t *testing.T) {
	fresh := map[string]Container{"containerd://a": {Env: map[string]string{"COLOR": "green"}}}
	plan := PlanPod(agentPod(pub.LifecycleStateNormal, nil, nil), fresh)
	raw, err := json.Marshal(plan.Report)
	if err != nil {
		t.Fatal(err)
	}
	pod := agentPod(pub.LifecycleStateNormal, nil, map[string]string{pub.RuntimeContainerMetaKey: string(raw)})
	if again := PlanPod(pod, fresh); again.Report != nil || len(again.Stops) != 0 {
		t.Errorf("a pod with the same report gets %+v", again)
	}
	if unknown := PlanPod(agentPod(pub.LifecycleStateNormal, nil, nil), nil); unknown.Report != nil {
		t.Errorf("a container the runtime does not know is reported: %+v", unknown.Report)
	}
	plain := agentPod(pub.LifecycleStateNormal, nil, nil)
	plain.Spec.Containers[0].Env = nil
	if none := PlanPod(plain, fresh); none.Report != nil {
		t.Errorf("a pod whose env reads no metadata gets a report: %+v", none.Report)
	}
}

func TestEnvOfInfoReadsTheKubeletsConfigElseTheSpec(t *testing.T) {
	env, err := envOfInfo(`{"config":{"envs":[{"key":"COLOR","value":"blue"},{"key":"COLOR","value":"green"}]},"runtimeSpec":{"process":{"env":["COLOR=red"]}}}`)
	if err != nil || env["COLOR"] != "green" {
		t.Errorf("from the config: %v, %v", env, err)
	}
	env, err = envOfInfo(`{"runtimeSpec":{"process":{"env":["PATH=/bin","COLOR=a=b"]}}}`)
	if err != nil || env["COLOR"] != "a=b" {
		t.Errorf("from the spec: %v, %v", env, err)
	}
	if _, err := envOfInfo(`{"pid":1}`); err == nil {
		t.Error("info without env reads as empty")
	}
}

func TestKubeletHoldsStopsUntilTheKubeletsCopyHasTheValues(t *testing.T) {
	pod := agentPod(pub.LifecycleStateUpdating, nil, nil)
	stale := pod.DeepCopy()
	stale.Labels["color"] = "blue"
	stops := []Stop{{Container: "app", ContainerID: "containerd://a"}}
	for _, tc := range []struct {
		name    string
		kubelet *corev1.Pod
		stop    bool
	}{
		{"the kubelet has the new label", pod.DeepCopy(), true},
		{"the kubelet has the old label", stale, false},
		{"the kubelet has no copy", nil, false},
	} {
		now, waiting := KubeletHolds(pod, tc.kubelet, stops)
		if (len(now) == 1) != tc.stop || waiting == tc.stop {
			t.Errorf("%s: stops now %v, waiting %v; want a stop now: %v", tc.name, now, waiting, tc.stop)
		}
	}
}

func TestSettleHoldsAStopUntilTheKubeletHadTheValuesLongEnough(t *testing.T) {
	s := &Settle{For: 2 * time.Second}
	pod := agentPod(pub.LifecycleStateUpdating, nil, nil)
	stops := []Stop{{Container: "app", ContainerID: "containerd://a"}}
	start := time.Unix(1000, 0)
	if ready, wait := s.Ready(pod, stops, start); len(ready) != 0 || wait != 2*time.Second {
		t.Errorf("first seen: ready %v, wait %v; want none for 2s", ready, wait)
	}
	if ready, wait := s.Ready(pod, stops, start.Add(1500*time.Millisecond)); len(ready) != 0 || wait != 500*time.Millisecond {
		t.Errorf("1.5s on: ready %v, wait %v; want none for 0.5s", ready, wait)
	}
	changed := pod.DeepCopy()
	changed.Labels["color"] = "red"
	if ready, _ := s.Ready(changed, stops, start.Add(2*time.Second)); len(ready) != 0 {
		t.Errorf("values changed again: ready %v, want the settle to start over", ready)
	}
	if ready, _ := s.Ready(pod, stops, start.Add(2*time.Second)); len(ready) != 1 {
		t.Errorf("2s on: ready %v, want the stop", ready)
	}
}
