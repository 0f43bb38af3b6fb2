package integration

import (
	"context"
	"maps"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// labelHidingCache shows pods without one label while hiding is set, as a
// cache that has not yet seen an operator add it would.
type labelHidingCache struct {
	client.Client
	label  string
	hiding *atomic.Bool
}

func (c labelHidingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if pods, ok := list.(*corev1.PodList); ok && c.hiding.Load() {
		// The controller lists the cache's own pods, uncopied: hide
		// the label in copies of their labels, never in the cache.
		for i := range pods.Items {
			pods.Items[i].Labels = maps.Clone(pods.Items[i].Labels)
			delete(pods.Items[i].Labels, c.label)
		}
	}
	return nil
}

// TestPodWritesAreRefusedWhenTheirDecisionIsStale: pod writes are guarded
// by the labels a decision rested on, not by resourceVersion. An operator
// puts its inPlaceUpdate hook label on a pod; the controller's cache has not
// seen it and plans an in-place update. The real API server must refuse
// every such write, so the pod is neither made NotReady nor updated; once
// the cache shows the label, the pod waits in PreparingUpdate as the hook
// says.
func TestPodWritesAreRefusedWhenTheirDecisionIsStale(t *testing.T) {
	ctx := context.Background()
	const hold = "example.com/hold"
	hiding := &atomic.Bool{}
	runCloneSetController(t, func(c client.Client) client.Client { return labelHidingCache{Client: c, label: hold, hiding: hiding} })

	ns := newNamespace(t)
	cs := &appsv1alpha1.CloneSet{}
	loadSample(t, "cloneset-lifecycle-demo.yaml", cs)
	cs.Namespace = ns
	cs.Spec.Replicas = ptr.To[int32](1)
	cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
	cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{hold: "true"}}}
	if err := k8s.Create(ctx, cs); err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	poll(t, "the pod scheduled, with its InPlaceUpdateReady condition True", func(ctx context.Context) bool {
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(ns)); err != nil || len(pods.Items) != 1 {
			return false
		}
		pod = pods.Items[0]
		if pod.Spec.NodeName == "" {
			// No scheduler here: bind it as one would. The condition
			// is set in the write that makes the pod Normal.
			bindPod(t, &pod, "node-a")
			return false
		}
		return conditionStatus(&pod, pub.InPlaceUpdateReady) == corev1.ConditionTrue
	})
	oldImage := pod.Spec.Containers[0].Image

	hiding.Store(true)
	patch := []byte(`{"metadata":{"labels":{"` + hold + `":"true"}}}`)
	if err := k8s.Patch(ctx, &pod, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	before := staleWrites(t, ns)
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cs), cs); err != nil {
		t.Fatal(err)
	}
	cs.Spec.Template.Spec.Containers[0].Image = "nginx:1.29"
	if err := k8s.Update(ctx, cs); err != nil {
		t.Fatal(err)
	}
	poll(t, "in-place updates planned from the stale cache refused twice, or let through", func(ctx context.Context) bool {
		return staleWrites(t, ns) >= before+2 ||
			(k8s.Get(ctx, client.ObjectKeyFromObject(&pod), &pod) == nil && pod.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal))
	})
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(&pod), &pod); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.Containers[0].Image != oldImage || pod.Labels[pub.LifecycleStateKey] != string(pub.LifecycleStateNormal) ||
		conditionStatus(&pod, pub.InPlaceUpdateReady) != corev1.ConditionTrue {
		t.Fatalf("a write planned without the hook label went through: image %s, state %s, InPlaceUpdateReady %s",
			pod.Spec.Containers[0].Image, pod.Labels[pub.LifecycleStateKey], conditionStatus(&pod, pub.InPlaceUpdateReady))
	}

	hiding.Store(false)
	poll(t, "the pod held in PreparingUpdate once the cache shows the hook", func(ctx context.Context) bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(&pod), &pod) == nil &&
			pod.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingUpdate)
	})
	if pod.Spec.Containers[0].Image != oldImage {
		t.Errorf("image %s changed while the hook holds the pod", pod.Spec.Containers[0].Image)
	}
}

func conditionStatus(pod *corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

// staleWrites reads lifeline_cloneset_stale_pod_writes_total for the
// CloneSets of namespace ns.
func staleWrites(t *testing.T, ns string) float64 {
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != "lifeline_cloneset_stale_pod_writes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "namespace" && l.GetValue() == ns {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total
}

// bindPod binds pod to node through pods/binding, as kube-scheduler does.
func bindPod(t *testing.T, pod *corev1.Pod, node string) {
	t.Helper()
	binding := &corev1.Binding{Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	if err := k8s.SubResource("binding").Create(context.Background(), pod, binding); err != nil {
		t.Fatal(err)
	}
}
