package diagnose

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1beta1 "github.com/lifeline-k8s/lifeline/api/policy/v1beta1"
	"github.com/lifeline-k8s/lifeline/pkg/workload"
)

var now = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

const fin = "example.com/drain"

var hook = &pub.LifecycleHook{LabelsHandler: map[string]string{"h": "1"}, FinalizersHandler: []string{fin}}

// daemon is an Advanced DaemonSet on 2 nodes: its status names the update
// revision by its short hash, its pods carry the hash.
func daemon() workload.View {
	d := &appsv1beta1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "agent", Generation: 2},
		Spec: appsv1beta1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Lifecycle: &pub.Lifecycle{PreDelete: hook, InPlaceUpdate: hook},
			UpdateStrategy: appsv1beta1.DaemonSetUpdateStrategy{RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{
				MaxUnavailable: ptr.To(intstr.FromString("50%")), Partition: ptr.To(intstr.FromInt32(0))}}},
		Status: appsv1beta1.DaemonSetStatus{DesiredNumberScheduled: 2, ObservedGeneration: 2, UpdateRevision: "9f8e"}}
	return workload.DaemonSet.View(d)
}

func dpod(name, hash string, opts ...func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
		Labels:      map[string]string{"app": "agent", "controller-revision-hash": hash, "h": "1"},
		Annotations: map[string]string{pub.LifecycleTimestampKey: now.Add(-time.Minute).Format(time.RFC3339)}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	for _, o := range opts {
		o(&p)
	}
	return p
}

func state(s pub.LifecycleStateType) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Labels[pub.LifecycleStateKey] = string(s) }
}

// TestStatusReasons: which pod each situation names and why, and the
// remedy's command where there is one.
func TestStatusReasons(t *testing.T) {
	cases := []struct {
		name    string
		pods    []corev1.Pod
		budgets []policyv1beta1.PodUnavailableBudget
		paused  bool
		done    bool
		want    []string // pod:reason, in order
		remedy  string   // in the first pod blocker's remedy
	}{
		{name: "rolled out, short hash matches", pods: []corev1.Pod{dpod("a", "agent-9f8e"), dpod("b", "9f8e")}, done: true},
		{name: "held by the finalizer alone", pods: []corev1.Pod{dpod("a", "9f8e"), dpod("b", "old", state(pub.LifecycleStatePreparingDelete), func(p *corev1.Pod) {
			delete(p.Labels, "h")
			p.Finalizers = []string{"other", fin}
		})}, want: []string{"b:HookHeld"}, remedy: `"path":"/metadata/finalizers/1"`},
		{name: "a pod of the old revision waits its turn and says nothing", pods: []corev1.Pod{dpod("a", "old"), dpod("b", "old")}},
		{name: "unscheduled pod", pods: []corev1.Pod{dpod("a", "9f8e"), dpod("b", "9f8e", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Message: "0/3 nodes are available"}}
		})}, want: []string{"b:NotScheduled"}},
		{name: "rolled out while an old pod terminates", pods: []corev1.Pod{dpod("a", "9f8e"), dpod("b", "9f8e"), dpod("c", "old", func(p *corev1.Pod) {
			p.DeletionTimestamp = ptr.To(metav1.NewTime(now.Add(20 * time.Second)))
			p.DeletionGracePeriodSeconds = ptr.To[int64](30)
		})}, done: true},
		{name: "terminating pod kept by a finalizer, its replacement not yet made", pods: []corev1.Pod{dpod("a", "9f8e"), dpod("c", "old", func(p *corev1.Pod) {
			p.DeletionTimestamp = ptr.To(metav1.NewTime(now.Add(-time.Hour)))
			p.Finalizers = []string{"x"}
		})}, want: []string{"c:Terminating"}},
		{name: "paused", paused: true, pods: []corev1.Pod{dpod("a", "old"), dpod("b", "old")}, want: []string{":Paused"}},
		{name: "budget refusing an outdated pod", pods: []corev1.Pod{dpod("a", "9f8e"), dpod("b", "old")},
			budgets: []policyv1beta1.PodUnavailableBudget{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"},
				Spec: policyv1beta1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}}}},
			want: []string{"b:BudgetRefusing"}, remedy: "kubectl lifeline budget pub/b"},
		{name: "a budget that ignores the pod does not hold it", pods: []corev1.Pod{dpod("a", "9f8e"), dpod("b", "old")},
			budgets: []policyv1beta1.PodUnavailableBudget{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"},
				Spec: policyv1beta1.PodUnavailableBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
					IgnoredPodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := daemon()
			w.Paused = c.paused
			v := Status(Snapshot{Now: now, Workload: w, Pods: c.pods, Budgets: c.budgets})
			var got []string
			for _, b := range v.Blockers {
				got = append(got, b.Pod+":"+b.Reason)
			}
			if v.Done != c.done || strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("done %t blockers %v, want done %t blockers %v\n%+v", v.Done, got, c.done, c.want, v)
			}
			if c.remedy != "" {
				for _, b := range v.Blockers {
					if b.Pod != "" && !strings.Contains(b.Remedy, c.remedy) {
						t.Errorf("remedy %q lacks %q", b.Remedy, c.remedy)
					}
				}
			}
		})
	}
}

