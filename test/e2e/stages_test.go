package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestNodesLookLikeKubeletNodesAndHoldLeases(t *testing.T) {
	ctx := context.Background()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "node.lifeline.dev/fake=true"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 3 {
		t.Fatalf("%d nodes, want 3", len(nodes.Items))
	}
	var zones []string
	renewed := map[string]time.Time{}
	for _, n := range nodes.Items {
		l := n.Labels
		if l[corev1.LabelHostname] != n.Name || l[corev1.LabelOSStable] != "linux" || l[corev1.LabelArchStable] != "amd64" {
			t.Errorf("node %s labels: %v", n.Name, l)
		}
		zones = append(zones, l[corev1.LabelTopologyZone])
		if len(n.Spec.Taints) != 0 || n.Spec.Unschedulable {
			t.Errorf("node %s is not schedulable: %+v", n.Name, n.Spec)
		}
		lease, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("node %s has no lease: %v", n.Name, err)
		}
		// kwok holds the leases under its own identity, where a kubelet
		// would use the node name; what matters is that they are held.
		if ptr.Deref(lease.Spec.HolderIdentity, "") == "" || ptr.Deref(lease.Spec.LeaseDurationSeconds, 0) != 40 || lease.Spec.RenewTime == nil {
			t.Fatalf("lease of %s: %+v", n.Name, lease.Spec)
		}
		renewed[n.Name] = lease.Spec.RenewTime.Time
	}
	slices.Sort(zones)
	if !slices.Equal(zones, []string{"zone-a", "zone-b", "zone-c"}) {
		t.Errorf("zones %v, want one node in each of zone-a, zone-b, zone-c", zones)
	}
	// The leases are kept fresh: that, not status updates, keeps the
	// nodes Ready.
	eventually(t, time.Minute, "every node lease renewed", func(ctx context.Context) (bool, string, error) {
		leases, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		stale := []string{}
		for _, l := range leases.Items {
			if first, ok := renewed[l.Name]; ok && !renewTime(&l).After(first) {
				stale = append(stale, l.Name)
			}
		}
		return len(stale) == 0, fmt.Sprintf("not renewed yet: %v", stale), nil
	})
}

func renewTime(l *coordinationv1.Lease) time.Time {
	if l.Spec.RenewTime == nil {
		return time.Time{}
	}
	return l.Spec.RenewTime.Time
}

func TestDeploymentOf100PodsBecomesReadyAndScalesAway(t *testing.T) {
	alongside(t)
	ctx := context.Background()
	ns := newNamespace(t)
	labels := map[string]string{"app": "hundred"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "hundred", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](100),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}},
			},
		},
	}
	if _, err := client.AppsV1().Deployments(ns).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 4*time.Minute, "100 available replicas", func(ctx context.Context) (bool, string, error) {
		d, err := client.AppsV1().Deployments(ns).Get(ctx, deploy.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return d.Status.AvailableReplicas == 100, fmt.Sprintf("status %+v", d.Status), nil
	})
	pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	perNode := map[string]int{}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || podCondition(&p, corev1.PodReady) != corev1.ConditionTrue || p.Status.PodIP == "" {
			t.Fatalf("pod %s: phase %s, Ready %s, IP %q", p.Name, p.Status.Phase, podCondition(&p, corev1.PodReady), p.Status.PodIP)
		}
		perNode[p.Spec.NodeName]++
	}
	if len(pods.Items) != 100 || len(perNode) != 3 {
		t.Fatalf("%d pods over nodes %v; want 100 over all 3 nodes", len(pods.Items), perNode)
	}

	// Scaling to zero deletes the pods through the real ReplicaSet
	// controller; the simulated kubelet lets them go.
	scale, err := client.AppsV1().Deployments(ns).GetScale(ctx, deploy.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 0
	if _, err := client.AppsV1().Deployments(ns).UpdateScale(ctx, deploy.Name, scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "every pod gone", func(ctx context.Context) (bool, string, error) {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods left", len(pods.Items)), nil
	})
}

func TestReadinessGateHoldsPodNotReadyUntilItsConditionIsTrue(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	const gate corev1.PodConditionType = "example.com/registered"
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gated", Namespace: ns},
		Spec: corev1.PodSpec{
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: gate}},
			Containers:     []corev1.Container{{Name: "main", Image: "nginx:1.27"}},
		},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Started, containers ready, but not Ready: the gate is not True.
	waitPod(t, ns, pod.Name, "running with ready containers", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && podCondition(p, corev1.ContainersReady) == corev1.ConditionTrue
	})
	got, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if podCondition(got, corev1.PodReady) != corev1.ConditionFalse || podCondition(got, gate) != "" {
		t.Fatalf("before the gate is set: Ready %q, gate %q; want False and unset", podCondition(got, corev1.PodReady), podCondition(got, gate))
	}

	setPodCondition(t, ns, pod.Name, gate, corev1.ConditionTrue)
	waitPod(t, ns, pod.Name, "Ready once the gate is True", func(p *corev1.Pod) bool {
		return podCondition(p, corev1.PodReady) == corev1.ConditionTrue
	})
	// What markPodNotReady does: the gate goes False and the pod follows.
	setPodCondition(t, ns, pod.Name, gate, corev1.ConditionFalse)
	waitPod(t, ns, pod.Name, "NotReady once the gate is False", func(p *corev1.Pod) bool {
		return podCondition(p, corev1.PodReady) == corev1.ConditionFalse
	})
}

