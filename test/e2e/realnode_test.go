package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/binaries"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

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
	alongside(t)
	ctx := context.Background()
	root, err := binaries.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	r := etcdUnderTest(t, "real-registry")
	ns := newNamespace(t)
	b, err := local.StartBridge(ctx, cluster.BridgeOptions{Root: root, Dir: local.Dir, Config: etcdBridgeConfig(t, "real", "real", ns, r.registry.Endpoint), Name: "lifeline-bridge-real"})
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
	alongside(t)
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
	alongside(t)
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
