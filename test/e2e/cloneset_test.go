package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/test/testenv"
)

func newCloneSet(ns, name string, replicas int32) *appsv1alpha1.CloneSet {
	labels := map[string]string{"app": name}
	return &appsv1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1alpha1.CloneSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}},
			},
		},
	}
}

func createCloneSet(t *testing.T, cs *appsv1alpha1.CloneSet) {
	t.Helper()
	if err := k8s.Create(context.Background(), cs); err != nil {
		t.Fatal(err)
	}
}

// settled: every pod is at the update revision, available, and status is
// current.
func settled(replicas int32) func(*appsv1alpha1.CloneSet) bool {
	return func(cs *appsv1alpha1.CloneSet) bool {
		s := cs.Status
		return s.ObservedGeneration == cs.Generation && s.Replicas == replicas && s.UpdatedReplicas == replicas &&
			s.AvailableReplicas == replicas && s.UpdatedAvailableReplicas == replicas && s.ReadyReplicas == replicas &&
			s.CurrentRevision == s.UpdateRevision
	}
}

// waitSettledWatchingAvailability waits until the CloneSet is settled at
// replicas and returns the fewest available pods its current status showed
// meanwhile.
func waitSettledWatchingAvailability(t *testing.T, cs *appsv1alpha1.CloneSet, what string, replicas int32) int32 {
	t.Helper()
	minAvailable := replicas
	waitCloneSet(t, cs, what, func(c *appsv1alpha1.CloneSet) bool {
		if c.Status.ObservedGeneration == c.Generation {
			minAvailable = min(minAvailable, c.Status.AvailableReplicas)
		}
		return settled(replicas)(c)
	})
	return minAvailable
}

func clonePods(t *testing.T, cs *appsv1alpha1.CloneSet) []corev1.Pod {
	t.Helper()
	list := &corev1.PodList{}
	if err := k8s.List(context.Background(), list, ctrlclient.InNamespace(cs.Namespace), ctrlclient.MatchingLabels(cs.Spec.Selector.MatchLabels)); err != nil {
		t.Fatal(err)
	}
	var live []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live
}

func TestCloneSetScalesUpWithNamedPodsAndFullStatus(t *testing.T) {
	ns := newNamespace(t)
	cs := newCloneSet(ns, "web", 5)
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "5 pods available", settled(5))

	st := cs.Status
	if st.LabelSelector != "app=web" || st.ExpectedUpdatedReplicas != 5 || st.CollisionCount == nil || *st.CollisionCount != 0 ||
		!strings.HasPrefix(st.UpdateRevision, "web-") {
		t.Errorf("status: %+v", st)
	}
	// The pods' owner reference names the version the API server's
	// discovery prefers, the one kube-controller-manager's garbage
	// collector observes CloneSets in: another version makes it read
	// every new pod and its CloneSet back from the API server.
	group, err := client.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	preferred := ""
	for _, g := range group.Groups {
		if g.Name == appsv1alpha1.GroupVersion.Group {
			preferred = g.PreferredVersion.GroupVersion
		}
	}
	ids := map[string]bool{}
	for _, p := range clonePods(t, cs) {
		id := p.Labels[appsv1alpha1.CloneSetInstanceID]
		if p.Name != "web-"+id || len(id) != 5 || ids[id] {
			t.Errorf("pod %s: instance id %q", p.Name, id)
		}
		ids[id] = true
		if p.Labels[appsv1.ControllerRevisionHashLabelKey] != st.UpdateRevision || p.Labels[pub.LifecycleStateKey] != "Normal" ||
			p.Annotations[pub.LifecycleTimestampKey] == "" || p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != strings.TrimPrefix(st.UpdateRevision, "web-") {
			t.Errorf("pod %s labels %v annotations %v", p.Name, p.Labels, p.Annotations)
		}
		if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != cs.UID || ref.APIVersion != preferred || preferred != "apps.kruise.io/v1beta1" {
			t.Errorf("pod %s owner %+v; preferred version %s", p.Name, ref, preferred)
		}
	}
	if len(ids) != 5 {
		t.Errorf("%d pods", len(ids))
	}
	// The revision name is OpenKruise's for the same manifest, defaults
	// and all (the golden vector OpenKruise v1.9.0's own code recorded),
	// so migrated pods stay at their revision.
	want := testenv.RevisionNames(t, "internal/revision/testdata/kruise-v1.9.0.json")["demo"]
	if want == "" {
		t.Fatal("no golden vector for demo")
	}
	demo := newCloneSet(ns, "demo", 1)
	demo.Spec.Template.Labels = map[string]string{"app": "demo"}
	demo.Spec.Selector.MatchLabels = map[string]string{"app": "demo"}
	demo.Spec.Template.Spec.Containers[0].Image = "nginx:alpine"
	createCloneSet(t, demo)
	waitCloneSet(t, demo, "revision", func(c *appsv1alpha1.CloneSet) bool { return c.Status.UpdateRevision != "" })
	if demo.Status.UpdateRevision != want {
		t.Errorf("revision %s, OpenKruise names it %s", demo.Status.UpdateRevision, want)
	}
}

