package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	appsv1beta1 "github.com/lifeline-k8s/lifeline/api/apps/v1beta1"
	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
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

// TestRealNodeInPlaceUpdateRestartsOnlyTheChangedContainer: a CloneSet of
// two containers on real nodes, registered by lifeline-bridge in an etcd
// registry through the seeds' hooks. Changing one container's image
// keeps each pod (UID, IP) and restarts that container alone: its restart
// count goes up by one and it gets a new container and image ID, while
// the other container keeps its ID and never logs a second start. Each
// pod goes InPlaceUpdateReady False then True, leaves the registry before
// its container stops and comes back only once its readiness probe
// passes on the new image (an independent watch of the pods and the
// registry judges every write).
func TestRealNodeInPlaceUpdateRestartsOnlyTheChangedContainer(t *testing.T) {
	ctx := context.Background()
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	r := etcdUnderTest(t, "real-registry")
	ns := newNamespace(t)
	b, err := local.StartBridge(ctx, cluster.BridgeOptions{Root: root, Dir: local.Dir, Config: etcdBridgeConfig(t, "real", "real", ns, r.registry.Endpoint)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = local.StopProcess(b.Name, syscall.SIGTERM) })
	reg := watchRegistry(t, r.etcd, "/services/")
	watchPodsAgainst(t, ns, r, true)

	cs := newRealCloneSet(ns, "web", 2, "app", "sidecar")
	cs.Labels = map[string]string{"registry": "real"}
	withRegistryHooks(cs)
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "2 pods registered and available", settled(2))
	waitEntries(t, r.etcd, cs, 2)
	before := map[string]corev1.Pod{}
	for _, p := range clonePods(t, cs) {
		if !realContainerID(containerStatus(&p, "app")) || p.Status.PodIP == "" {
			t.Fatalf("pod %s is not running real containers: %+v", p.Name, p.Status)
		}
		before[p.Name] = p
	}
	inPlaceReady := conditionTrail(t, ns, pub.InPlaceUpdateReady)

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = cluster.TestAppImage("v2") })
	waitCloneSet(t, cs, "2 pods updated and available", func(c *appsv1alpha1.CloneSet) bool {
		return settled(2)(c) && c.Status.UpdatedAvailableReplicas == 2
	})
	waitEntries(t, r.etcd, cs, 2)

	for _, p := range clonePods(t, cs) {
		was, ok := before[p.Name]
		if !ok || was.UID != p.UID || was.Status.PodIP != p.Status.PodIP {
			t.Errorf("pod %s was replaced, not updated in place", p.Name)
			continue
		}
		oldApp, app := containerStatus(&was, "app"), containerStatus(&p, "app")
		if app.Image != cluster.TestAppImage("v2") || app.RestartCount != oldApp.RestartCount+1 ||
			app.ContainerID == oldApp.ContainerID || app.ImageID == oldApp.ImageID || !app.Ready {
			t.Errorf("pod %s: app container before %+v, after %+v; want restarted once on v2 with new container and image IDs", p.Name, oldApp, app)
		}
		oldSidecar, sidecar := containerStatus(&was, "sidecar"), containerStatus(&p, "sidecar")
		if sidecar.ContainerID != oldSidecar.ContainerID || sidecar.RestartCount != oldSidecar.RestartCount {
			t.Errorf("pod %s: the sidecar, whose image did not change, was restarted: before %+v, after %+v", p.Name, oldSidecar, sidecar)
		}
		if got := lifeLine(lifeOf(t, p.Name, "app")); !strings.HasPrefix(got, "start v1, sigterm v1, exit v1, start v2") {
			t.Errorf("pod %s: the app container lived %q, want it stopped on v1 and started on v2", p.Name, got)
		}
		if got := lifeLine(lifeOf(t, p.Name, "sidecar")); got != "start v1" {
			t.Errorf("pod %s: the sidecar lived %q, want one start", p.Name, got)
		}
		if got := inPlaceReady(p.Name); !hasConditionSeq(got, corev1.ConditionFalse, corev1.ConditionTrue) {
			t.Errorf("pod %s: InPlaceUpdateReady went %v, want False then True", p.Name, got)
		}
		if got := reg.history(entryKey(ns, p.Name)); !hasSeq(got, "put", "delete", "put") {
			t.Errorf("%s in the registry: %v, want registered, unregistered, registered again", p.Name, got)
		}
		// Out of the registry before the old container got its SIGTERM.
		stopped := firstAt(lifeOf(t, p.Name, "app"), "sigterm", "v1")
		if del := reg.firstDeleteAt(entryKey(ns, p.Name)); del.IsZero() || stopped.IsZero() || !del.Before(stopped) {
			t.Errorf("pod %s: unregistered at %v, its container told to stop at %v", p.Name, del, stopped)
		}
	}
}

