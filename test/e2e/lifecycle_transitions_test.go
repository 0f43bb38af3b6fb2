package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/lifeline-k8s/lifeline/api/apps/pub"
	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// handler is one way an operator holds a pod: a label or a finalizer.
type handler struct {
	hook     pub.LifecycleHook
	present  func(*corev1.Pod) bool
	add, del string // JSON patches (RFC 6902) an operator sends
}

var handlers = map[string]handler{
	"labelsHandler": {
		hook:    pub.LifecycleHook{LabelsHandler: map[string]string{"example.com/registered": "true"}},
		present: func(p *corev1.Pod) bool { return p.Labels["example.com/registered"] == "true" },
		add:     `[{"op":"add","path":"/metadata/labels/example.com~1registered","value":"true"}]`,
		del:     `[{"op":"remove","path":"/metadata/labels/example.com~1registered"}]`,
	},
	"finalizersHandler": {
		hook:    pub.LifecycleHook{FinalizersHandler: []string{"example.com/registered"}},
		present: func(p *corev1.Pod) bool { return slices.Contains(p.Finalizers, "example.com/registered") },
		add:     `[{"op":"add","path":"/metadata/finalizers","value":["example.com/registered"]}]`,
		del:     `[{"op":"remove","path":"/metadata/finalizers"}]`,
	},
}

// TestLifecycleTransitions walks one pod through every transition of the
// lifecycle table (reference §2.3), once with a labelsHandler and once with
// a finalizersHandler, the operator being the test. The three hooks share
// the handler, as a registry operator's do: present means registered. A
// watch records every state the pod shows, so a skipped state fails the
// test even if it would have lasted a millisecond.
func TestLifecycleTransitions(t *testing.T) {
	alongside(t)
	for name, h := range handlers {
		t.Run(name, func(t *testing.T) {
			ns := newNamespace(t)
			cs := newCloneSet(ns, "walk", 1)
			cs.Spec.UpdateStrategy.Type = appsv1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
			cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(1))
			cs.Spec.Lifecycle = &pub.Lifecycle{PreNormal: ptr.To(h.hook), InPlaceUpdate: ptr.To(h.hook), PreDelete: ptr.To(h.hook)}
			states := recordStates(t, ns)
			createCloneSet(t, cs)
			operate := func(pod, patch string) {
				t.Helper()
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod}}
				if err := k8s.Patch(context.Background(), p, ctrlclient.RawPatch(types.JSONPatchType, []byte(patch))); err != nil {
					t.Fatal(err)
				}
			}
			inState := func(s pub.LifecycleStateType, more func(*corev1.Pod) bool) func(*corev1.Pod) bool {
				return func(p *corev1.Pod) bool {
					return p.Labels[pub.LifecycleStateKey] == string(s) && (more == nil || more(p))
				}
			}

			// New pod: held in PreparingNormal, and unavailable, until registered.
			waitCloneSet(t, cs, "one pod, Ready but not available", func(c *appsv1alpha1.CloneSet) bool {
				return c.Status.ObservedGeneration == c.Generation && c.Status.ReadyReplicas == 1 && c.Status.AvailableReplicas == 0
			})
			pod := clonePods(t, cs)[0].Name
			waitPod(t, ns, pod, "held in PreparingNormal", inState(pub.LifecycleStatePreparingNormal, nil))
			operate(pod, h.add)
			waitPod(t, ns, pod, "Normal once registered", inState(pub.LifecycleStateNormal, nil))
			waitCloneSet(t, cs, "available", settled(1))

			// In-place update: held in PreparingUpdate while registered.
			updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Template.Spec.Containers[0].Image = "nginx:1.28" })
			waitPod(t, ns, pod, "held in PreparingUpdate on the old image", inState(pub.LifecycleStatePreparingUpdate,
				func(p *corev1.Pod) bool { return p.Spec.Containers[0].Image == "nginx:1.27" }))
			operate(pod, h.del)
			waitPod(t, ns, pod, "updated, waiting in Updated to be registered again", inState(pub.LifecycleStateUpdated,
				func(p *corev1.Pod) bool { return p.Status.ContainerStatuses[0].Image == "nginx:1.28" }))
			operate(pod, h.add)
			waitPod(t, ns, pod, "Normal once registered again", inState(pub.LifecycleStateNormal, nil))

			// Scale-in: held in PreparingDelete while registered; scaling
			// back up revives it through PreparingNormal.
			updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](0) })
			waitPod(t, ns, pod, "held in PreparingDelete", inState(pub.LifecycleStatePreparingDelete, nil))
			updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](1) })
			waitPod(t, ns, pod, "revived, Normal as it is still registered", inState(pub.LifecycleStateNormal, nil))
			waitCloneSet(t, cs, "available again", settled(1))

			// Scale-in again; unregistering lets the pod go.
			updateCloneSet(t, cs, func(c *appsv1alpha1.CloneSet) { c.Spec.Replicas = ptr.To[int32](0) })
			waitPod(t, ns, pod, "held in PreparingDelete again", inState(pub.LifecycleStatePreparingDelete, nil))
			operate(pod, h.del)
			eventually(t, 2*time.Minute, "the pod deleted", func(ctx context.Context) (bool, string, error) {
				err := k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: pod}, &corev1.Pod{})
				return err != nil, fmt.Sprint(err), nil
			})

			want := []string{"PreparingNormal", "Normal", "PreparingUpdate", "Updating", "Updated", "Normal",
				"PreparingDelete", "PreparingNormal", "Normal", "PreparingDelete", "(deleted)"}
			eventually(t, 2*time.Minute, "every state seen by the watch", func(context.Context) (bool, string, error) {
				got := states(pod)
				return len(got) >= len(want), fmt.Sprint(got), nil
			})
			if got := states(pod); !slices.Equal(got, want) {
				t.Errorf("states\n got %v\nwant %v", got, want)
			}
		})
	}
}

// recordStates watches the pods of ns and returns what lifecycle states each
// pod went through, consecutive repeats folded, ending in "(deleted)".
func recordStates(t *testing.T, ns string) func(pod string) []string {
	t.Helper()
	return recordPods(t, ns, "", func(ev watch.EventType, pod *corev1.Pod) string {
		if ev == watch.Deleted {
			return "(deleted)"
		}
		return pod.Labels[pub.LifecycleStateKey]
	})
}

// recordPods watches the pods of ns matching selector with a watch of its
// own, and returns, per pod, what step makes of each event, consecutive
// repeats folded.
func recordPods(t *testing.T, ns, selector string, step func(watch.EventType, *corev1.Pod) string) func(pod string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string][]string{}
	go func() {
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			s := step(ev.Type, pod)
			mu.Lock()
			if steps := seen[pod.Name]; len(steps) == 0 || steps[len(steps)-1] != s {
				seen[pod.Name] = append(steps, s)
			}
			mu.Unlock()
		}
	}()
	return func(pod string) []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen[pod])
	}
}