func TestCloneSetRecreateUpdateRespectsMaxUnavailableAndPartition(t *testing.T) {
	ns := newNamespace(t)
	cs := newCloneSet(ns, "roll", 4)
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "4 pods available", settled(4))
	firstRevision := cs.Status.UpdateRevision

	// partition 99% of 4 updates exactly one pod (the v1.2 rule).
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) {
		c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28"
		c.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("99%"))
	})
	waitCloneSet(t, cs, "one pod updated", func(c *appsv1alpha1.CloneSet) bool {
		s := c.Status
		if s.AvailableReplicas < 3 && s.ObservedGeneration == c.Generation && s.Replicas == 4 {
			t.Fatalf("%d of 4 available with maxUnavailable 1: %+v", s.AvailableReplicas, s)
		}
		return s.ObservedGeneration == c.Generation && s.UpdatedAvailableReplicas == 1 && s.AvailableReplicas == 4 && s.Replicas == 4
	})
	if cs.Status.ExpectedUpdatedReplicas != 1 || cs.Status.CurrentRevision != firstRevision || cs.Status.UpdatedReplicas != 1 {
		t.Errorf("under partition: %+v", cs.Status)
	}

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.UpdateStrategy.Partition = nil })
	if minAvailable := waitSettledWatchingAvailability(t, cs, "all pods updated", 4); minAvailable < 3 {
		t.Errorf("availability fell to %d of 4 with maxUnavailable 1", minAvailable)
	}
	for _, p := range clonePods(t, cs) {
		if p.Spec.Containers[0].Image != "nginx:1.28" {
			t.Errorf("pod %s still runs %s", p.Name, p.Spec.Containers[0].Image)
		}
	}
}

func TestCloneSetScaleInOrderAndSpecifiedDeletes(t *testing.T) {
	ns := newNamespace(t)
	cs := newCloneSet(ns, "order", 4)
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "4 pods available", settled(4))
	pods := clonePods(t, cs)

	// The cheapest pod goes first on scale-in.
	cheap := pods[2].Name
	patchPod(t, ns, cheap, `{"metadata":{"annotations":{"controller.kubernetes.io/pod-deletion-cost":"-100"}}}`)
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](3) })
	waitCloneSet(t, cs, "3 pods", settled(3))
	if names := podNames(clonePods(t, cs)); slices.Contains(names, cheap) {
		t.Errorf("scale-in kept %s, the pod with the lowest deletion cost: %v", cheap, names)
	}

	// podsToDelete: that pod goes, a new one replaces it, the list is pruned.
	pods = clonePods(t, cs)
	victim := pods[0].Name
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.ScaleStrategy.PodsToDelete = []string{victim} })
	waitCloneSet(t, cs, "podsToDelete done", func(c *appsv1alpha1.CloneSet) bool {
		return len(c.Spec.ScaleStrategy.PodsToDelete) == 0 && settled(3)(c) && !slices.Contains(podNames(clonePods(t, c)), victim)
	})

	// The specified-delete label does the same.
	pods = clonePods(t, cs)
	victim = pods[1].Name
	patchPod(t, ns, victim, `{"metadata":{"labels":{"apps.kruise.io/specified-delete":"true"}}}`)
	waitCloneSet(t, cs, "specified-delete pod replaced", func(c *appsv1alpha1.CloneSet) bool {
		return settled(3)(c) && !slices.Contains(podNames(clonePods(t, c)), victim)
	})
}