func TestInPlaceImageChangeShowsInContainerStatus(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "inplace", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "main", Image: "nginx:1.27"},
			{Name: "sidecar", Image: "envoy:1.30"},
		}},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := waitPod(t, ns, pod.Name, "Ready", func(p *corev1.Pod) bool {
		return podCondition(p, corev1.PodReady) == corev1.ConditionTrue
	})

	patch := []byte(`{"spec":{"containers":[{"name":"main","image":"nginx:1.28"}]}}`)
	if _, err := client.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	after := waitPod(t, ns, pod.Name, "the new image in the container status", func(p *corev1.Pod) bool {
		return p.Status.ContainerStatuses[0].Image == "nginx:1.28"
	})
	was, is := before.Status.ContainerStatuses[0], after.Status.ContainerStatuses[0]
	if is.ImageID == was.ImageID || is.ContainerID == was.ContainerID || is.RestartCount != was.RestartCount+1 || !is.Ready {
		t.Errorf("main container after the change: %+v\nbefore: %+v", is, was)
	}
	if side := after.Status.ContainerStatuses[1]; side.RestartCount != 0 || side.ContainerID != before.Status.ContainerStatuses[1].ContainerID {
		t.Errorf("sidecar restarted: %+v", side)
	}
	if after.UID != before.UID || after.Status.PodIP != before.Status.PodIP || after.Spec.NodeName != before.Spec.NodeName {
		t.Errorf("the pod was replaced: uid %s→%s, ip %s→%s, node %s→%s",
			before.UID, after.UID, before.Status.PodIP, after.Status.PodIP, before.Spec.NodeName, after.Spec.NodeName)
	}
	waitPod(t, ns, pod.Name, "Ready after the restart", func(p *corev1.Pod) bool {
		return podCondition(p, corev1.PodReady) == corev1.ConditionTrue
	})
}

// TestUnpullableImageNeverBecomesReady: an image under unpullable.invalid/
// waits in ErrImagePull, at the start and after an in-place change, and
// the pod is never Ready with it; a good image again makes it Ready.
func TestUnpullableImageNeverBecomesReady(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "unpullable.invalid/nginx:1.27"}}}}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pulling := func(p *corev1.Pod) bool {
		s := p.Status.ContainerStatuses
		return len(s) == 1 && s[0].State.Waiting != nil && s[0].State.Waiting.Reason == "ErrImagePull" &&
			podCondition(p, corev1.PodReady) == corev1.ConditionFalse
	}
	waitPod(t, ns, pod.Name, "ErrImagePull and not Ready", pulling)
	setImage := func(image string) {
		patch := []byte(`{"spec":{"containers":[{"name":"main","image":"` + image + `"}]}}`)
		if _, err := client.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setImage("nginx:1.27")
	waitPod(t, ns, pod.Name, "Ready with a good image", func(p *corev1.Pod) bool {
		return podCondition(p, corev1.PodReady) == corev1.ConditionTrue && p.Status.ContainerStatuses[0].Image == "nginx:1.27"
	})
	setImage("unpullable.invalid/nginx:1.28")
	waitPod(t, ns, pod.Name, "ErrImagePull and not Ready after an in-place change", func(p *corev1.Pod) bool {
		return pulling(p) && p.Status.ContainerStatuses[0].Image == "unpullable.invalid/nginx:1.28"
	})
}

func TestDeletedPodWaitsForItsFinalizersThenGoes(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: ns, Finalizers: []string{"example.com/hold"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, pod.Name, "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	if err := client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The simulated kubelet has finished with the pod once the grace
	// period is cut to zero; the finalizer still holds the object.
	held := waitPod(t, ns, pod.Name, "deleted by the kubelet, held by the finalizer", func(p *corev1.Pod) bool {
		return p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0
	})
	if !slices.Equal(held.Finalizers, []string{"example.com/hold"}) {
		t.Fatalf("finalizers touched: %v", held.Finalizers)
	}
	if _, err := client.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "pod gone", func(ctx context.Context) (bool, string, error) {
		_, err := client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err), nil
	})
}

// waitPod polls a pod until ok holds, and returns it.
func waitPod(t *testing.T, ns, name, what string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	seen := "nothing yet"
	eventually(t, time.Minute, fmt.Sprintf("pod %s %s", name, what), func(ctx context.Context) (bool, string, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, seen, nil
		}
		pod = p
		seen = fmt.Sprintf("labels %v, spec images %v, status %+v", p.Labels, p.Spec.Containers[0].Image, p.Status)
		return ok(p), seen, nil
	})
	return pod
}

// setPodCondition writes a pod condition the way a controller owning a
// readiness gate does.
func setPodCondition(t *testing.T, ns, name string, ct corev1.PodConditionType, status corev1.ConditionStatus) {
	t.Helper()
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":%q,"lastTransitionTime":%q}]}}`, ct, status, time.Now().UTC().Format(time.RFC3339))
	if _, err := client.CoreV1().Pods(ns).Patch(context.Background(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
