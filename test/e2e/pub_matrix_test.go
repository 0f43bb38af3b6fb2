package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/lifeline-k8s/lifeline/api/policy/v1alpha1"
)

// matrixTemplate is the pod every workload of the matrix runs: one
// container with requests to resize.
func matrixTemplate(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}}}}
}

// A workload kind of the matrix: it creates three replicas named name in
// ns and returns the budget target that names it.
type matrixWorkload func(t *testing.T, ns, name string) *policyv1alpha1.TargetReference

var matrixWorkloads = map[string]matrixWorkload{
	"cloneset": func(t *testing.T, ns, name string) *policyv1alpha1.TargetReference {
		cs := newCloneSet(ns, name, 3)
		cs.Spec.Template = matrixTemplate(name)
		createCloneSet(t, cs)
		return &policyv1alpha1.TargetReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: name}
	},
	// The Deployment's budget selects its pods by label rather than
	// naming it, so both ways of finding a pod's budget are exercised.
	"deployment": func(t *testing.T, ns, name string) *policyv1alpha1.TargetReference {
		create(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, Template: matrixTemplate(name)}})
		return nil
	},
	"statefulset": func(t *testing.T, ns, name string) *policyv1alpha1.TargetReference {
		create(t, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3), ServiceName: name, PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, Template: matrixTemplate(name)}})
		return &policyv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name}
	},
	// Pods with no owner at all: the budget selects them, and
	// protect-total-replicas says how many to expect (set by the test).
	"pods": func(t *testing.T, ns, name string) *policyv1alpha1.TargetReference {
		for i := 0; i < 3; i++ {
			template := matrixTemplate(name)
			create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", name, i), Labels: template.Labels}, Spec: template.Spec})
		}
		return nil
	},
	"fleet": func(t *testing.T, ns, name string) *policyv1alpha1.TargetReference {
		createFleet(t, ns, name, 3)
		return &policyv1alpha1.TargetReference{APIVersion: "example.lifeline.dev/v1", Kind: "Fleet", Name: name}
	},
}

func create(t *testing.T, obj ctrlclient.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

// createFleet creates a Fleet (fleetCRD) and, as its controller would,
// its pods.
func createFleet(t *testing.T, ns, name string, replicas int) {
	t.Helper()
	ctx := context.Background()
	fleet := &unstructured.Unstructured{}
	fleet.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.lifeline.dev", Version: "v1", Kind: "Fleet"})
	fleet.SetNamespace(ns)
	fleet.SetName(name)
	_ = unstructured.SetNestedField(fleet.Object, int64(replicas), "spec", "replicas")
	create(t, fleet)
	_ = unstructured.SetNestedField(fleet.Object, "app="+name, "status", "selector")
	_ = unstructured.SetNestedField(fleet.Object, int64(replicas), "status", "replicas")
	if err := k8s.Status().Update(ctx, fleet); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < replicas; i++ {
		template := matrixTemplate(name)
		create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", name, i), Labels: template.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.lifeline.dev/v1", Kind: "Fleet", Name: name, UID: fleet.GetUID(), Controller: ptr.To(true)}}},
			Spec: template.Spec})
	}
}

// A disruption of the matrix: what it does to a pod, whether it took
// effect on the pod as read back, and the refusal it meets beyond the
// budget.
type matrixDisruption struct {
	do func(ctx context.Context, ns string, pod corev1.Pod) error
	// done judges pod as read back now (nil when gone) against before.
	done    func(before corev1.Pod, pod *corev1.Pod) bool
	refused func(error) bool
}

var matrixDisruptions = map[string]matrixDisruption{
	"delete": {
		do: func(ctx context.Context, ns string, pod corev1.Pod) error {
			return client.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{})
		},
		done: gone, refused: apierrors.IsForbidden,
	},
	"evict": {
		do: func(ctx context.Context, ns string, pod corev1.Pod) error {
			return client.CoreV1().Pods(ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: pod.Name}})
		},
		done: gone, refused: apierrors.IsTooManyRequests,
	},
	"image": {
		do: func(ctx context.Context, ns string, pod corev1.Pod) error {
			_, err := client.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.StrategicMergePatchType,
				[]byte(`{"spec":{"containers":[{"name":"main","image":"nginx:1.28"}]}}`), metav1.PatchOptions{})
			return err
		},
		done: func(_ corev1.Pod, pod *corev1.Pod) bool {
			return pod != nil && pod.Spec.Containers[0].Image == "nginx:1.28"
		}, refused: apierrors.IsForbidden,
	},
	"label": {
		do: func(ctx context.Context, ns string, pod corev1.Pod) error {
			_, err := client.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType,
				[]byte(`{"metadata":{"labels":{"unavailable-pod.kruise.io/maintenance":"true"}}}`), metav1.PatchOptions{})
			return err
		},
		done: func(_ corev1.Pod, pod *corev1.Pod) bool {
			return pod != nil && pod.Labels["unavailable-pod.kruise.io/maintenance"] == "true"
		}, refused: apierrors.IsForbidden,
	},
	"resize": {
		do: func(ctx context.Context, ns string, pod corev1.Pod) error {
			pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
			// Unconditional: what is judged is the budget's answer, and
			// other writers (kwok's status, the budget's related-pub
			// annotations) may have moved the pod on since it was read.
			pod.ResourceVersion = ""
			_, err := client.CoreV1().Pods(ns).UpdateResize(ctx, pod.Name, &pod, metav1.UpdateOptions{})
			return err
		},
		done: func(_ corev1.Pod, pod *corev1.Pod) bool {
			return pod != nil && pod.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() == 200
		}, refused: apierrors.IsForbidden,
	},
}

