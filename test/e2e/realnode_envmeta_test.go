package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
	"github.com/lifeline-k8s/lifeline/pkg/podfacts"
)

// envLines reads what a container's starts were given of its REPORT_ENV
// variable, one NAME=value a start.
func envLines(t *testing.T, pod, container string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(local.EventsDir(), pod+"."+container+".env"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(string(data)), ", ")
}

// TestRealNodeInPlaceUpdateRestartsContainersWhoseEnvReadsChangedLabels:
// the kubelet sets an env variable from a label only when it starts the
// container. An in-place update that changes the label must restart that
// container (the node agent stops it, the kubelet starts it with the new
// value), and only it, once; the update is done only after it runs with
// the new value. An update that changes the label and the image restarts
// it once too. OpenKruise does the same through kruise-daemon.
func TestRealNodeInPlaceUpdateRestartsContainersWhoseEnvReadsChangedLabels(t *testing.T) {
	alongside(t)
	ns := newNamespace(t)
	cs := newRealCloneSet(ns, "envmeta", 1, "app", "side")
	cs.Spec.Template.Labels["color"] = "blue"
	app := &cs.Spec.Template.Spec.Containers[0]
	app.Env = append(app.Env, corev1.EnvVar{Name: "REPORT_ENV", Value: "COLOR"},
		corev1.EnvVar{Name: "COLOR", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['color']"}}})
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "1 pod available", settled(1))
	before := clonePods(t, cs)[0]
	inPlaceReady := conditionTrail(t, ns, pub.InPlaceUpdateReady)
	reported := waitPod(t, ns, before.Name, "reported by the node agent", func(p *corev1.Pod) bool {
		return podfacts.RuntimeContainerMeta(p) != nil
	})
	if r := podfacts.RuntimeContainerMeta(reported); len(r.Containers) != 1 || r.Containers[0].Name != "app" ||
		r.Containers[0].ContainerID != containerStatus(reported, "app").ContainerID {
		t.Errorf("the agent's report %+v, want app's running container alone", r)
	}

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Labels["color"] = "green" })
	p := waitUpdatedInPlace(t, cs, before.UID)
	if got := envLines(t, p.Name, "app"); got != "COLOR=blue, COLOR=green" {
		t.Errorf("app started with %q, want blue then green", got)
	}
	if got := lifeLine(lifeOf(t, p.Name, "app")); got != "start v1, sigterm v1, exit v1, start v1" {
		t.Errorf("app lived %q, want stopped once and started again", got)
	}
	if a, s := containerStatus(p, "app"), containerStatus(p, "side"); a.RestartCount != 1 || s.RestartCount != 0 {
		t.Errorf("restarts: app %d, side %d; want 1 and 0", a.RestartCount, s.RestartCount)
	}
	if got := inPlaceReady(p.Name); !hasConditionSeq(got, corev1.ConditionFalse, corev1.ConditionTrue) {
		t.Errorf("InPlaceUpdateReady went %v, want False then True", got)
	}
	// The condition's time has whole seconds.
	stopped := firstAt(lifeOf(t, p.Name, "app"), "sigterm", "v1").Truncate(time.Second)
	if ready := readySince(p, pub.InPlaceUpdateReady); ready.Time.Before(stopped) {
		t.Errorf("the update was called done at %s, before app was stopped (%s)", ready, stopped)
	}
	eventually(t, 30*time.Second, "the agent's RestartingContainer event", func(ctx context.Context) (bool, string, error) {
		events, err := client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		for _, e := range events.Items {
			if e.Reason == "RestartingContainer" && e.Regarding.Name == p.Name && strings.Contains(e.Note, "container app") {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d events", len(events.Items)), nil
	})

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) {
		c.Spec.Template.Labels["color"] = "red"
		c.Spec.Template.Spec.Containers[0].Image = cluster.TestAppImage("v2")
	})
	p = waitUpdatedInPlace(t, cs, before.UID)
	if got := envLines(t, p.Name, "app"); got != "COLOR=blue, COLOR=green, COLOR=red" {
		t.Errorf("app started with %q, want blue, green, then red", got)
	}
	if got := lifeLine(lifeOf(t, p.Name, "app")); got != "start v1, sigterm v1, exit v1, start v1, sigterm v1, exit v1, start v2" {
		t.Errorf("app lived %q, want one more restart, onto v2", got)
	}
	if a, s := containerStatus(p, "app"), containerStatus(p, "side"); a.RestartCount != 2 || s.RestartCount != 0 {
		t.Errorf("restarts: app %d, side %d; want 2 and 0", a.RestartCount, s.RestartCount)
	}
}

// waitUpdatedInPlace waits for the CloneSet's one pod, still uid, to be
// updated, Normal and Ready, and returns it.
func waitUpdatedInPlace(t *testing.T, cs *appsv1alpha1.CloneSet, uid types.UID) *corev1.Pod {
	t.Helper()
	waitCloneSet(t, cs, "the pod updated and available", func(c *appsv1alpha1.CloneSet) bool {
		return settled(1)(c) && c.Status.UpdatedAvailableReplicas == 1 && c.Status.UpdatedReplicas == 1
	})
	p := clonePods(t, cs)[0]
	if p.UID != uid {
		t.Fatal("the pod was recreated")
	}
	if p.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal) || podCondition(&p, corev1.PodReady) != corev1.ConditionTrue {
		t.Errorf("pod: state %s, ready %s", p.Labels[pub.LifecycleStateKey], podCondition(&p, corev1.PodReady))
	}
	return &p
}

// readySince is when a pod's condition last turned.
func readySince(p *corev1.Pod, ct corev1.PodConditionType) metav1.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == ct {
			return c.LastTransitionTime
		}
	}
	return metav1.Time{}
}

// TestNodeAgentWritesOnlyItsReportOnItsNode probes the node agent's
// admission policy with the agent's own identity (a token bound to
// real-node-0): its report on a pod of its node passes; a label on that
// pod, another annotation, and its report on a pod of the other node are
// refused, each with the policy's reason.
func TestNodeAgentWritesOnlyItsReportOnItsNode(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	kubeconfig, err := local.NodeBoundKubeconfig(ctx, cluster.NodeAgentServiceAccount, "real-node-0")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	agent := kubernetes.NewForConfigOrDie(cfg)
	pods := map[string]*corev1.Pod{}
	for _, node := range []string{"real-node-0", "real-node-1"} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "on-" + node},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{realContainer("app", "v1")}}}
		onRealNodes(&pod.Spec)
		created, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods[node] = created
	}
	report := fmt.Sprintf(`{"metadata":{"annotations":{%q:"{\"containers\":[]}"}}}`, pub.RuntimeContainerMetaKey)
	for _, tc := range []struct {
		name, pod, patch, refused string
	}{
		{"its report on its node's pod", "real-node-0", report, ""},
		{"a label", "real-node-0", `{"metadata":{"labels":{"x":"y"}}}`, "may not change a pod's labels"},
		{"another annotation", "real-node-0", `{"metadata":{"annotations":{"x":"y"}}}`, "may change only the annotation apps.kruise.io/runtime-containers-meta, not x"},
		{"its report on the other node's pod", "real-node-1", report, "the node agent of real-node-0 may write only pods on that node"},
	} {
		_, err := agent.CoreV1().Pods(ns).Patch(ctx, pods[tc.pod].Name, types.MergePatchType, []byte(tc.patch), metav1.PatchOptions{})
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.refused != "" && (!apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) || !strings.Contains(fmt.Sprint(err), tc.refused)):
			t.Errorf("%s: got %v, want refused with %q", tc.name, err, tc.refused)
		}
	}
}