func hasConditionSeq(got []corev1.ConditionStatus, want ...corev1.ConditionStatus) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// TestRealNodeInPlaceUpdateByContainerPriority: with KRUISE_CONTAINER_PRIORITY
// 10 on "first", an image change of both containers restarts "first" and
// only once it runs the new image and its probe passes, "second": read
// from inside the containers, second is told to stop after first started
// on v2 and was found ready.
func TestRealNodeInPlaceUpdateByContainerPriority(t *testing.T) {
	ns := newNamespace(t)
	cs := newRealCloneSet(ns, "priority", 1, "second", "first")
	cs.Spec.Template.Spec.Containers[1].Env = append(cs.Spec.Template.Spec.Containers[1].Env, corev1.EnvVar{Name: "KRUISE_CONTAINER_PRIORITY", Value: "10"})
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "1 pod available", settled(1))
	pod := clonePods(t, cs)[0]
	firstReady := containerReadyTrail(t, ns, pod.Name, "first")

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) {
		for i := range c.Spec.Template.Spec.Containers {
			c.Spec.Template.Spec.Containers[i].Image = cluster.TestAppImage("v2")
		}
	})
	waitCloneSet(t, cs, "the pod updated and available", func(c *appsv1alpha1.CloneSet) bool {
		return settled(1)(c) && c.Status.UpdatedAvailableReplicas == 1
	})
	p := clonePods(t, cs)[0]
	if p.UID != pod.UID {
		t.Fatal("the pod was recreated")
	}
	first, second := lifeOf(t, p.Name, "first"), lifeOf(t, p.Name, "second")
	firstStarted := firstAt(first, "start", "v2")
	secondStopped := firstAt(second, "sigterm", "v1")
	if firstStarted.IsZero() || secondStopped.IsZero() || !secondStopped.After(firstStarted) {
		t.Fatalf("first lived %q, second %q: second must be stopped after first started on v2", lifeLine(first), lifeLine(second))
	}
	if ready := firstReady(); ready.IsZero() || secondStopped.Before(ready) {
		t.Errorf("second was told to stop at %v, before first (started on v2 at %v) was seen ready at %v", secondStopped, firstStarted, ready)
	}
	for _, name := range []string{"first", "second"} {
		if st := containerStatus(&p, name); st.RestartCount != 1 || st.Image != cluster.TestAppImage("v2") {
			t.Errorf("container %s: %+v", name, st)
		}
	}
}

// containerReadyTrail returns when the watch first saw a container of pod
// ready on a v2 image (zero until then).
func containerReadyTrail(t *testing.T, ns, pod, container string) func() time.Time {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + pod})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var at time.Time
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			st := containerStatus(p, container)
			mu.Lock()
			if at.IsZero() && st.Ready && st.Image == cluster.TestAppImage("v2") {
				at = time.Now()
			}
			mu.Unlock()
		}
	}()
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return at
	}
}