// gone: the pod is gone, going, or already replaced by a new pod of the
// same name (a StatefulSet's).
func gone(before corev1.Pod, pod *corev1.Pod) bool {
	return pod == nil || pod.DeletionTimestamp != nil || pod.UID != before.UID
}

// TestPodUnavailableBudgetMatrix: for a CloneSet, a Deployment, a
// StatefulSet, a custom workload with a scale subresource and pods with no
// owner (counted by protect-total-replicas), each of
// three pods under a budget allowing one unavailable (every operation
// guarded), a delete, an eviction, an image update, an unavailable-pod
// label and a resize of one pod go through, and the same disruption of a
// second pod is refused (an eviction with 429, the rest with 403), naming
// the budget; read back from the API server, the first pod was disrupted
// and the second was not.
func TestPodUnavailableBudgetMatrix(t *testing.T) {
	fleetCRD(t)
	for kind, makeWorkload := range matrixWorkloads {
		for op, disrupt := range matrixDisruptions {
			t.Run(kind+"/"+op, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				ns := newNamespace(t)
				name := kind
				target := makeWorkload(t, ns, name)
				spec := policyv1alpha1.PodUnavailableBudgetSpec{TargetReference: target, MaxUnavailable: ptr.To(intstr.FromInt32(1))}
				if target == nil {
					spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
				}
				b := newBudget(ns, name, spec)
				b.Annotations = map[string]string{policyv1alpha1.PubProtectOperationAnnotation: "DELETE,UPDATE,EVICT,RESIZE"}
				if kind == "pods" {
					b.Annotations[policyv1alpha1.PubProtectTotalReplicasAnnotation] = "3"
				}
				create(t, b)
				waitBudget(t, ns, name, policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 3, DesiredAvailable: 2, CurrentAvailable: 3, UnavailableAllowed: 1})

				pods := livePods(t, ns, "app="+name)
				if err := disrupt.do(ctx, ns, pods[0]); err != nil {
					t.Fatalf("the one allowed %s of %s: %v", op, pods[0].Name, err)
				}
				err := disrupt.do(ctx, ns, pods[1])
				if !disrupt.refused(err) || !strings.Contains(err.Error(), "PodUnavailableBudget "+name+" allows no more unavailable pods") {
					t.Errorf("a second %s: %v", op, err)
				}
				if first := readPod(t, ns, pods[0].Name); !disrupt.done(pods[0], first) {
					t.Errorf("%s admitted but not done", pods[0].Name)
				}
				if second := readPod(t, ns, pods[1].Name); disrupt.done(pods[1], second) {
					t.Errorf("%s refused but done anyway", pods[1].Name)
				}
			})
		}
	}
}

// TestPodUnavailableBudgetProtectOperations: a budget that guards only
// deletions and evictions lets image updates and resizes of its pods
// through however many there are, and still refuses a second delete.
func TestPodUnavailableBudgetProtectOperations(t *testing.T) {
	alongside(t)
	ctx := context.Background()
	ns := newNamespace(t)
	cs := newCloneSet(ns, "web", 3)
	cs.Spec.Template = matrixTemplate("web")
	createCloneSet(t, cs)
	b := newBudget(ns, "web", policyv1alpha1.PodUnavailableBudgetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MaxUnavailable: ptr.To(intstr.FromInt32(1))})
	b.Annotations = map[string]string{policyv1alpha1.PubProtectOperationAnnotation: "DELETE,EVICT"}
	create(t, b)
	waitBudget(t, ns, "web", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 3, DesiredAvailable: 2, CurrentAvailable: 3, UnavailableAllowed: 1})
	pods := livePods(t, ns, "app=web")
	for _, op := range []string{"image", "resize"} {
		for _, pod := range pods {
			if err := matrixDisruptions[op].do(ctx, ns, *readPod(t, ns, pod.Name)); err != nil {
				t.Errorf("%s of %s under a budget not guarding it: %v", op, pod.Name, err)
			}
		}
	}
	waitBudget(t, ns, "web", policyv1alpha1.PodUnavailableBudgetStatus{TotalReplicas: 3, DesiredAvailable: 2, CurrentAvailable: 3, UnavailableAllowed: 1})
	if err := matrixDisruptions["delete"].do(ctx, ns, pods[0]); err != nil {
		t.Fatal(err)
	}
	if err := matrixDisruptions["delete"].do(ctx, ns, pods[1]); !apierrors.IsForbidden(err) {
		t.Errorf("a second delete: %v, want 403", err)
	}
}

// livePods lists the pods matching selector that are not being deleted,
// by name.
func livePods(t *testing.T, ns, selector string) []corev1.Pod {
	t.Helper()
	list, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	var live []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	sort.Slice(live, func(i, j int) bool { return live[i].Name < live[j].Name })
	return live
}

// readPod reads a pod from the API server, nil once it is gone.
func readPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	pod, err := client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return pod
}
