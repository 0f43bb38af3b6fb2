package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// The tests of this file run their pods on the cluster's real nodes: a
// kubelet and containerd each, running hack/testapp's images. What a pod's
// containers do is read from inside them: each appends its life (start,
// prestop, sigterm, exit, with the version it runs) to a file of the
// cluster's events folder, mounted into the pod.

// realContainer is a testapp container of version v that logs its life,
// with an exec readiness probe every second.
func realContainer(name, version string) corev1.Container {
	return corev1.Container{
		Name:            name,
		Image:           cluster.TestAppImage(version),
		ImagePullPolicy: corev1.PullNever,
		Env: []corev1.EnvVar{
			{Name: "EVENTS_DIR", Value: "/events"},
			{Name: "CONTAINER_NAME", Value: name},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/testapp", "probe"}}},
			PeriodSeconds: 1,
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "events", MountPath: "/events"}},
	}
}

// onRealNodes puts a pod template's pods on the real nodes, with the
// events folder mounted.
func onRealNodes(spec *corev1.PodSpec) {
	spec.NodeSelector = map[string]string{cluster.RealNodeLabel: "true"}
	spec.Tolerations = append(spec.Tolerations, cluster.RealNodeToleration())
	spec.TerminationGracePeriodSeconds = ptr.To[int64](10)
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "events", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: local.EventsDir()},
	}})
}

// newRealCloneSet is an in-place CloneSet of testapp containers (v1) on
// the real nodes.
func newRealCloneSet(ns, name string, replicas int32, containers ...string) *appsv1alpha1.CloneSet {
	cs := newCloneSet(ns, name, replicas)
	spec := &cs.Spec.Template.Spec
	spec.Containers = nil
	for _, c := range containers {
		spec.Containers = append(spec.Containers, realContainer(c, "v1"))
	}
	onRealNodes(spec)
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	return cs
}

// containerLife is one line of a container's events file.
type containerLife struct {
	at      time.Time
	what    string // start, prestop, sigterm, exit
	version string
}

// lifeOf reads what a container of a pod logged from inside, in order.
func lifeOf(t *testing.T, pod, container string) []containerLife {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(local.EventsDir(), pod+"."+container))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []containerLife
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, f[0])
		if err != nil {
			t.Fatalf("%s.%s: %q: %v", pod, container, line, err)
		}
		out = append(out, containerLife{at, f[1], f[2]})
	}
	return out
}

// lifeLine renders a container's life as "start v1, sigterm v1, …".
func lifeLine(life []containerLife) string {
	var parts []string
	for _, l := range life {
		parts = append(parts, l.what+" "+l.version)
	}
	return strings.Join(parts, ", ")
}

// firstAt is when a container first logged what at version (zero if never).
func firstAt(life []containerLife, what, version string) time.Time {
	for _, l := range life {
		if l.what == what && l.version == version {
			return l.at
		}
	}
	return time.Time{}
}

func containerStatus(p *corev1.Pod, name string) corev1.ContainerStatus {
	for _, st := range p.Status.ContainerStatuses {
		if st.Name == name {
			return st
		}
	}
	return corev1.ContainerStatus{}
}

// realContainerID says whether a container status is a real runtime's.
func realContainerID(st corev1.ContainerStatus) bool {
	return strings.HasPrefix(st.ContainerID, "containerd://") && strings.HasPrefix(st.ImageID, "sha256:")
}

// conditionTrail follows one condition type of the pods of ns with a watch
// of the test's own and returns, per pod, each status it took in turn.
func conditionTrail(t *testing.T, ns string, ct corev1.PodConditionType) func(pod string) []corev1.ConditionStatus {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	trail := map[string][]corev1.ConditionStatus{}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			s := podCondition(p, ct)
			mu.Lock()
			if got := trail[p.Name]; len(got) == 0 || got[len(got)-1] != s {
				trail[p.Name] = append(got, s)
			}
			mu.Unlock()
		}
	}()
	return func(pod string) []corev1.ConditionStatus {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(trail[pod])
	}
}