// TestRealNodePreDeleteHookHoldsARunningContainer: a pod picked for a
// scale-in waits in PreparingDelete with its container running (it logs no
// preStop and no SIGTERM) until its operator removes the hook label; then
// the kubelet runs the preStop hook, sends SIGTERM and the pod goes.
func TestRealNodePreDeleteHookHoldsARunningContainer(t *testing.T) {
	ns := newNamespace(t)
	const hook = "example.com/drained"
	cs := newRealCloneSet(ns, "held", 2, "app")
	cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{hook: "false"}}}
	cs.Spec.Template.Labels[hook] = "false"
	cs.Spec.Template.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		Exec: &corev1.ExecAction{Command: []string{"/testapp", "prestop"}}}}
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "2 pods available", settled(2))

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](1) })
	var held string
	eventually(t, time.Minute, "a pod held in PreparingDelete", func(context.Context) (bool, string, error) {
		for _, p := range clonePods(t, cs) {
			if p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingDelete) {
				held = p.Name
				return true, "", nil
			}
		}
		return false, "none yet", nil
	})
	// Held means running: for as long as a rollout step takes, the
	// container is up and was told nothing.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		p, err := client.CoreV1().Pods(ns).Get(context.Background(), held, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil || containerStatus(p, "app").State.Running == nil {
			t.Fatalf("the held pod was disrupted: %v %+v", err, p)
		}
		if got := lifeLine(lifeOf(t, held, "app")); got != "start v1" {
			t.Fatalf("the held pod's container lived %q while held", got)
		}
		time.Sleep(500 * time.Millisecond) // sampling a state that must not change, not waiting for one
	}

	released := time.Now()
	patchPod(t, ns, held, `{"metadata":{"labels":{"`+hook+`":"true"}}}`)
	eventually(t, time.Minute, "the released pod gone", func(ctx context.Context) (bool, string, error) {
		_, err := client.CoreV1().Pods(ns).Get(ctx, held, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err), nil
	})
	life := lifeOf(t, held, "app")
	if got := lifeLine(life); got != "start v1, prestop v1, sigterm v1, exit v1" {
		t.Fatalf("the released pod's container lived %q, want its preStop hook then SIGTERM", got)
	}
	if prestop := firstAt(life, "prestop", "v1"); prestop.Before(released) {
		t.Errorf("preStop ran at %v, before the release at %v", prestop, released)
	}
	// The preStop hook takes a second (PRESTOP_SECONDS); SIGTERM follows it.
	if gap := firstAt(life, "sigterm", "v1").Sub(firstAt(life, "prestop", "v1")); gap < 900*time.Millisecond {
		t.Errorf("SIGTERM came %v after preStop began, want after the hook's second", gap)
	}
}

// inPlaceSnapshot is what an in-place update of container "app" must
// change, and what it must keep, in each pod of a workload.
type inPlaceSnapshot map[string]corev1.Pod

func snapshotPods(t *testing.T, pods []corev1.Pod) inPlaceSnapshot {
	t.Helper()
	s := inPlaceSnapshot{}
	for _, p := range pods {
		if !realContainerID(containerStatus(&p, "app")) {
			t.Fatalf("pod %s is not running real containers: %+v", p.Name, p.Status.ContainerStatuses)
		}
		s[p.Name] = p
	}
	return s
}

