package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	appsv1alpha1 "github.com/lifeline-k8s/lifeline/api/apps/v1alpha1"
	"github.com/lifeline-k8s/lifeline/hack/cluster"
)

// ppsBench creates n StatefulSet-named pods, inFlight at a time, for a
// StatefulSet whose PersistentPodState records n pods and for one without
// any, and prints the creation latency side by side: as the client sees
// it and as the placement injector measures itself.
func (b *bench) ppsBench(ctx context.Context, l *cluster.Lifeline, n, inFlight int) error {
	ns := "bench-pps"
	if _, err := b.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := cluster.WaitForServiceAccount(ctx, b.client, ns); err != nil {
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
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
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
	type run struct {
		name     string
		p50, p99 time.Duration
		inj      [2]float64
	}
	var runs []run
	for _, name := range []string{"unrecorded", "recorded"} {
		before, err := histogram(l.MetricsURL, "lifeline_pps_injection_duration_seconds")
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
		after, err := histogram(l.MetricsURL, "lifeline_pps_injection_duration_seconds")
		if err != nil {
			return err
		}
		slices.Sort(latencies)
		at := func(q float64) time.Duration { return latencies[min(len(latencies)-1, int(q*float64(len(latencies))))] }
		runs = append(runs, run{name: name, p50: at(0.5), p99: at(0.99), inj: [2]float64{quantile(before, after, 0.5), quantile(before, after, 0.99)}})
	}
	got := &corev1.Pod{}
	if err := b.k8s.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "recorded-0"}, got); err == nil && got.Annotations[appsv1alpha1.InjectedPersistentPodStateKey] != "recorded" {
		return fmt.Errorf("recorded-0 was created without its placement")
	}
	fmt.Println()
	fmt.Printf("Pod creation under a PersistentPodState of %d records, %d in flight (target: injector p99 in the webhook):\n", n, inFlight)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pods\tcreated\tclient p50 ms\tclient p99 ms\tinjector p50 ms\tinjector p99 ms\t")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.3f\t%.3f\t\n", r.name, n, ms(r.p50), ms(r.p99), r.inj[0]*1000, r.inj[1]*1000)
	}
	tw.Flush()
	fmt.Println("  (client latency is the whole CREATE at the API server, the pod webhook included; the injector's is measured")
	fmt.Println("  in the manager: finding the PersistentPodState, its record and placing the pod)")
	return nil
}