func TestAdaptersResolveTheRolloutLimits(t *testing.T) {
	d := daemon()
	if d.Replicas != 2 || d.MaxUnavailable != 1 || d.Ref() != "ads/agent" {
		t.Errorf("daemon: %+v", d)
	}
	cs := workload.CloneSet.View(&appsv1beta1.CloneSet{Spec: appsv1beta1.CloneSetSpec{Replicas: ptr.To[int32](10),
		UpdateStrategy: appsv1beta1.CloneSetUpdateStrategy{RollingUpdate: &appsv1beta1.RollingUpdateCloneSetStrategy{Partition: ptr.To(intstr.FromString("25%"))}}}})
	// OpenKruise rounds a partition up and defaults maxUnavailable to 20%.
	if cs.Partition != 3 || cs.MaxUnavailable != 2 {
		t.Errorf("cloneset partition %d maxUnavailable %d, want 3 and 2", cs.Partition, cs.MaxUnavailable)
	}
	sts := workload.StatefulSet.View(&appsv1beta1.StatefulSet{Spec: appsv1beta1.StatefulSetSpec{Replicas: ptr.To[int32](3)}})
	if sts.MaxUnavailable != 1 || sts.Replicas != 3 || sts.Strategy != "RollingUpdate" {
		t.Errorf("statefulset: %+v", sts)
	}
}

// TestAnInPlaceUpdateStuckOnAPullNamesTheError: the pod updating in place
// whose new image cannot be pulled is named with the kubelet's reason and
// message, not only as waiting for the kubelet.
func TestAnInPlaceUpdateStuckOnAPullNamesTheError(t *testing.T) {
	stuck := dpod("b", "9f8e", state(pub.LifecycleStateUpdating), func(p *corev1.Pod) {
		p.Annotations[pub.InPlaceUpdateStateKey] = `{"revision":"agent-9f8e","updateTimestamp":"2026-11-26T11:59:00Z","lastContainerStatuses":{"main":{"imageID":"sha256:old"}}}`
		p.Spec.Containers = []corev1.Container{{Name: "main", Image: "127.0.0.1:1/agent:v2"}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "agent:v1", ImageID: "sha256:old", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "127.0.0.1:1/agent:v2"`}}}}
	})
	v := Status(Snapshot{Now: now, Workload: daemon(), Pods: []corev1.Pod{dpod("a", "9f8e"), stuck}})
	if len(v.Blockers) != 1 || v.Blockers[0].Reason != "UpdatingInPlace" ||
		!strings.Contains(v.Blockers[0].Message, `container main waiting: ImagePullBackOff (Back-off pulling image "127.0.0.1:1/agent:v2")`) {
		t.Errorf("blockers %+v", v.Blockers)
	}
}

// TestAPullErrorHiddenByTheRestartBackOffIsNamedFromTheEvents: a real
// kubelet reports CrashLoopBackOff between its pulls; the kubelet's newest
// Warning about the container's image says why.
func TestAPullErrorHiddenByTheRestartBackOffIsNamedFromTheEvents(t *testing.T) {
	stuck := dpod("b", "old", func(p *corev1.Pod) {
		p.Spec.Containers = []corev1.Container{{Name: "main", Image: "127.0.0.1:1/agent:v2"}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{
			Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container=main"}}}}
	})
	events := []Event{
		{Time: now.Add(-time.Minute), Type: "Warning", Reason: "Failed", Regarding: "Pod/b", Message: `Failed to pull image "127.0.0.1:1/agent:v2": connection refused`},
		{Time: now.Add(-30 * time.Second), Type: "Warning", Reason: "BackOff", Regarding: "Pod/b", Message: "Back-off restarting failed container main"},
		{Time: now.Add(-2 * time.Minute), Type: "Warning", Reason: "Failed", Regarding: "Pod/b", Message: `Error: ErrImagePull "127.0.0.1:1/agent:v2"`},
	}
	v := Status(Snapshot{Now: now, Workload: daemon(), Pods: []corev1.Pod{dpod("a", "9f8e"), stuck}, Events: events})
	want := `the kubelet's last warning: Failed: Failed to pull image "127.0.0.1:1/agent:v2": connection refused`
	if len(v.Blockers) == 0 || !strings.Contains(v.Blockers[len(v.Blockers)-1].Message, want) {
		t.Errorf("blockers %+v, want one saying %q", v.Blockers, want)
	}
}

// TestAnInPlaceUpdateWaitingForTheNodeAgentSaysSo: the images run, and
// only the env read from a changed label is left, which the node agent's
// report does not show yet.
func TestAnInPlaceUpdateWaitingForTheNodeAgentSaysSo(t *testing.T) {
	waiting := dpod("b", "9f8e", state(pub.LifecycleStateUpdating), func(p *corev1.Pod) {
		p.Annotations[pub.InPlaceUpdateStateKey] = `{"revision":"agent-9f8e","updateTimestamp":"2026-11-26T11:59:00Z","lastContainerStatuses":{},"updateEnvFromMetadata":true}`
		p.Annotations[pub.RuntimeContainerMetaKey] = `{"containers":[{"name":"main","containerID":"containerd://old","restartCount":0,"hashes":{"plainHash":0,"extractedEnvFromMetadataHash":1}}]}`
		p.Labels["color"] = "green"
		p.Spec.NodeName = "node-1"
		p.Spec.Containers = []corev1.Container{{Name: "main", Image: "agent:v1", Env: []corev1.EnvVar{{Name: "COLOR",
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['color']"}}}}}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: "agent:v1", ContainerID: "containerd://old",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	})
	v := Status(Snapshot{Now: now, Workload: daemon(), Pods: []corev1.Pod{dpod("a", "9f8e"), waiting}})
	if len(v.Blockers) != 1 || v.Blockers[0].Reason != "UpdatingInPlace" ||
		!strings.Contains(v.Blockers[0].Message, "waiting for the node agent to restart main") || !strings.Contains(v.Blockers[0].Remedy, "node-1") {
		t.Errorf("blockers %+v", v.Blockers)
	}
}
