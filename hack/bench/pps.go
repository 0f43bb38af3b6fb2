package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
)

// ppsBench creates n StatefulSet-named pods, inFlight at a time, for a
// StatefulSet whose PersistentPodState records n pods and for one without
// any, and prints the creation latency side by side: as the client sees
// it and as the placement injector measures itself.
func (b *bench) ppsBench(ctx context.Context, implementation string) error {
	n, inFlight := b.o.ppsRecords, b.o.inFlight
	ns, err := b.namespace(ctx, "bench-pps")
	if err != nil {
		return err
	}
	owners := map[string]*appsv1.StatefulSet{}
	for _, name := range []string{"recorded", "unrecorded"} {
		// No replicas: the pods are the benchmark's, not the StatefulSet
		// controller's (it deletes them afterwards).
		sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](0), ServiceName: name, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}}}}}
		if err := b.k8s.Create(ctx, sts); err != nil {
			return err
		}
		owners[name] = sts
	}
	pps := &appsv1alpha1.PersistentPodState{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "recorded"}, Spec: appsv1alpha1.PersistentPodStateSpec{
		TargetReference:                   appsv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "recorded"},
		RequiredPersistentTopology:        &appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{corev1.LabelTopologyZone}},
		PreferredPersistentTopology:       []appsv1alpha1.PreferredTopologyTerm{{Weight: 100, Preference: appsv1alpha1.NodeTopologyTerm{NodeTopologyKeys: []string{corev1.LabelHostname}}}},
		PersistentPodStateRetentionPolicy: appsv1alpha1.PersistentPodStateRetentionPolicyWhenDeleted,
	}}
	if err := b.k8s.Create(ctx, pps); err != nil {
		return err
	}
	// The records, as the controller would have written them for pods
	// that ran before (it keeps them: WhenDeleted, and no pods yet).
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if err := b.k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(pps), pps); err != nil {
			return err
		}
		pps.Status.PodStates = map[string]appsv1alpha1.PodState{}
		for i := 0; i < n; i++ {
			node := fmt.Sprintf("kwok-node-%d", i%len(b.c.NodeNames))
			pps.Status.PodStates[fmt.Sprintf("recorded-%d", i)] = appsv1alpha1.PodState{NodeName: node,
				NodeTopologyLabels: map[string]string{corev1.LabelTopologyZone: fmt.Sprintf("zone-%c", 'a'+i%3), corev1.LabelHostname: node}}
		}
		return b.k8s.Status().Update(ctx, pps)
	})
	if err != nil {
		return err
	}
	fmt.Printf("pps: creating %d pods with a record each and %d without, %d in flight\n", n, n, inFlight)
	lifeline := b.kruise == nil
	injections := func() (reading, error) {
		if !lifeline {
			return reading{}, nil
		}
		return histogram(b.l.MetricsURL, "lifeline_pps_injection_duration_seconds")
	}
	for _, name := range []string{"unrecorded", "recorded"} {
		before, err := injections()
		if err != nil {
			return err
		}
		var mu sync.Mutex
		var latencies []time.Duration
		sts := owners[name]
		err = parallel(n, inFlight, func(i int) error {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", name, i), Labels: map[string]string{"bench": name},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name, UID: sts.UID, Controller: ptr.To(true)}}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1.27"}}}}
			t0 := time.Now()
			_, err := b.client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			mu.Lock()
			latencies = append(latencies, time.Since(t0))
			mu.Unlock()
			return err
		})
		if err != nil {
			return err
		}
		after, err := injections()
		if err != nil {
			return err
		}
		b.report.Placements = append(b.report.Placements, placements{Implementation: implementation, Run: name, Pods: n,
			ClientP50Ms: percentileMs(latencies, 0.5), ClientP99Ms: percentileMs(latencies, 0.99),
			InjectorP50Ms: 1000 * quantile(before, after, 0.5), InjectorP99Ms: 1000 * quantile(before, after, 0.99)})
	}
	got := &corev1.Pod{}
	if err := b.k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "recorded-0"}, got); err != nil {
		return err
	}
	if got.Annotations[appsv1alpha1.InjectedPersistentPodStateKey] != "recorded" {
		return fmt.Errorf("recorded-0 was created without its placement (%s)", implementation)
	}
	return b.dropNamespace(ctx, ns)
}

// placements are one run of pod creations under a PersistentPodState.
type placements struct {
	Implementation string  `json:"implementation"`
	Run            string  `json:"run"` // recorded, unrecorded
	Pods           int     `json:"pods"`
	ClientP50Ms    float64 `json:"client_p50_ms"`
	ClientP99Ms    float64 `json:"client_p99_ms"`
	InjectorP50Ms  float64 `json:"injector_p50_ms,omitempty"`
	InjectorP99Ms  float64 `json:"injector_p99_ms,omitempty"`
}
