package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// TestAdvancedStatefulSetAdoptsOrphans: a native StatefulSet deleted with
// --cascade=orphan leaves its pods; an Advanced StatefulSet of the same
// name and selector adopts them (the same pods, by UID, now controlled by
// it, as an independent watch sees) and runs them on.
func TestAdvancedStatefulSetAdoptsOrphans(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	log := logPods(t, ns)
	native := statefulSet(ns, "db", 2)
	create(t, native)
	eventually(t, time.Minute, "the native StatefulSet's pods Ready", func(ctx context.Context) (bool, string, error) {
		err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(native), native)
		return err == nil && native.Status.ReadyReplicas == 2, fmt.Sprintf("%+v %v", native.Status, err), nil
	})
	if err := k8s.Delete(ctx, native, ctrlclient.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
		t.Fatal(err)
	}
	uids := map[string]string{}
	eventually(t, time.Minute, "the pods orphaned", func(ctx context.Context) (bool, string, error) {
		err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(native), &appsv1.StatefulSet{})
		pods := stsPods(t, ns)
		for _, p := range pods {
			if metav1.GetControllerOf(&p) != nil {
				return false, p.Name + " still owned", nil
			}
			uids[p.Name] = string(p.UID)
		}
		return apierrors.IsNotFound(err) && len(pods) == 2, fmt.Sprintf("%d pods, %v", len(pods), err), nil
	})

	set := newAdvancedStatefulSet(ns, "db", 2, appsv1.ParallelPodManagement)
	set.Spec.Template = native.Spec.Template
	if err := k8s.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	waitAdvancedStatefulSet(t, set, "2 pods Ready", stsSettled(2))
	adopted := map[string]bool{}
	for _, ev := range log.all() {
		if ref := metav1.GetControllerOf(ev.pod); ref != nil && ref.UID == set.UID && uids[ev.pod.Name] == string(ev.pod.UID) {
			adopted[ev.pod.Name] = true
		}
	}
	if !adopted["db-0"] || !adopted["db-1"] {
		t.Fatalf("adopted %v; want db-0 and db-1, the orphans %v", adopted, uids)
	}
}

// TestAdvancedStatefulSetRepairsIdentityLabels: a pod whose identity
// labels someone removed or changed gets them back, the same pod.
func TestAdvancedStatefulSetRepairsIdentityLabels(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	set := newAdvancedStatefulSet(ns, "db", 1, appsv1.ParallelPodManagement)
	if err := k8s.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	waitAdvancedStatefulSet(t, set, "1 pod Ready", stsSettled(1))
	before, err := client.CoreV1().Pods(ns).Get(ctx, "db-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"metadata":{"labels":{"statefulset.kubernetes.io/pod-name":null,"apps.kubernetes.io/pod-index":"9"}}}`)
	if _, err := client.CoreV1().Pods(ns).Patch(ctx, "db-0", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "db-0's identity labels back", func(ctx context.Context) (bool, string, error) {
		pod, err := client.CoreV1().Pods(ns).Get(ctx, "db-0", metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		return pod.UID == before.UID && pod.Labels["statefulset.kubernetes.io/pod-name"] == "db-0" && pod.Labels["apps.kubernetes.io/pod-index"] == "0",
			fmt.Sprintf("%s %v", pod.UID, pod.Labels), nil
	})
}