func TestCloneSetPVCsAreCreatedAndReusedByRebuiltPods(t *testing.T) {
	alongside(t)
	ctx := context.Background()
	ns := newNamespace(t)
	cs := newCloneSet(ns, "data", 2)
	cs.Spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{{
		ObjectMeta: metav1.ObjectMeta{Name: "vol"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: mustQuantity("1Gi")}},
		},
	}}
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "2 pods available", settled(2))
	pods := clonePods(t, cs)
	for _, p := range pods {
		pvc := &corev1.PersistentVolumeClaim{}
		name := "vol-data-" + p.Labels[appsv1alpha1.CloneSetInstanceID]
		if err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: name}, pvc); err != nil {
			t.Fatalf("pvc of %s: %v", p.Name, err)
		}
		if p.Spec.Volumes[0].PersistentVolumeClaim == nil || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != name {
			t.Errorf("pod %s volumes %+v", p.Name, p.Spec.Volumes)
		}
	}
	// A pod deleted by someone else comes back with its name and claim.
	lost := pods[0]
	if err := k8s.Delete(ctx, &lost); err != nil {
		t.Fatal(err)
	}
	waitCloneSet(t, cs, "the lost pod rebuilt", func(c *appsv1alpha1.CloneSet) bool {
		pods := clonePods(t, c)
		for _, p := range pods {
			if p.Name == lost.Name && p.UID != lost.UID {
				return settled(2)(c) && len(pods) == 2
			}
		}
		return false
	})
	// With disablePVCReuse, a rebuilt pod gets a new instance and claim,
	// and the old claim goes.
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.ScaleStrategy.DisablePVCReuse = true })
	waitCloneSet(t, cs, "2 pods after the change", func(c *appsv1alpha1.CloneSet) bool {
		pods = clonePods(t, c)
		return settled(2)(c) && len(pods) == 2
	})
	lost = pods[1]
	lostClaim := "vol-data-" + lost.Labels[appsv1alpha1.CloneSetInstanceID]
	if err := k8s.Delete(ctx, &lost); err != nil {
		t.Fatal(err)
	}
	waitCloneSet(t, cs, "a new instance replaces the lost pod", func(c *appsv1alpha1.CloneSet) bool {
		return settled(2)(c) && !slices.Contains(podNames(clonePods(t, c)), lost.Name)
	})
	eventually(t, time.Minute, "the old claim gone", func(ctx context.Context) (bool, string, error) {
		pvc := &corev1.PersistentVolumeClaim{}
		err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: lostClaim}, pvc)
		return apierrors.IsNotFound(err) || (err == nil && pvc.DeletionTimestamp != nil), fmt.Sprint(err), nil
	})
	// The controller scaling in deletes the pod's claims with it.
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](0) })
	eventually(t, time.Minute, "claims deleted with their pods", func(ctx context.Context) (bool, string, error) {
		list := &corev1.PersistentVolumeClaimList{}
		if err := k8s.List(ctx, list, ctrlclient.InNamespace(ns)); err != nil {
			return false, err.Error(), nil
		}
		live := 0
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				live++
			}
		}
		return live == 0, fmt.Sprintf("%d claims left", live), nil
	})
}

func TestCloneSetPreDeleteHookHoldsPodUntilReleased(t *testing.T) {
	ns := newNamespace(t)
	cs := newCloneSet(ns, "hooked", 2)
	cs.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{"example.com/drain": "true"}}}
	cs.Spec.Template.Labels["example.com/drain"] = "true"
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "2 pods available", settled(2))

	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](1) })
	var held string
	eventually(t, time.Minute, "a pod in PreparingDelete", func(context.Context) (bool, string, error) {
		for _, p := range clonePods(t, cs) {
			if p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingDelete) {
				held = p.Name
				return true, "", nil
			}
		}
		return false, "none yet", nil
	})
	// Held: a controller restart does not delete it either.
	if err := restartManager(); err != nil {
		t.Fatal(err)
	}
	waitCloneSet(t, cs, "status counts the held pod", func(c *appsv1alpha1.CloneSet) bool {
		return c.Status.ObservedGeneration == c.Generation && c.Status.Replicas == 2 && c.Status.AvailableReplicas == 1
	})
	if !slices.Contains(podNames(clonePods(t, cs)), held) {
		t.Fatalf("held pod %s was deleted", held)
	}
	// Held longer than the warning threshold, the CloneSet says why.
	eventually(t, time.Minute, "a LifecycleHookWaiting event", func(ctx context.Context) (bool, string, error) {
		events, err := client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		for _, e := range events.Items {
			if e.Reason == "LifecycleHookWaiting" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, held+" (PreparingDelete)") {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d events", len(events.Items)), nil
	})
	patchPod(t, ns, held, `{"metadata":{"labels":{"example.com/drain":"false"}}}`)
	waitCloneSet(t, cs, "released pod deleted", func(c *appsv1alpha1.CloneSet) bool {
		return settled(1)(c) && !slices.Contains(podNames(clonePods(t, c)), held)
	})
}