// check says what is wrong with pods after "app" went from v1 to v2 in
// place: each pod the same, app restarted once on a new container and
// image ID, the sidecar untouched, InPlaceUpdateReady and Ready False
// then True again.
func (s inPlaceSnapshot) check(t *testing.T, pods []corev1.Pod, inPlaceReady, ready func(string) []corev1.ConditionStatus) {
	t.Helper()
	if len(pods) != len(s) {
		t.Errorf("%d pods after the update, %d before", len(pods), len(s))
	}
	for _, p := range pods {
		was, ok := s[p.Name]
		if !ok || was.UID != p.UID {
			t.Errorf("pod %s was replaced, not updated in place", p.Name)
			continue
		}
		oldApp, app := containerStatus(&was, "app"), containerStatus(&p, "app")
		if app.Image != cluster.TestAppImage("v2") || app.RestartCount != oldApp.RestartCount+1 || app.ContainerID == oldApp.ContainerID || app.ImageID == oldApp.ImageID {
			t.Errorf("pod %s: app before %+v, after %+v", p.Name, oldApp, app)
		}
		if oldSidecar, sidecar := containerStatus(&was, "sidecar"), containerStatus(&p, "sidecar"); sidecar.ContainerID != oldSidecar.ContainerID || sidecar.RestartCount != oldSidecar.RestartCount {
			t.Errorf("pod %s: the sidecar was restarted: before %+v, after %+v", p.Name, oldSidecar, sidecar)
		}
		if got := lifeLine(lifeOf(t, p.Name, "app")); !strings.HasPrefix(got, "start v1, sigterm v1, exit v1, start v2") {
			t.Errorf("pod %s: app lived %q", p.Name, got)
		}
		if got := inPlaceReady(p.Name); !hasConditionSeq(got, corev1.ConditionFalse, corev1.ConditionTrue) {
			t.Errorf("pod %s: InPlaceUpdateReady went %v, want False then True", p.Name, got)
		}
		if got := ready(p.Name); !hasConditionSeq(got, corev1.ConditionFalse, corev1.ConditionTrue) {
			t.Errorf("pod %s: Ready went %v, want False while it restarted, then True", p.Name, got)
		}
	}
}

// TestRealNodeAdvancedStatefulSetUpdatesInPlace: the in-place update of
// TestRealNodeInPlaceUpdateRestartsOnlyTheChangedContainer for an Advanced
// StatefulSet.
func TestRealNodeAdvancedStatefulSetUpdatesInPlace(t *testing.T) {
	ns := newNamespace(t)
	set := newAdvancedStatefulSet(ns, "db", 2, appsv1.ParallelPodManagement)
	set.Spec.Template.Spec.Containers = []corev1.Container{realContainer("app", "v1"), realContainer("sidecar", "v1")}
	onRealNodes(&set.Spec.Template.Spec)
	set.Spec.Template.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
	set.Spec.UpdateStrategy.RollingUpdate = &appsv1beta1.RollingUpdateStatefulSetStrategy{
		PodUpdatePolicy: appsv1beta1.InPlaceIfPossiblePodUpdateStrategyType, MaxUnavailable: ptr.To(intstr.FromInt32(1))}
	create(t, set)
	waitAdvancedStatefulSet(t, set, "2 pods Ready", stsSettled(2))
	before := snapshotPods(t, livePods(t, ns, "app=db"))
	inPlaceReady, ready := conditionTrail(t, ns, pub.InPlaceUpdateReady), conditionTrail(t, ns, corev1.PodReady)

	updateAdvancedStatefulSet(t, set, func(s *appsv1beta1.StatefulSet) {
		s.Spec.Template.Spec.Containers[0].Image = cluster.TestAppImage("v2")
	})
	waitAdvancedStatefulSet(t, set, "2 pods updated and Ready", stsSettled(2))
	before.check(t, livePods(t, ns, "app=db"), inPlaceReady, ready)
}