func TestCloneSetNeverOvershootsAcrossControllerRestarts(t *testing.T) {
	ns := newNamespace(t)
	cs := newCloneSet(ns, "restart", 20)
	// Every pod that ever exists in the namespace, in watch order.
	w, err := client.CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	createCloneSet(t, cs)
	// Restart the manager mid scale-up, three times, with creations in
	// flight and a fresh cache each time.
	for _, seen := range []int{1, 5, 10} {
		eventually(t, time.Minute, fmt.Sprintf("%d pods", seen), func(context.Context) (bool, string, error) {
			n := len(clonePods(t, cs))
			return n >= seen, fmt.Sprintf("%d pods", n), nil
		})
		if err := restartManager(); err != nil {
			t.Fatal(err)
		}
	}
	waitCloneSet(t, cs, "20 pods available", settled(20))
	final := podNames(clonePods(t, cs))
	ever, deleted := map[string]bool{}, map[string]bool{}
	eventually(t, time.Minute, "the watch to show the final pods", func(context.Context) (bool, string, error) {
		for {
			select {
			case ev := <-w.ResultChan():
				if p, ok := ev.Object.(*corev1.Pod); ok {
					ever[p.Name] = true
					if ev.Type == watch.Deleted || p.DeletionTimestamp != nil {
						deleted[p.Name] = true
					}
				}
				continue
			default:
			}
			break
		}
		for _, name := range final {
			if !ever[name] {
				return false, fmt.Sprintf("%d of 20 seen", len(ever)), nil
			}
		}
		return true, "", nil
	})
	if len(ever) != 20 {
		t.Errorf("%d pods existed for 20 replicas across restarts", len(ever))
	}
	// Seen by the watch, not the manager's counters, which each restart
	// starts from zero.
	if len(deleted) != 0 {
		t.Errorf("pods deleted while scaling up: %v", deleted)
	}
}

func patchPod(t *testing.T, ns, name, patch string) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := k8s.Patch(context.Background(), pod, ctrlclient.RawPatch("application/strategic-merge-patch+json", []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

func podNames(pods []corev1.Pod) []string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return names
}

func TestCloneSetScaleInEvensOutTopologySpread(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	cs := newCloneSet(ns, "spread", 4)
	cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	cs.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
	}}
	createCloneSet(t, cs)
	waitCloneSet(t, cs, "4 pods available", settled(4))
	zones := func() map[string]int {
		out := map[string]int{}
		for _, p := range clonePods(t, cs) {
			node := &corev1.Node{}
			if err := k8s.Get(ctx, ctrlclient.ObjectKey{Name: p.Spec.NodeName}, node); err != nil {
				t.Fatal(err)
			}
			out[node.Labels[corev1.LabelTopologyZone]]++
		}
		return out
	}
	// Three zones hold four pods: one zone has two. Scaling in to three
	// takes one of those two.
	before := zones()
	crowded := ""
	for z, n := range before {
		if n > 1 {
			crowded = z
		}
	}
	if crowded == "" {
		t.Fatalf("four pods in three zones, none crowded: %v", before)
	}
	updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](3) })
	waitCloneSet(t, cs, "3 pods", settled(3))
	if after := zones(); len(after) != 3 {
		t.Errorf("scale-in left zones %v (before %v); want one pod in each", after, before)
	}
}