// TestRealNodeAdvancedDaemonSetUpdatesInPlace: the same for an Advanced
// DaemonSet, one pod on each real node.
func TestRealNodeAdvancedDaemonSetUpdatesInPlace(t *testing.T) {
	ns := newNamespace(t)
	set := newAdvancedDaemonSet(ns, "agent")
	set.Spec.Template.Spec = corev1.PodSpec{Containers: []corev1.Container{realContainer("app", "v1"), realContainer("sidecar", "v1")}}
	onRealNodes(&set.Spec.Template.Spec)
	set.Spec.UpdateStrategy = appsv1beta1.DaemonSetUpdateStrategy{Type: appsv1beta1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1beta1.RollingUpdateDaemonSet{Type: appsv1beta1.InplaceRollingUpdateType}}
	create(t, set)
	nodes := int32(len(local.RealNodeNames()))
	waitAdvancedDaemonSet(t, set, "a pod Ready on each real node", dsSettled(nodes))
	before := snapshotPods(t, livePods(t, ns, "app=agent"))
	inPlaceReady, ready := conditionTrail(t, ns, pub.InPlaceUpdateReady), conditionTrail(t, ns, corev1.PodReady)

	updateAdvancedDaemonSet(t, set, func(s *appsv1beta1.DaemonSet) { s.Spec.Template.Spec.Containers[0].Image = cluster.TestAppImage("v2") })
	waitAdvancedDaemonSet(t, set, "every pod updated in place", dsSettled(nodes))
	before.check(t, livePods(t, ns, "app=agent"), inPlaceReady, ready)
}

// TestRealNodeNeverReadyImageStopsTheRollout: an image whose readiness
// probe never passes (the kubelet runs it; nothing fakes it) stops an
// in-place rollout at maxUnavailable: one pod is updated and stays
// unready, the others keep the old image, and a PodUnavailableBudget over
// the pods counts it unavailable and allows no other disruption.
func TestRealNodeNeverReadyImageStopsTheRollout(t *testing.T) {
	ns := newNamespace(t)
	cs := newRealCloneSet(ns, "stuck", 3, "app")
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "3 pods available", settled(3))
	create(t, newBudget(ns, "stuck", policyv1alpha1.PodUnavailableBudgetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: cs.Spec.Selector.MatchLabels}, MaxUnavailable: ptr.To(intstr.FromInt32(1))}))
	waitBudget(t, ns, "stuck", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 3, DesiredAvailable: 2, CurrentAvailable: 3, UnavailableAllowed: 1})

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) {
		c.Spec.Template.Spec.Containers[0].Image = cluster.TestAppImage("broken")
	})
	var broken string
	eventually(t, time.Minute, "one pod running the broken image, unready", func(context.Context) (bool, string, error) {
		for _, p := range clonePods(t, cs) {
			st := containerStatus(&p, "app")
			if st.Image == cluster.TestAppImage("broken") && st.State.Running != nil && !st.Ready {
				broken = p.Name
				return true, "", nil
			}
		}
		return false, "not yet", nil
	})
	waitBudget(t, ns, "stuck", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 3, DesiredAvailable: 2, CurrentAvailable: 2, UnavailableAllowed: 0})
	// The probe keeps failing: for several probe periods nothing else
	// moves (sampled, the state must not change).
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		pods := clonePods(t, cs)
		onBroken := 0
		for _, p := range pods {
			if p.Spec.Containers[0].Image == cluster.TestAppImage("broken") {
				onBroken++
				if p.Name != broken {
					t.Fatalf("a second pod, %s, was updated while %s never became ready", p.Name, broken)
				}
			}
		}
		if len(pods) != 3 || onBroken != 1 {
			t.Fatalf("%d pods, %d on the broken image", len(pods), onBroken)
		}
		time.Sleep(time.Second)
	}
	var got appsv1alpha1.CloneSet
	if err := k8s.Get(context.Background(), ctrlclient.ObjectKeyFromObject(cs), &got); err != nil {
		t.Fatal(err)
	}
	if s := got.Status; s.UpdatedReplicas != 1 || s.UpdatedReadyReplicas != 0 || s.AvailableReplicas != 2 {
		t.Errorf("status %+v: want 1 updated, 0 of them ready, 2 available", s)
	}
	// A disruption the budget must refuse now: an eviction of a healthy pod.
	for _, p := range clonePods(t, cs) {
		if p.Name == broken {
			continue
		}
		if err := evictOnce(ns, p.Name); err == nil || !apierrors.IsTooManyRequests(err) {
			t.Errorf("evicting %s with the budget spent: %v, want 429", p.Name, err)
		}
		break
	}
}
